"""Assignments area of the project store (``store.assignments``): each annotator's persisted queue and
the item open in it.

An annotator's queue is the ``assignments`` rows of that annotator in ``position`` order; a row is
open until ``done_at`` is set, which happens in the same transaction that records the label, skip or
flag (:mod:`prefkit.curation.store.submits`). The pending submit's ``event_id`` is written on the row
when the item is first shown, so a reload, a second tab or a server restart shows the same item with
the same idempotency key.

Every query of the submit → next-item path is an index range scan (see ``queue_query_plans``).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from prefkit.curation.store.backend import explain_prefix
from prefkit.curation.store.engine import StoreArea, StoreCore, in_write
from prefkit.curation.store.labels import Labels
from prefkit.curation.store.progress import version_of
from prefkit.curation.store.repeats import RepeatRule
from prefkit.curation.store.sessions import holds
from prefkit.curation.store.stale import Stale
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import AnnotationTask
from sqlalchemy import Connection, exists, func, select, text, true, update


def new_event_id() -> str:
    return "ev_" + uuid.uuid4().hex


def interleave(regular: list[str], gold: list[str], seed: str) -> list[str]:
    """Regular tasks in order with the gold tasks placed at seeded random positions."""
    rng = random.Random(seed + ":" + ",".join(regular[:1] + gold))
    order = list(regular)
    for tid in gold:
        order.insert(rng.randint(0, len(order)), tid)
    return order


def open_batch(tables, batch_id):
    """True for a batch that is not closed: a closed batch's items stay assigned but leave the
    queue until it reopens. A correlated primary-key probe, so the queue's index order is kept
    and LIMIT stops early (and no separate query for the closed batches)."""
    b = tables["batches"]
    return ~exists().where(b.c.batch_id == batch_id, b.c.status == "closed")


@dataclass(frozen=True, slots=True)
class OpenItem:
    """An annotator's open item: its task, its place in their queue and, once shown, the pending
    event id its submit will carry (None until then)."""

    task: AnnotationTask
    position: int
    event_id: str | None
    shown_at: str | None
    guidelines_version: str | None = None  # the kind's guidelines when it was shown
    recalibration: str | None = None  # queued again by ``prefkit tasks recalibrate`` (its round)
    repeat: bool = False  # an item they labelled, shown again (``store.repeats``; position -1: none)


@dataclass(frozen=True, slots=True)
class QueueView:
    """What the Annotate page reads on every run: may the account still act, its open item of the
    kind (None when there is none) and the queue's version (see ``Progress.queue_version``)."""

    active: bool
    item: OpenItem | None
    version: tuple[int, int, int]
    draft: str | None = None  # the open showing's saved form state (JSON), when there is one


class Assignments(StoreArea):
    """The queue operations the annotation app calls on every item: the open item, a new chunk
    when the queue runs dry (other annotators' stale items go back to the pool first)."""

    def __init__(self, core: StoreCore, labels: Labels, stale: Stale):
        super().__init__(core)
        self.labels = labels
        self.stale = stale

    def _open_query(self, annotator: str, kind: str):
        """The annotator's first open item of ``kind`` with its task's columns."""
        a, t = self.t["assignments"], self.t["tasks"]
        return (
            select(a.c.position, a.c.event_id, a.c.shown_at, a.c.guidelines_version, a.c.recalibration, *t.c)
            .join_from(a, t, t.c.task_id == a.c.task_id)
            .where(a.c.annotator == annotator, a.c.kind == kind, a.c.done_at.is_(None))
            .where(open_batch(self.t, a.c.batch_id))
            .order_by(a.c.position)
            .limit(1)
        )

    def _open_both(self, annotator: str, kind: str):
        """The queue's first open item of ``kind`` and the open repeat (subqueries), outer-joined to the
        annotator's account row: one statement reads both (:meth:`_pick` takes the repeat first)."""
        u = self.t["users"]
        item = self._open_query(annotator, kind).subquery()
        again = self.labels.repeats.open_query(annotator, kind).subquery()
        return item, again, u.outerjoin(item, true()).outerjoin(again, true())

    def _pick(self, found, item, again) -> OpenItem | None:
        """The open item of a :meth:`_open_both` row: the repeat when one is open (it comes first)."""
        n, m = len(item.c), len(again.c)
        cols = found[len(found) - n - m :]
        if cols[n] is not None:  # the open repeat's event_id
            task = self.labels._task_from_row(dict(zip(again.c.keys(), cols[n:], strict=True)))
            return OpenItem(task, -1, cols[n], cols[n + 1], repeat=True)
        row = dict(zip(item.c.keys(), cols[:n], strict=True))
        return None if row["task_id"] is None else self._item(row)

    def _open_row(self, conn: Connection, annotator: str, kind: str) -> OpenItem | None:
        item, again, joined = self._open_both(annotator, kind)
        u = self.t["users"]
        found = conn.execute(
            select(*item.c, *again.c).select_from(joined).where(u.c.username == annotator)
        ).first()
        return None if found is None else self._pick(found, item, again)

    def _item(self, row) -> OpenItem:
        """An open item from an assignment row joined with its task's columns."""
        task = self.labels._task_from_row(row)
        return OpenItem(
            task,
            *(row[k] for k in ("position", "event_id", "shown_at", "guidelines_version", "recalibration")),
        )

    def open_item(self, annotator: str, kind: str) -> OpenItem | None:
        """The annotator's first open item of ``kind`` with its task's columns, as it is (its
        ``event_id`` is None until it is shown); None when nothing is open. One statement, no locks."""
        return self.read_retrying(lambda conn: self._open_row(conn, annotator, kind))

    @in_write
    def open_assignment(
        self,
        conn: Connection,
        annotator: str,
        kind: str,
        chunk: int,
        n_gold: int,
        stale_before: str | None = None,
        batch: str | None = None,
        guidelines_version: str | None = None,
        repeat: RepeatRule | None = None,
    ) -> OpenItem | None:
        """The annotator's current item of ``kind`` with its task's columns (assigning a new chunk
        when the queue is empty), marked as shown with its pending event id (and ``guidelines_version``,
        the kind's guidelines now); ``None`` when nothing is left to do. With ``repeat``, an empty queue
        first opens a due repeat (:meth:`Repeats.offer`). Before a new chunk is picked, other annotators' items idle since ``stale_before``
        go back to the pool. With ``batch``, a new chunk comes from that batch only, and only to an annotator
        without one (a crowd study's participant: one share, checked in this write). A write transaction: call :meth:`open_item` first, which is one read
        and usually finds the item already shown. Idempotent, so a dropped connection or a deadlock
        just runs it again."""
        # One annotator's queue changes in one transaction at a time, whichever replica serves
        # them (two tabs must not each pull a chunk); other annotators' pulls go on in parallel.
        self.lock(conn, f"queue:{annotator}")
        row = self._open_row(conn, annotator, kind)
        if row is None:
            if stale_before is not None:
                self.stale.release_in(conn, stale_before, kind)
            # a due repeat comes before a new chunk; one first answered today only when none is left
            offer = partial(self.labels.repeats.offer, conn, annotator, kind)
            a = self.t["assignments"]  # a study's participant (``batch``) gets one chunk, ever
            mine = (a.c.annotator == annotator) & (a.c.kind == kind) & (a.c.batch_id == batch)
            held = batch is not None and conn.execute(select(a.c.task_id).where(mine).limit(1)).first()
            if (
                not (repeat and offer(repeat))
                and (held or not self._assign_chunk(conn, annotator, kind, chunk, n_gold, batch))
                and not (repeat and offer(replace(repeat, any_day=True)))
            ):
                return None
            row = self._open_row(conn, annotator, kind)
            if row is None:  # the chunk just assigned is open in this transaction
                return None
        if not row.event_id:
            row = replace(
                row, event_id=new_event_id(), shown_at=utcnow(), guidelines_version=guidelines_version
            )
            a = self.t["assignments"]
            conn.execute(
                update(a)
                .where(a.c.task_id == row.task.task_id, a.c.annotator == annotator)
                .values(event_id=row.event_id, shown_at=row.shown_at, guidelines_version=guidelines_version)
            )
        return row

    @in_write
    def open_repeat(self, conn: Connection, annotator: str, kind: str, rule: RepeatRule) -> OpenItem | None:
        """For an annotator with nothing else left of ``kind`` (a crowd participant's queue is done):
        their open repeat, or a due one of any day opened now; None when none is due."""
        self.lock(conn, f"queue:{annotator}")
        self.labels.repeats.offer(conn, annotator, kind, replace(rule, any_day=True))
        return self._open_row(conn, annotator, kind)

    def annotator_view(self, annotator: str, kind: str, session_id: str | None = None) -> QueueView:
        """What the Annotate page needs on every run, in one statement. An unknown account is not
        active; with ``session_id``, neither is one whose sign-in session ended (signed out, expired,
        revoked): checked in the same statement."""
        a, u = self.t["assignments"], self.t["users"]
        e, r, d = self.t["label_events"], self.t["assignment_releases"], self.t["drafts"]
        item, again, joined = self._open_both(annotator, kind)
        shown = [func.coalesce(again.c[c], item.c[c]) for c in ("task_id", "event_id")]
        draft = select(d.c.state_json).where(d.c.annotator == annotator, d.c.task_id == shown[0])
        q = (
            select(
                u.c.active,
                select(func.max(e.c.seq)).where(e.c.annotator == annotator).scalar_subquery(),
                select(func.max(a.c.position)).where(a.c.annotator == annotator).scalar_subquery(),
                select(func.max(r.c.seq)).where(r.c.annotator == annotator).scalar_subquery(),
                draft.where(d.c.event_id == shown[1]).scalar_subquery(),
                *item.c,
                *again.c,
            )
            .select_from(joined)
            .where(u.c.username == annotator)
        )
        if session_id is not None:
            q = q.where(holds(self.t, session_id, annotator, utcnow()))
        found = self.read_retrying(lambda conn: conn.execute(q).first())
        if found is None or not found[0]:
            version = (0, 0, 0) if found is None else version_of(found[1:4])
            return QueueView(False, None, version)
        return QueueView(True, self._pick(found, item, again), version_of(found[1:4]), found[4])

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

    def queue_again(self, annotator: str, kind: str, candidates: list[str], n: int, round_id: str) -> int:
        """Put the first ``n`` of ``candidates`` the annotator never had at the end of their queue,
        marked as recalibration ``round_id`` (the tasks' holder counts stay: these answers are no
        votes); returns how many were queued."""
        a, t = self.t["assignments"], self.t["tasks"]
        with self.write() as conn:
            self.lock(conn, f"queue:{annotator}")
            had = {r[0] for r in conn.execute(select(a.c.task_id).where(a.c.annotator == annotator))}
            new = [tid for tid in candidates if tid not in had][:n]
            batch = dict(conn.execute(select(t.c.task_id, t.c.batch_id).where(t.c.task_id.in_(new))).all())
            start = conn.execute(select(func.max(a.c.position)).where(a.c.annotator == annotator)).scalar()
            row = {"annotator": annotator, "assigned_at": utcnow(), "kind": kind, "recalibration": round_id}
            for i, tid in enumerate(new, start=1 + (-1 if start is None else start)):
                conn.execute(a.insert(), {**row, "task_id": tid, "position": i, "batch_id": batch[tid]})
        return len(new)

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

    def _available(self, annotator: str, kind: str, column: Any):
        """``column`` over the tasks of open batches not yet given to ``annotator`` that could still be."""
        t, a, b = self.t["tasks"], self.t["assignments"], self.t["batches"]
        mine = exists().where(a.c.task_id == t.c.task_id, a.c.annotator == annotator)
        return (
            select(column)
            .select_from(t.join(b, b.c.batch_id == t.c.batch_id))
            .where(t.c.kind == kind, b.c.status == "open", ~mine)
            .where((t.c.n_assigned < t.c.overlap) | t.c.is_gold)
        )

    def available_count(self, annotator: str, kind: str) -> int:
        """Tasks of open batches not yet given to this annotator that could still be given to them."""
        return int(self.scalar(self._available(annotator, kind, func.count())))

    def has_available(self, annotator: str, kind: str) -> bool:
        """Whether :meth:`available_count` is above 0 (stops at the first task found)."""
        q = self._available(annotator, kind, self.t["tasks"].c.task_id).limit(1)
        with self.read() as conn:
            return conn.execute(q).first() is not None

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
