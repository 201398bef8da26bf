"""One annotator's items (``store.items``): every item assigned to them or labelled, skipped or flagged
by them, with its status for them, filtered by kind, batch, status, day and words, a page at a time.

An item is the annotator's when they have an assignment for it (open or finished) or a live event
on it (an imported label may have no assignment). Its status is their live event's (``label`` is
*done*, ``skip`` *skipped*, ``flag`` *flagged*), else *open* while the assignment is; an item whose
label was withdrawn and which is no longer open is not listed. Every query names the annotator: no
method here reads another annotator's assignments or events.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefkit.curation.store.common import folded, search_text
from prefkit.curation.store.engine import StoreArea, StoreCore
from prefkit.curation.store.labels import Labels
from prefkit.schemas.curation import AnnotationTask, LabelEvent
from sqlalchemy import case, func, literal, or_, select, union

#: The statuses of an annotator's item, in the order the filter offers them.
ITEM_STATUSES = ("open", "done", "skipped", "flagged")


@dataclass(frozen=True)
class AnnotatorItem:
    """One of an annotator's items: the task, its status for them, their live event (None while the
    item is open), and, while open, its place in their queue (``shown``: it is the one on screen)."""

    task: AnnotationTask
    status: str
    event: LabelEvent | None
    position: int | None
    shown: bool


def _like(term: str) -> str:
    """``term`` as a LIKE pattern matching it anywhere, its own ``%``, ``_`` and ``\\`` taken as text."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Items(StoreArea):
    """The annotator's list of their items (the app's *My items*)."""

    def __init__(self, core: StoreCore, labels: Labels):
        super().__init__(core)
        self.labels = labels

    def _listing(self, annotator: str):
        """Every item of ``annotator`` with its status, queue place and live event (a subquery). Their
        latest event per item is one pass over the index on (annotator, task_id), computed once
        (``MATERIALIZED``: never again per row); the rest are primary-key probes per item."""
        a, e, t = self.t["assignments"], self.t["label_events"], self.t["tasks"]
        latest = (
            select(e.c.task_id, func.max(e.c.seq).label("seq"))
            .where(e.c.annotator == annotator)
            .group_by(e.c.task_id)
            .cte("latest")
            .prefix_with("MATERIALIZED")
        )
        mine = (
            union(select(a.c.task_id).where(a.c.annotator == annotator), select(latest.c.task_id))
            .cte("mine")
            .prefix_with("MATERIALIZED")
        )
        ev = e.alias("live")
        live = ev.c.action != "withdraw"
        status = case(
            (ev.c.action == "label", literal("done")),
            (ev.c.action == "skip", literal("skipped")),
            (ev.c.action == "flag", literal("flagged")),
            ((a.c.task_id.is_not(None)) & (a.c.done_at.is_(None)), literal("open")),
            else_=literal(None),
        )
        return (
            select(
                t,
                status.label("status"),
                case((live, ev.c.event_id)).label("live_event_id"),
                case((live, ev.c.seq)).label("live_seq"),
                case((live, ev.c.comment)).label("live_comment"),
                case((live, ev.c.created_at)).label("live_at"),
                a.c.position.label("queue_position"),
                a.c.event_id.label("pending_event_id"),
            )
            .join_from(mine, t, t.c.task_id == mine.c.task_id)
            .outerjoin(latest, latest.c.task_id == mine.c.task_id)
            .outerjoin(ev, ev.c.seq == latest.c.seq)
            .outerjoin(a, (a.c.task_id == t.c.task_id) & (a.c.annotator == annotator))
            .subquery()
        )

    def _where(self, li, kind, batch, statuses, search, since, until) -> list:
        where = [li.c.status.in_(statuses)]
        if kind:
            where.append(li.c.kind == kind)
        if batch:
            where.append(li.c.batch_id == batch)
        if since:
            where.append(li.c.live_at >= since)
        if until:
            where.append(li.c.live_at < until)
        if search:
            # tasks.search_text holds the id, reference and text folded (NFKC, case-folded: the same
            # on SQLite and PostgreSQL, every script); a comment is confirmed by the caller. A task
            # written without it (by hand, before migration 25) is narrowed by its JSON, as before.
            words = _like(folded(search))
            where.append(
                or_(
                    li.c.search_text.like(words, escape="\\"),
                    li.c.search_text.is_(None) & li.c.payload_json.ilike(_like(search), escape="\\"),
                    li.c.live_comment.is_not(None),
                )
            )
        return where

    @staticmethod
    def _order(li) -> tuple:
        """Open items first in queue order, then the newest live event first."""
        is_open = li.c.status == "open"
        return case((is_open, 0), else_=1), case((is_open, li.c.queue_position)), li.c.live_seq.desc()

    def items_of(
        self,
        annotator: str,
        *,
        kind: str | None = None,
        batch: str | None = None,
        statuses: tuple[str, ...] = ITEM_STATUSES,
        search: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> tuple[list[AnnotatorItem], int]:
        """A page of ``annotator``'s items (open ones first in queue order, then the newest event
        first) and how many match in all. ``search``: words found (case and width aside, in every
        script: NFKC and case-folded) in the item's id, its
        reference, its stored text or the annotator's comment (:meth:`search_text` gives what a
        caller needs to confirm a text match); ``since``/``until``: the live event made in
        ``[since, until)`` (ISO prefixes, as text)."""
        li = self._listing(annotator)
        where = self._where(li, kind, batch, statuses, search, since, until)
        # The order and the count on narrow rows (a window count: the listing is read once); the
        # page's items are read whole afterwards, so the sort never carries every item's text.
        page = select(li.c.task_id, func.count().over().label("n_matching")).where(*where)
        page = page.order_by(*self._order(li)).offset(offset)
        if limit is not None:
            page = page.limit(limit)
        with self.read() as conn:
            rows = conn.execute(page).all()
            if rows:
                total = int(rows[0][1])
            else:  # past the last page (or nothing matches): counted on its own
                count = select(func.count()).select_from(select(li.c.task_id).where(*where).subquery())
                total = int(conn.execute(count).scalar_one())
        return self.items_by_id(annotator, [r[0] for r in rows]), total

    def search_text(
        self,
        annotator: str,
        search: str,
        *,
        kind: str | None = None,
        batch: str | None = None,
        statuses: tuple[str, ...] = ITEM_STATUSES,
        since: str | None = None,
        until: str | None = None,
    ) -> list[tuple[str, str, str | None]]:
        """Every item of ``annotator`` the filters and ``search`` may find, in list order: ``(task id,
        its searched text (folded: :func:`search_text`), the annotator's comment)``, for the caller to
        confirm the words and read its page with :meth:`items_by_id`."""
        li = self._listing(annotator)
        where = self._where(li, kind, batch, statuses, search, since, until)
        q = select(li.c.task_id, li.c.search_text, li.c.item_ref, li.c.payload_json, li.c.live_comment)
        rows = self.fetch_tuples(q.where(*where).order_by(*self._order(li)))
        return [
            (r[0], r[1] if r[1] is not None else search_text(r[0], r[2], self.loads(r[3])), r[4])
            for r in rows
        ]

    def items_by_id(self, annotator: str, task_ids: list[str]) -> list[AnnotatorItem]:
        """``annotator``'s items of ``task_ids``, in that order (one not theirs is left out)."""
        if not task_ids:
            return []
        li = self._listing(annotator)
        with self.read() as conn:
            rows = conn.execute(select(li).where(li.c.task_id.in_(task_ids))).mappings().all()
            events = self._events(conn, annotator, [r["live_event_id"] for r in rows if r["live_event_id"]])
        found = {r["task_id"]: self._item(r, events) for r in rows if r["status"] is not None}
        return [found[t] for t in task_ids if t in found]

    def _events(self, conn, annotator: str, event_ids: list[str]) -> dict[str, LabelEvent]:
        if not event_ids:
            return {}
        e = self.t["label_events"]
        rows = conn.execute(select(e).where(e.c.event_id.in_(event_ids), e.c.annotator == annotator))
        return {r["event_id"]: self.labels._event_from_row(r) for r in rows.mappings()}

    def _item(self, row, events: dict[str, LabelEvent]) -> AnnotatorItem:
        open_ = row["status"] == "open"
        return AnnotatorItem(
            self.labels._task_from_row(row),
            row["status"],
            events.get(row["live_event_id"]) if row["live_event_id"] else None,
            row["queue_position"] if open_ else None,
            open_ and row["pending_event_id"] is not None,
        )

    def batches_of(self, annotator: str) -> list[str]:
        """The batches ``annotator`` has items in (for the batch filter), sorted."""
        li = self._listing(annotator)
        q = select(li.c.batch_id).where(li.c.status.is_not(None)).distinct().order_by(li.c.batch_id)
        return [r[0] for r in self.fetch_tuples(q)]
