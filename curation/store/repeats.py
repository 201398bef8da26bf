"""Repeats (``store.repeats``): items an annotator labelled, shown to them again unmarked, and their
second answers (``prefkit agreement --within``). Never label events: nothing that reads the label log
(votes, edits, live labels, overlap, progress, completion, cost) sees them. The table's key (task,
annotator) allows one repeat per annotator and item, whoever writes it, on either backend."""

from __future__ import annotations

import hashlib
import math
import uuid
from dataclasses import dataclass

from prefkit.curation.store.engine import StoreArea
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import LabelEvent
from sqlalchemy import Connection, exists, func, select, update

#: The columns of an answer (a repeat's row holds one once answered; NULL ``action`` while open).
ANSWER = ("action", "values_json", "comment", "time_spent_s", "source", "created_at")


def repeat_draw(annotator: str, kind: str, item_ref: str) -> float:
    """A stable number in [0, 1) per (annotator, kind, item), salted apart from the suggestions' arm draw."""
    digest = hashlib.sha256(f"repeat\x1f{annotator}\x1f{kind}\x1f{item_ref}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True, slots=True)
class RepeatRule:
    """``share`` of labelled items come back: first answered before the UTC day ``today`` (or ``any_day``)."""

    share: float
    today: str
    any_day: bool = False


class Repeats(StoreArea):
    """Repeat showings and their answers (the ``repeats`` table)."""

    def open_query(self, annotator: str, kind: str):
        """The annotator's open repeat of ``kind`` with its task's columns (it comes before their queue)."""
        r, t = self.t["repeats"], self.t["tasks"]
        q = select(r.c.event_id, r.c.shown_at, *t.c).join_from(r, t, t.c.task_id == r.c.task_id)
        return q.where(r.c.annotator == annotator, r.c.kind == kind, r.c.action.is_(None))

    def offer(self, conn: Connection, annotator: str, kind: str, rule: RepeatRule) -> bool:
        """In the caller's transaction: open the annotator's next repeat of ``kind`` if one is due (fewer
        than ``share`` of their first labels of non-gold items, none open, their last item no repeat): the
        lowest :func:`repeat_draw` of their labelled items but the last, first labelled before ``today``."""
        e, r, t = self.t["label_events"], self.t["repeats"], self.t["tasks"]
        mine = (r.c.annotator == annotator) & (r.c.kind == kind)
        firsts = (
            select(e.c.task_id, t.c.item_ref)
            .join_from(e, t, t.c.task_id == e.c.task_id)
            .where(e.c.annotator == annotator, e.c.kind == kind, e.c.supersedes.is_(None))
            .where(e.c.action == "label", t.c.is_gold.is_(False))
        )
        gold = select(t.c.task_id).where(t.c.kind == kind, t.c.is_gold.is_(True))  # few: no join per label
        labelled = (
            select(func.count())
            .where(e.c.annotator == annotator, e.c.kind == kind, e.c.supersedes.is_(None))
            .where(e.c.action == "label", e.c.task_id.not_in(gold))
            .scalar_subquery()
        )
        counts = select(labelled, func.count(), func.count(r.c.action), func.max(r.c.created_at)).where(mine)
        n_labelled, n, answered, last_repeat = conn.execute(counts).one()  # one round trip when none is due
        if n >= math.floor(rule.share * n_labelled) or n > answered:
            return False
        latest = select(e.c.task_id, e.c.created_at).where(e.c.annotator == annotator, e.c.kind == kind)
        last = conn.execute(latest.order_by(e.c.seq.desc()).limit(1)).one()
        if last_repeat is not None and last_repeat >= last.created_at:
            return False
        q = firsts.where(e.c.task_id != last.task_id, ~exists().where(mine, r.c.task_id == e.c.task_id))
        if not rule.any_day:
            q = q.where(e.c.created_at < rule.today)
            # nothing of theirs from before today: one probe of the (annotator, created_at) index, where
            # listing the labels to find none read them all (~90 ms at 15,000 labels)
            before = select(e.c.seq).where(e.c.annotator == annotator, e.c.created_at < rule.today)
            if conn.execute(before.limit(1)).first() is None:
                return False
        left = [(repeat_draw(annotator, kind, ref), task_id) for task_id, ref in conn.execute(q)]
        if not left:
            return False
        new = {"task_id": min(left)[1], "event_id": "ev_" + uuid.uuid4().hex, "shown_at": utcnow()}
        conn.execute(r.insert(), {**new, "annotator": annotator, "kind": kind, "source": "app"})
        return True

    def _row(self, ev: LabelEvent) -> dict:
        """``ev``'s answer as the row's columns: values make it a label, none a pass (a skip or flag)."""
        answer = ("label" if ev.values else "pass", self.dumps(ev.values), ev.comment, ev.time_spent_s)
        return dict(zip(ANSWER, (*answer, ev.source, ev.created_at), strict=True))

    def answer(self, conn: Connection, ev: LabelEvent) -> bool | None:
        """In the caller's transaction: ``ev`` (``action="repeat"``) answers the open repeat shown with
        its ``event_id``: True; False when that answer is recorded already; None for any other."""
        r = self.t["repeats"]
        mine = (r.c.event_id == ev.event_id) & (r.c.annotator == ev.annotator) & (r.c.task_id == ev.task_id)
        if conn.execute(update(r).where(mine, r.c.action.is_(None)).values(self._row(ev))).rowcount:
            return True
        had = conn.execute(select(r.c.values_json, r.c.comment).where(mine, r.c.action.is_not(None))).first()
        return False if had and (self.loads(had[0]), had[1]) == (ev.values, ev.comment) else None

    def add(self, conn: Connection, events: list[LabelEvent]) -> int:
        """In the caller's transaction: imported repeats (one answers an open showing; an answer stays)."""
        r, stmt = self.t["repeats"], self.insert_stmt("repeats")
        set_ = {c: stmt.excluded[c] for c in ANSWER}
        stmt = stmt.on_conflict_do_update(
            index_elements=["task_id", "annotator"], set_=set_, where=r.c.action.is_(None)
        )
        written = 0
        for ev in events:
            row = {k: getattr(ev, k) for k in ("task_id", "annotator", "kind", "event_id")} | self._row(ev)
            written += (
                conn.execute(stmt.returning(r.c.task_id), row | {"shown_at": ev.created_at}).first()
                is not None
            )
        return written

    def _event(self, row) -> LabelEvent:
        keep = ("event_id", "task_id", "kind", "annotator", "comment", "time_spent_s", "source", "created_at")
        return LabelEvent(**{k: row[k] for k in keep}, action="repeat", values=self.loads(row["values_json"]))

    def events(self, kind: str | None = None) -> list[LabelEvent]:
        """Every repeat answered with a label (``action="repeat"``), oldest first."""
        r = self.t["repeats"]
        q = select(r).where(r.c.action == "label").order_by(r.c.created_at, r.c.task_id, r.c.annotator)
        q = q.where(r.c.kind == kind) if kind else q
        return [self._event(row) for row in self.fetch(q)]
