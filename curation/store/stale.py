"""Stale assignments area of the project store (``store.stale``): open items of a queue idle too long go
back to the pool (logged in ``assignment_releases``), so they can go to someone else."""

from __future__ import annotations

from dataclasses import dataclass

from prefkit.curation.store.engine import StoreArea
from prefkit.schemas.common import utcnow
from sqlalchemy import Connection, func, select, update


@dataclass(frozen=True, slots=True)
class IdleQueue:
    """An annotator's queue of a kind holding open items, and when it last showed one."""

    annotator: str
    kind: str
    open_items: int
    last_seen: str
    by_batch: tuple[tuple[str, int], ...]  # its open items per batch


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


class Stale(StoreArea):
    """Stale assignments: which queues are idle, handing their open items back, the log of it."""

    def release_in(
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
                    select(a.c.task_id, a.c.assigned_at, a.c.shown_at, a.c.recalibration).where(
                        a.c.kind == k, a.c.annotator == who, a.c.done_at.is_(None)
                    )
                )
                .mappings()
                .all()
            )
            ids = [row["task_id"] for row in rows]
            why = {"annotator": who, "kind": k, "reason": f"idle since before {before}", "released_at": now}
            kept = ("task_id", "assigned_at", "shown_at")
            conn.execute(r.insert(), [{**{c: row[c] for c in kept}, **why} for row in rows])
            conn.execute(a.delete().where(a.c.annotator == who, a.c.task_id.in_(ids), a.c.done_at.is_(None)))
            # a recalibration item never held a place among the item's annotators
            held = [row["task_id"] for row in rows if row["recalibration"] is None]
            conn.execute(update(t).where(t.c.task_id.in_(held)).values(n_assigned=t.c.n_assigned - 1))
            released += [ReleasedAssignment(who, k, i) for i in ids]
        return released

    def release_stale(
        self, before: str, kind: str | None = None, annotator: str | None = None
    ) -> list[ReleasedAssignment]:
        """:meth:`release_in` in its own transaction; the released ``(annotator, kind, task_id)``."""
        with self.write() as conn:
            return self.release_in(conn, before, kind, annotator)

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

    def assignment_releases(self, annotator: str | None = None) -> list[AssignmentRelease]:
        """Assignments given back to the pool (stale claims, `prefkit tasks release`), oldest first."""
        r = self.t["assignment_releases"]
        q = select(r).order_by(r.c.seq)
        if annotator is not None:
            q = q.where(r.c.annotator == annotator)
        return [AssignmentRelease(**x) for x in self.fetch(q)]
