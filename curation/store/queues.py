"""Queues area of the project store (``store.queues``): each annotator's persisted queue, submits,
stale assignments given back, progress reads.

An annotator's queue is the ``assignments`` rows of that annotator in ``position`` order; a row is
open until ``done_at`` is set, which happens in the same transaction that records the label, skip or
flag. The pending submit's ``event_id`` is written on the row when the item is first shown, so a
reload, a second tab or a server restart shows the same item with the same idempotency key.

Every query of the submit → next-item path is an index range scan (see ``queue_query_plans``).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from prefkit.curation.store.backend import explain_prefix
from prefkit.curation.store.engine import StoreArea, StoreCore
from prefkit.curation.store.labels import FINISHING, Labels
from prefkit.curation.store.sessions import holds
from prefkit.schemas.common import PrefkitError, utcnow
from prefkit.schemas.curation import AnnotationTask, LabelEvent
from sqlalchemy import Connection, case, delete, exists, func, select, text, true, update


def _version(values: Any) -> tuple[int, int, int]:
    """A queue's version (last event, assignment and release seq; 0 for none) from three columns."""
    a, b, c = (int(v or 0) for v in values)
    return a, b, c


def new_event_id() -> str:
    return "ev_" + uuid.uuid4().hex


def interleave(regular: list[str], gold: list[str], seed: str) -> list[str]:
    """Regular tasks in order with the gold tasks placed at seeded random positions."""
    rng = random.Random(seed + ":" + ",".join(regular[:1] + gold))
    order = list(regular)
    for tid in gold:
        order.insert(rng.randint(0, len(order)), tid)
    return order


@dataclass(frozen=True, slots=True)
class BatchCounts:
    """One batch of an annotator's queue: items assigned to them and done."""

    batch_id: str
    assigned: int
    done: int


@dataclass(frozen=True, slots=True)
class KindCounts:
    """An annotator's counts for one task kind: assigned, done, first submits today, per batch."""

    assigned: int = 0
    done: int = 0
    today: int = 0
    batches: tuple[BatchCounts, ...] = ()


@dataclass(frozen=True, slots=True)
class OpenItem:
    """An annotator's open item: its task, its place in their queue and, once shown, the pending
    event id its submit will carry (None until then)."""

    task: AnnotationTask
    position: int
    event_id: str | None
    shown_at: str | None


@dataclass(frozen=True, slots=True)
class QueueView:
    """What the Annotate page reads on every run: may the account still act, its open item of the
    kind (None when there is none) and the queue's version (see ``Queues.queue_version``)."""

    active: bool
    item: OpenItem | None
    version: tuple[int, int, int]
    draft: str | None = None  # the open showing's saved form state (JSON), when there is one


@dataclass(frozen=True, slots=True)
class EventBrief:
    """One of an annotator's events with the batch of its assignment (None: no assignment)."""

    seq: int
    kind: str
    action: str
    supersedes: str | None
    source: str
    created_at: str
    batch_id: str | None


@dataclass(frozen=True, slots=True)
class IdleQueue:
    """An annotator's queue of a kind holding open items, and when it last showed one."""

    annotator: str
    kind: str
    open_items: int
    last_seen: str
    by_batch: tuple[tuple[str, int], ...]  # its open items per batch


@dataclass(frozen=True, slots=True)
class OverlapRange:
    """Per (kind, batch): the annotators per item now (``low``..``high``) and the adaptive bounds (None: fixed)."""

    kind: str
    batch_id: str
    low: int
    high: int
    min: int | None
    max: int | None


@dataclass(frozen=True, slots=True)
class ReleasedAssignment:
    """An open assignment given back to the pool just now."""

    annotator: str
    kind: str
    task_id: str


@dataclass(frozen=True, slots=True)
class AssignmentRelease:
    """A row of the log of assignments given back to the pool."""

    seq: int
    task_id: str
    annotator: str
    kind: str
    assigned_at: str
    shown_at: str | None
    reason: str
    released_at: str


@dataclass(frozen=True, slots=True)
class ProgressRow:
    """Per (annotator, kind): assigned, done, first labels/skips/flags/withdrawals, mean seconds per label."""

    annotator: str
    task_kind: str
    assigned: int = 0
    done: int = 0
    labels: int = 0
    skips: int = 0
    flags: int = 0
    withdraws: int = 0
    mean_time_s: float | None = None


@dataclass(frozen=True, slots=True)
class TaskSummary:
    """Per (kind, batch): tasks, gold tasks, assigned slots, tasks with all their labels."""

    kind: str
    batch_id: str
    tasks: int
    gold: int
    assigned: int
    complete: int


@dataclass(frozen=True, slots=True)
class TaskTarget:
    """A task's overlap as the adaptive rule reads it, with the row locked: its current target, its
    bounds (None: fixed overlap), whether it is an audit item and how many holders are still open."""

    task_id: str
    kind: str
    overlap: int
    overlap_min: int | None
    overlap_max: int | None
    audit: bool
    open: int


class AccountInactive(PrefkitError):
    """A signed-in session's write for an account disabled (or removed) since it signed in."""


class SessionEnded(AccountInactive):
    """A signed-in session's write after that session ended: signed out (in any tab or window),
    expired, revoked (``prefkit users disable`` or ``password``) or its account disabled."""


class StaleSubmit(PrefkitError):
    """A submit for a showing of an item that is no longer the annotator's open one: the item was
    finished with another answer (in another tab or window) or is open again under a new showing.
    Nothing is written; the message says what happened in words an annotator reads."""


class Queues(StoreArea):
    """Queue and submit operations the annotation app calls on every item. Submits append to the
    label log through the labels area, in the same transaction that closes the assignment."""

    def __init__(self, core: StoreCore, labels: Labels):
        super().__init__(core)
        self.labels = labels

    # -- the open item ------------------------------------------------------------------------------
    def _open_batch(self, batch_id):
        """True for a batch that is not closed: a closed batch's items stay assigned but leave the
        queue until it reopens. A correlated primary-key probe, so the queue's index order is kept
        and LIMIT stops early (and no separate query for the closed batches)."""
        b = self.t["batches"]
        return ~exists().where(b.c.batch_id == batch_id, b.c.status == "closed")

    def _open_query(self, annotator: str, kind: str):
        """The annotator's first open item of ``kind`` with its task's columns."""
        a, t = self.t["assignments"], self.t["tasks"]
        return (
            select(a.c.position, a.c.event_id, a.c.shown_at, *t.c)
            .join_from(a, t, t.c.task_id == a.c.task_id)
            .where(a.c.annotator == annotator, a.c.kind == kind, a.c.done_at.is_(None))
            .where(self._open_batch(a.c.batch_id))
            .order_by(a.c.position)
            .limit(1)
        )

    def _open_row(self, conn: Connection, annotator: str, kind: str) -> OpenItem | None:
        row = conn.execute(self._open_query(annotator, kind)).mappings().first()
        return None if row is None else self._item(row)

    def _item(self, row) -> OpenItem:
        """An open item from an assignment row joined with its task's columns."""
        return OpenItem(self.labels._task_from_row(row), row["position"], row["event_id"], row["shown_at"])

    def open_item(self, annotator: str, kind: str) -> OpenItem | None:
        """The annotator's first open item of ``kind`` with its task's columns, as it is (its
        ``event_id`` is None until it is shown); None when nothing is open. One statement, no locks."""
        return self.read_retrying(lambda conn: self._open_row(conn, annotator, kind))

    def open_assignment(
        self,
        annotator: str,
        kind: str,
        chunk: int,
        n_gold: int,
        stale_before: str | None = None,
        batch: str | None = None,
    ) -> OpenItem | None:
        """The annotator's current item of ``kind`` with its task's columns (assigning a new chunk
        when the queue is empty), marked as shown with its pending event id; ``None`` when nothing is
        left to do. Before a new chunk is picked, other annotators' items idle since ``stale_before``
        go back to the pool. With ``batch``, a new chunk comes from that batch only (a crowd study's
        participants work on the study's batch). A write transaction: call :meth:`open_item` first, which is one read
        and usually finds the item already shown. Idempotent, so a dropped connection or a deadlock
        just runs it again."""
        return self.retrying(
            lambda: self._open_assignment(annotator, kind, chunk, n_gold, stale_before, batch)
        )

    def _open_assignment(
        self, annotator: str, kind: str, chunk: int, n_gold: int, stale_before: str | None, batch: str | None
    ) -> OpenItem | None:
        with self.write() as conn:
            # One annotator's queue changes in one transaction at a time, whichever replica serves
            # them (two tabs must not each pull a chunk); other annotators' pulls go on in parallel.
            self.lock(conn, f"queue:{annotator}")
            row = self._open_row(conn, annotator, kind)
            if row is None:
                if stale_before is not None:
                    self._release_stale(conn, stale_before, kind)
                if not self._assign_chunk(conn, annotator, kind, chunk, n_gold, batch):
                    return None
                row = self._open_row(conn, annotator, kind)
                if row is None:  # the chunk just assigned is open in this transaction
                    return None
            if not row.event_id:
                row = replace(row, event_id=new_event_id(), shown_at=utcnow())
                a = self.t["assignments"]
                conn.execute(
                    update(a)
                    .where(a.c.task_id == row.task.task_id, a.c.annotator == annotator)
                    .values(event_id=row.event_id, shown_at=row.shown_at)
                )
        return row

    def annotator_view(self, annotator: str, kind: str, session_id: str | None = None) -> QueueView:
        """What the Annotate page needs on every run, in one statement. An unknown account is not
        active; with ``session_id``, neither is one whose sign-in session ended (signed out, expired,
        revoked): checked in the same statement."""
        a, u = self.t["assignments"], self.t["users"]
        e, r, d = self.t["label_events"], self.t["assignment_releases"], self.t["drafts"]
        item = self._open_query(annotator, kind).subquery()
        draft = (
            select(d.c.state_json)
            .where(d.c.annotator == annotator, d.c.task_id == item.c.task_id, d.c.event_id == item.c.event_id)
            .scalar_subquery()
        )
        q = (
            select(
                u.c.active,
                select(func.max(e.c.seq)).where(e.c.annotator == annotator).scalar_subquery(),
                select(func.max(a.c.position)).where(a.c.annotator == annotator).scalar_subquery(),
                select(func.max(r.c.seq)).where(r.c.annotator == annotator).scalar_subquery(),
                draft,
                *item.c,
            )
            .select_from(u.outerjoin(item, true()))
            .where(u.c.username == annotator)
        )
        if session_id is not None:
            q = q.where(holds(self.t, session_id, annotator, utcnow()))
        found = self.read_retrying(lambda conn: conn.execute(q).first())
        if found is None or not found[0]:
            version = (0, 0, 0) if found is None else _version(found[1:4])
            return QueueView(False, None, version)
        row = dict(zip(item.c.keys(), found[5:], strict=True))
        version = _version(found[1:4])
        return QueueView(True, None if row["task_id"] is None else self._item(row), version, found[4])

    # -- drafts -------------------------------------------------------------------------------------
    def save_draft(self, annotator: str, task_id: str, event_id: str, state_json: str) -> bool:
        """Keep the form state of the showing ``event_id`` of an annotator's open item (one row per
        annotator and task, replaced). Never a label: nothing reads drafts but the app's next run.
        False, with nothing written, unless ``event_id`` is that annotator's open assignment of
        ``task_id`` as shown now (checked in the write's transaction: another annotator's item, a
        submitted or re-shown one has no draft)."""
        stmt = self.insert_stmt("drafts")
        stmt = stmt.on_conflict_do_update(
            index_elements=["annotator", "task_id"],
            set_={"event_id": stmt.excluded.event_id, "state_json": stmt.excluded.state_json,
                  "updated_at": stmt.excluded.updated_at},
        )  # fmt: skip
        row = {"annotator": annotator, "task_id": task_id, "event_id": event_id, "state_json": state_json,
               "updated_at": utcnow()}  # fmt: skip
        a = self.t["assignments"]
        showing = select(a.c.task_id).where(
            a.c.annotator == annotator,
            a.c.task_id == task_id,
            a.c.event_id == event_id,
            a.c.done_at.is_(None),
        )
        return self.retrying(lambda: self._write_if(showing, stmt, row))

    def _write_if(self, condition, stmt, row: dict[str, Any]) -> bool:
        with self.write() as conn:
            if conn.execute(condition).first() is None:
                return False
            conn.execute(stmt, row)
            return True

    def draft(self, annotator: str, task_id: str) -> tuple[str, str] | None:
        """``(event_id, state_json)`` of the annotator's draft of ``task_id``, or None."""
        d = self.t["drafts"]
        q = select(d.c.event_id, d.c.state_json).where(d.c.annotator == annotator, d.c.task_id == task_id)
        found = self.read_retrying(lambda conn: conn.execute(q).first())
        return None if found is None else (found[0], found[1])

    def events_after(self, annotator: str, seq: int) -> list[EventBrief]:
        """The annotator's events after ``seq`` with the batch of their assignment (an index range:
        the app updates its counts from these instead of counting everything again)."""
        e, a = self.t["label_events"], self.t["assignments"]
        q = (
            select(e.c.seq, e.c.kind, e.c.action, e.c.supersedes, e.c.source, e.c.created_at, a.c.batch_id)
            .join_from(e, a, (a.c.task_id == e.c.task_id) & (a.c.annotator == e.c.annotator), isouter=True)
            .where(e.c.annotator == annotator, e.c.seq > seq)
            .order_by(e.c.seq)
        )
        return self.read_retrying(lambda conn: [EventBrief(*x) for x in conn.execute(q)])

    # -- assignment ---------------------------------------------------------------------------------
    def _closed_batches(self, conn: Connection) -> list[str]:
        b = self.t["batches"]
        return [r[0] for r in conn.execute(select(b.c.batch_id).where(b.c.status == "closed"))]

    def _candidate_query(
        self, annotator: str, kind: str, gold: bool, closed: list[str], batch: str | None = None
    ):
        t, a = self.t["tasks"], self.t["assignments"]
        mine = exists().where(a.c.task_id == t.c.task_id, a.c.annotator == annotator)
        q = select(t.c.task_id, t.c.batch_id).where(t.c.kind == kind, t.c.is_gold == gold, ~mine)
        if batch is not None:
            q = q.where(t.c.batch_id == batch)
        # The closed batches as a list, not a join or a subquery: the task index then yields tasks in
        # order and LIMIT stops early (PostgreSQL misjudges an anti-join against the small batches
        # table and sorts every candidate instead: 160 ms at 32,000 tasks).
        if closed:
            q = q.where(t.c.batch_id.notin_(closed))
        return q.order_by(t.c.task_id)

    def _level_query(self, base, level: int):
        """Regular candidates held by exactly ``level`` annotators (``overlap + 0`` keeps SQLite on
        the queue index, whose order makes LIMIT stop early, instead of the overlap index)."""
        t = self.t["tasks"]
        return base.where(t.c.n_assigned == level, (t.c.overlap + 0) > level)

    def _candidates(
        self,
        conn: Connection,
        annotator: str,
        kind: str,
        gold: bool,
        need: int,
        closed: list[str],
        batch: str | None = None,
    ) -> dict[str, str]:
        """Tasks of open batches this annotator never had; regular tasks still short of their overlap,
        the most advanced first so items complete early; gold tasks go to everyone once."""
        t = self.t["tasks"]
        base = self._candidate_query(annotator, kind, gold, closed, batch)
        if gold:  # least-seen gold first; one index probe per level (every level is an equality)
            found: dict[str, str] = {}
            n_users = conn.execute(select(func.count()).select_from(self.t["users"])).scalar_one()
            for level in range(n_users):
                found.update(conn.execute(base.where(t.c.n_assigned == level).limit(need - len(found))).all())
                if len(found) >= need:
                    break
            return found
        levels = conn.execute(select(func.max(t.c.overlap)).where(t.c.kind == kind)).scalar() or 0
        found = {}
        for level in range(levels - 1, -1, -1):
            q = self._level_query(base, level).limit(need - len(found))
            if self.backend == "postgresql":
                # Concurrent pulls from other processes skip the rows this one is taking instead of
                # waiting; a row whose n_assigned changed since the snapshot is re-checked against
                # the level before it is locked, so no task goes past its overlap. NO KEY UPDATE (only
                # n_assigned changes): submits whose foreign keys point at these rows do not wait.
                q = q.with_for_update(skip_locked=True, key_share=True, of=t)
            found.update(conn.execute(q).all())
            if len(found) >= need:
                break
        return found

    def _assign_chunk(
        self, conn: Connection, annotator: str, kind: str, chunk: int, n_gold: int, batch: str | None = None
    ) -> int:
        closed = self._closed_batches(conn)
        gold = self._candidates(conn, annotator, kind, True, n_gold, closed, batch) if n_gold else {}
        regular = self._candidates(conn, annotator, kind, False, max(chunk - len(gold), 1), closed, batch)
        batch_of = {**regular, **gold}
        order = interleave(list(regular), list(gold), seed=f"{annotator}:{kind}")
        if not order:
            return 0
        a, t = self.t["assignments"], self.t["tasks"]
        start = conn.execute(select(func.max(a.c.position)).where(a.c.annotator == annotator)).scalar()
        start = -1 if start is None else start
        now = utcnow()
        rows = [
            {
                "task_id": tid,
                "annotator": annotator,
                "position": start + 1 + i,
                "assigned_at": now,
                "kind": kind,
                "batch_id": batch_of[tid],
            }
            for i, tid in enumerate(order)
        ]
        conn.execute(a.insert(), rows)
        conn.execute(update(t).where(t.c.task_id.in_(order)).values(n_assigned=t.c.n_assigned + 1))
        return len(rows)

    # -- submits ------------------------------------------------------------------------------------
    def record_submit(
        self,
        ev: LabelEvent,
        *,
        active_account: bool = False,
        session_id: str | None = None,
        review: Callable[[Connection], None] | None = None,
    ) -> bool:
        """Append ``ev`` and close the annotator's assignment in one short transaction.
        Returns False when this very event is already recorded (a double click or a retry: same id,
        same action, values and comment).

        A first label, skip or flag must come from the showing of the item that is open: its id is
        the assignment's pending ``event_id`` (written when the item was shown). Otherwise
        :class:`StaleSubmit` and nothing is written: the same id with another answer (a second tab
        that still showed an item finished in the first), or an id that is not the open showing's.
        An item handed back to the pool while on screen has no assignment left: its label is kept.

        With ``active_account`` the annotator must be an active account at the moment of the write
        (checked in the same transaction): otherwise :class:`AccountInactive` and nothing written.
        The app passes it for every click, so a disabled account's next click records nothing.
        With ``session_id`` the sign-in session must be open too, checked in the same read: the
        annotator's, not revoked, not expired; otherwise :class:`SessionEnded` and nothing written
        (a tab whose session was signed out elsewhere records nothing).

        ``review(conn)`` runs in the same transaction once the event is recorded (adaptive overlap
        decides there whether the item needs one more annotator: a kill can never separate the label
        from that decision)."""
        return self.retrying(lambda: self._record_submit(ev, active_account, session_id, review))

    def _record_submit(
        self,
        ev: LabelEvent,
        active_account: bool = False,
        session_id: str | None = None,
        review: Callable[[Connection], None] | None = None,
    ) -> bool:
        a, u = self.t["assignments"], self.t["users"]
        with self.write() as conn:
            if active_account or session_id is not None:
                q = select(u.c.active).where(u.c.username == ev.annotator)
                if session_id is not None:
                    q = q.where(holds(self.t, session_id, ev.annotator, utcnow()))
                if not conn.execute(q).scalar():
                    if session_id is not None:
                        raise SessionEnded(f"the sign-in of {ev.annotator!r} has ended; nothing was recorded")
                    raise AccountInactive(f"the account {ev.annotator!r} is disabled or gone")
            if not self.labels.insert_event(conn, ev):
                self._same_as_recorded(conn, ev)
                return False
            if ev.action in FINISHING and ev.supersedes is None:
                mine = (a.c.task_id == ev.task_id) & (a.c.annotator == ev.annotator)
                closed = conn.execute(
                    update(a)
                    .where(mine, a.c.done_at.is_(None), a.c.event_id == ev.event_id)
                    .values(done_at=ev.created_at)
                ).rowcount
                d = self.t["drafts"]  # the half-done form of this item is done with
                conn.execute(delete(d).where(d.c.annotator == ev.annotator, d.c.task_id == ev.task_id))
                if not closed:
                    held = conn.execute(select(a.c.event_id, a.c.done_at).where(mine)).first()
                    if held is not None:  # the item is open under another showing, or finished
                        raise StaleSubmit(
                            "this item is no longer the one on your screen"
                            + (" (it was finished in another tab or window)" if held.done_at else "")
                            + "; nothing was recorded"
                        )
                    self._reattach(conn, ev)
                self._show_next(conn, ev)
            if review is not None:
                review(conn)
        return True

    def _same_as_recorded(self, conn: Connection, ev: LabelEvent) -> None:
        """``ev``'s id is already recorded: fine when it is the same event (a retry or a double
        click); :class:`StaleSubmit` when the same showing was answered differently before."""
        e = self.t["label_events"]
        have = conn.execute(
            select(e.c.task_id, e.c.annotator, e.c.action, e.c.values_json, e.c.comment).where(
                e.c.event_id == ev.event_id
            )
        ).first()
        same = have is not None and (have.task_id, have.annotator, have.action, have.comment) == (
            ev.task_id, ev.annotator, ev.action, ev.comment
        ) and self.loads(have.values_json) == ev.values  # fmt: skip
        if not same:
            raise StaleSubmit(
                "this item was already finished with another answer (in another tab or window?); "
                "nothing was recorded"
            )

    # -- adaptive overlap ---------------------------------------------------------------------------
    def lock_target(self, conn: Connection, task_id: str) -> TaskTarget | None:
        """The task's overlap with its row locked until the transaction ends (PostgreSQL: ``FOR NO KEY
        UPDATE``; SQLite's write transaction already excludes every other writer), so two annotators
        finishing the same item at once decide one after the other, the second seeing the first's label."""
        t, a = self.t["tasks"], self.t["assignments"]
        q = select(t.c.task_id, t.c.kind, t.c.overlap, t.c.overlap_min, t.c.overlap_max, t.c.audit).where(
            t.c.task_id == task_id
        )
        row = conn.execute(q.with_for_update(key_share=True)).first()
        if row is None:
            return None
        n_open = conn.execute(
            select(func.count()).where(a.c.task_id == task_id, a.c.done_at.is_(None))
        ).scalar_one()
        return TaskTarget(*row[:5], bool(row[5]), int(n_open))

    def raise_target(self, conn: Connection, task_id: str, target: int) -> bool:
        """Hand the task to one more annotator: its target becomes ``target`` (never above its
        ``overlap_max``, never lowered). True when it changed."""
        t = self.t["tasks"]
        stmt = (
            update(t)
            .where(t.c.task_id == task_id, t.c.overlap < target, t.c.overlap_max >= target)
            .values(overlap=target)
        )
        return bool(conn.execute(stmt).rowcount)

    def adaptive_tasks(self, kind: str | None = None) -> list[str]:
        """Ids of the tasks under adaptive overlap that could still get another annotator."""
        t = self.t["tasks"]
        q = select(t.c.task_id).where(t.c.overlap_max.is_not(None), t.c.overlap < t.c.overlap_max)
        if kind is not None:
            q = q.where(t.c.kind == kind)
        with self.read() as conn:
            return [r[0] for r in conn.execute(q.order_by(t.c.task_id))]

    def _show_next(self, conn: Connection, ev: LabelEvent) -> None:
        """Mark the annotator's next open item of the kind as shown, in the submit's transaction and
        in one statement: the next item is on screen a moment later, and the page's run only reads."""
        a = self.t["assignments"]
        first_open = (
            select(a.c.task_id)
            .where(a.c.annotator == ev.annotator, a.c.kind == ev.kind, a.c.done_at.is_(None))
            .where(self._open_batch(a.c.batch_id))
            .order_by(a.c.position)
            .limit(1)
            .scalar_subquery()
        )
        conn.execute(
            update(a)
            .where(a.c.annotator == ev.annotator, a.c.task_id == first_open)
            .where(a.c.done_at.is_(None), a.c.event_id.is_(None))
            .values(event_id=new_event_id(), shown_at=ev.created_at)
        )

    def _reattach(self, conn: Connection, ev: LabelEvent) -> None:
        """A submit for an item that went back to the pool while it was on screen: the label is kept
        (nothing an annotator did is lost) and the assignment is restored, finished."""
        a, t = self.t["assignments"], self.t["tasks"]
        if conn.execute(
            select(a.c.task_id).where(a.c.task_id == ev.task_id, a.c.annotator == ev.annotator)
        ).first():
            return
        task = conn.execute(select(t.c.batch_id).where(t.c.task_id == ev.task_id)).first()
        start = conn.execute(select(func.max(a.c.position)).where(a.c.annotator == ev.annotator)).scalar()
        conn.execute(a.insert(), {
            "task_id": ev.task_id, "annotator": ev.annotator, "position": (start or 0) + 1,
            "assigned_at": ev.created_at, "event_id": ev.event_id, "shown_at": ev.created_at,
            "done_at": ev.created_at, "kind": ev.kind, "batch_id": task[0] if task else "default",
        })  # fmt: skip
        conn.execute(update(t).where(t.c.task_id == ev.task_id).values(n_assigned=t.c.n_assigned + 1))

    # -- stale assignments --------------------------------------------------------------------------
    def _release_stale(
        self, conn: Connection, before: str, kind: str | None = None, annotator: str | None = None
    ) -> list[ReleasedAssignment]:
        """Return to the pool every open assignment of an (annotator, kind) queue that has shown
        nothing since ``before``: the rows go (logged in ``assignment_releases``), the tasks' holder
        counts drop, so the items can go to someone else."""
        a, t, r = self.t["assignments"], self.t["tasks"], self.t["assignment_releases"]
        seen = func.max(func.coalesce(a.c.shown_at, a.c.assigned_at))
        q = select(a.c.kind, a.c.annotator).where(a.c.done_at.is_(None)).group_by(a.c.kind, a.c.annotator)
        if kind is not None:
            q = q.where(a.c.kind == kind)
        if annotator is not None:
            q = q.where(a.c.annotator == annotator)
        idle = conn.execute(q.having(seen < before)).all()
        released: list[ReleasedAssignment] = []
        now = utcnow()
        for k, who in idle:
            self.lock(conn, f"queue:{who}")  # their queue changes in one transaction at a time
            rows = (
                conn.execute(
                    select(a.c.task_id, a.c.assigned_at, a.c.shown_at).where(
                        a.c.kind == k, a.c.annotator == who, a.c.done_at.is_(None)
                    )
                )
                .mappings()
                .all()
            )
            ids = [row["task_id"] for row in rows]
            conn.execute(r.insert(), [
                {"task_id": row["task_id"], "annotator": who, "kind": k, "assigned_at": row["assigned_at"],
                 "shown_at": row["shown_at"], "reason": f"idle since before {before}", "released_at": now}
                for row in rows
            ])  # fmt: skip
            conn.execute(a.delete().where(a.c.annotator == who, a.c.task_id.in_(ids), a.c.done_at.is_(None)))
            conn.execute(update(t).where(t.c.task_id.in_(ids)).values(n_assigned=t.c.n_assigned - 1))
            released += [ReleasedAssignment(who, k, i) for i in ids]
        return released

    def release_stale(
        self, before: str, kind: str | None = None, annotator: str | None = None
    ) -> list[ReleasedAssignment]:
        """:meth:`_release_stale` in its own transaction; the released ``(annotator, kind, task_id)``."""
        with self.write() as conn:
            return self._release_stale(conn, before, kind, annotator)

    def idle_queues(self, before: str) -> list[IdleQueue]:
        """The queues :meth:`release_stale` would hand back for ``before`` (read only: what the Work
        page shows as stale), oldest first."""
        a = self.t["assignments"]
        seen = func.max(func.coalesce(a.c.shown_at, a.c.assigned_at))
        q = (
            select(a.c.annotator, a.c.kind, func.count().label("n"), seen.label("seen"))
            .where(a.c.done_at.is_(None))
            .group_by(a.c.kind, a.c.annotator)
            .having(seen < before)
            .order_by(seen)
        )
        with self.read() as conn:
            rows = conn.execute(q).mappings().all()
            out = []
            for r in rows:
                per = conn.execute(
                    select(a.c.batch_id, func.count())
                    .where(a.c.kind == r["kind"], a.c.annotator == r["annotator"], a.c.done_at.is_(None))
                    .group_by(a.c.batch_id)
                    .order_by(a.c.batch_id)
                ).all()
                by_batch = tuple((b, int(n)) for b, n in per)
                out.append(IdleQueue(r["annotator"], r["kind"], int(r["n"]), r["seen"], by_batch))
        return out

    def overlap_ranges(self) -> list[OverlapRange]:
        """Per (kind, batch): the fewest and most annotators an item goes to now, and the adaptive
        bounds (``overlap_min``..``overlap_max``; None for fixed overlap)."""
        t = self.t["tasks"]
        q = (
            select(
                t.c.kind,
                t.c.batch_id,
                func.min(t.c.overlap),
                func.max(t.c.overlap),
                func.min(t.c.overlap_min),
                func.max(t.c.overlap_max),
            )  # fmt: skip
            .group_by(t.c.kind, t.c.batch_id)
            .order_by(t.c.kind, t.c.batch_id)
        )
        with self.read() as conn:
            return [OverlapRange(*r) for r in conn.execute(q)]

    def assignment_releases(self, annotator: str | None = None) -> list[AssignmentRelease]:
        """Assignments given back to the pool (stale claims, `prefkit tasks release`), oldest first."""
        r = self.t["assignment_releases"]
        q = select(r).order_by(r.c.seq)
        if annotator is not None:
            q = q.where(r.c.annotator == annotator)
        with self.read() as conn:
            return [AssignmentRelease(**x) for x in conn.execute(q).mappings()]

    # -- progress -----------------------------------------------------------------------------------
    def _my_progress(self, conn: Connection, annotator: str):
        a = self.t["assignments"]
        q = (
            select(
                a.c.kind, a.c.batch_id, func.count().label("assigned"), func.count(a.c.done_at).label("done")
            )
            .where(a.c.annotator == annotator)
            .group_by(a.c.kind, a.c.batch_id)
            .order_by(a.c.kind, a.c.batch_id)
        )
        return conn.execute(q).mappings().all()

    def queue_counts(self, annotator: str, since: str) -> dict[str, KindCounts]:
        """Per kind for one annotator: assigned, done, first submits since ``since`` (an ISO date
        prefix) and the same per batch. Two covering-index range scans."""
        e = self.t["label_events"]
        out: dict[str, dict[str, Any]] = {}
        with self.read() as conn:
            for r in self._my_progress(conn, annotator):
                row = out.setdefault(r["kind"], {"assigned": 0, "done": 0, "today": 0, "batches": []})
                row["assigned"] += r["assigned"]
                row["done"] += r["done"]
                row["batches"].append(
                    {"batch_id": r["batch_id"], "assigned": r["assigned"], "done": r["done"]}
                )
            q = (
                select(e.c.kind, func.count())
                .where(e.c.annotator == annotator, e.c.created_at >= since, e.c.supersedes.is_(None))
                .where(e.c.action.in_(FINISHING))
                .group_by(e.c.kind)
            )
            for kind, n in conn.execute(q):
                out.setdefault(kind, {"assigned": 0, "done": 0, "today": 0, "batches": []})["today"] = n
        return {
            kind: KindCounts(
                c["assigned"], c["done"], c["today"], tuple(BatchCounts(**b) for b in c["batches"])
            )
            for kind, c in out.items()
        }

    def queue_version(self, annotator: str) -> tuple[int, int, int]:
        """Changes whenever the annotator's counts can: their last event, their last assigned position,
        their last released item. Three index look-ups in one statement; the app caches the counts
        under it."""
        e, a, r = self.t["label_events"], self.t["assignments"], self.t["assignment_releases"]
        q = select(
            select(func.max(e.c.seq)).where(e.c.annotator == annotator).scalar_subquery(),
            select(func.max(a.c.position)).where(a.c.annotator == annotator).scalar_subquery(),
            select(func.max(r.c.seq)).where(r.c.annotator == annotator).scalar_subquery(),
        )
        return _version(self.read_retrying(lambda conn: conn.execute(q).one()))

    def available_count(self, annotator: str, kind: str) -> int:
        """Tasks of open batches not yet given to this annotator that could still be given to them."""
        t, a, b = self.t["tasks"], self.t["assignments"], self.t["batches"]
        mine = exists().where(a.c.task_id == t.c.task_id, a.c.annotator == annotator)
        q = (
            select(func.count())
            .select_from(t.join(b, b.c.batch_id == t.c.batch_id))
            .where(t.c.kind == kind, b.c.status == "open", ~mine)
            .where((t.c.n_assigned < t.c.overlap) | t.c.is_gold)
        )
        with self.read() as conn:
            return int(conn.execute(q).scalar_one())

    def has_available(self, annotator: str, kind: str) -> bool:
        """Whether :meth:`available_count` is above 0 (stops at the first task found)."""
        t, a, b = self.t["tasks"], self.t["assignments"], self.t["batches"]
        mine = exists().where(a.c.task_id == t.c.task_id, a.c.annotator == annotator)
        q = (
            select(t.c.task_id)
            .select_from(t.join(b, b.c.batch_id == t.c.batch_id))
            .where(t.c.kind == kind, b.c.status == "open", ~mine)
            .where((t.c.n_assigned < t.c.overlap) | t.c.is_gold)
            .limit(1)
        )
        with self.read() as conn:
            return conn.execute(q).first() is not None

    def progress_table(self) -> list[ProgressRow]:
        """Per (annotator, kind): assigned, done, labels, skips, flags, mean seconds per item."""
        a, e = self.t["assignments"], self.t["label_events"]
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        with self.read() as conn:
            q = select(a.c.annotator, a.c.kind, func.count(), func.count(a.c.done_at)).group_by(
                a.c.annotator, a.c.kind
            )
            for who, kind, assigned, done in conn.execute(q):
                rows[(who, kind)] = {"annotator": who, "task_kind": kind, "assigned": assigned, "done": done}
            q = (
                select(e.c.annotator, e.c.kind, e.c.action, func.count(), func.avg(e.c.time_spent_s))
                .where(e.c.supersedes.is_(None))
                .group_by(e.c.annotator, e.c.kind, e.c.action)
            )
            for who, kind, action, n, secs in conn.execute(q):
                row = rows.setdefault(
                    (who, kind), {"annotator": who, "task_kind": kind, "assigned": 0, "done": 0}
                )
                row[f"{action}s"] = n
                if action == "label":
                    row["mean_time_s"] = None if secs is None else round(float(secs), 1)
        return [ProgressRow(**row) for _, row in sorted(rows.items())]

    # -- task summaries ---------------------------------------------------------------------------------------
    def task_summaries(self, kind: str | None = None) -> list[TaskSummary]:
        """Per (kind, batch): tasks, gold tasks, assigned slots, and how many have k finished labels."""
        t, a = self.t["tasks"], self.t["assignments"]
        done = select(a.c.task_id, func.count(a.c.done_at).label("n_done")).group_by(a.c.task_id).subquery()
        full = func.sum(case((func.coalesce(done.c.n_done, 0) >= t.c.overlap, 1), else_=0))
        q = (
            select(
                t.c.kind,
                t.c.batch_id,
                func.count().label("tasks"),
                func.sum(case((t.c.is_gold.is_(True), 1), else_=0)).label("gold"),
                func.sum(t.c.n_assigned).label("assigned"),
                full.label("complete"),
            )
            .select_from(t.outerjoin(done, done.c.task_id == t.c.task_id))
            .group_by(t.c.kind, t.c.batch_id)
            .order_by(t.c.kind, t.c.batch_id)
        )
        if kind:
            q = q.where(t.c.kind == kind)
        with self.read() as conn:
            return [
                TaskSummary(
                    r["kind"],
                    r["batch_id"],
                    int(r["tasks"]),
                    int(r["gold"]),
                    int(r["assigned"] or 0),
                    int(r["complete"] or 0),
                )  # fmt: skip
                for r in conn.execute(q).mappings()
            ]

    # -- diagnostics --------------------------------------------------------------------------------
    def queue_query_plans(self, annotator: str, kind: str) -> dict[str, str]:
        """The backend's plan (SQLite ``EXPLAIN QUERY PLAN``, PostgreSQL ``EXPLAIN``) of the hot-path
        queries (the bench prints them)."""
        plans: dict[str, str] = {}
        with self.read() as conn:
            e = self.t["label_events"]
            queries = {
                "open_item": self._open_query(annotator, kind),
                "next_regular": self._level_query(
                    self._candidate_query(annotator, kind, False, ["closed-batch"]), 0
                ).limit(10),
                "next_gold": self._candidate_query(annotator, kind, True, ["closed-batch"])
                .where(self.t["tasks"].c.n_assigned == 0)
                .limit(1),
                "recent_labels": select(e.c.seq)
                .where(e.c.annotator == annotator)
                .order_by(e.c.seq.desc())
                .limit(40),
            }
            for name, q in queries.items():
                compiled = q.compile(self.engine, compile_kwargs={"literal_binds": True})
                rows = conn.execute(text(f"{explain_prefix(conn)} {compiled}")).all()
                plans[name] = "; ".join(str(r[-1]).strip() for r in rows)
        return plans
