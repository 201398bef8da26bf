"""Progress area of the project store (``store.progress``): what each annotator's queue holds and
has done, per kind and batch, and the version the app caches those counts under."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from prefkit.curation.store.engine import StoreArea
from prefkit.curation.store.labels import CLOSING
from sqlalchemy import Connection, case, func, select


def version_of(values: Any) -> tuple[int, int, int]:
    """A queue's version (last event, assignment and release seq; 0 for none) from three columns."""
    a, b, c = (int(v or 0) for v in values)
    return a, b, c


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
    """Per (kind, batch): tasks, gold tasks, assigned slots, tasks with all their labels
    (``work.COMPLETE`` says which)."""

    kind: str
    batch_id: str
    tasks: int
    gold: int
    assigned: int
    complete: int


class Progress(StoreArea):
    """Counts of queues and labels, per annotator and kind, for the app's counters and the reports."""

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
                .where(e.c.action.in_(CLOSING))
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

    def assigned_after(self, annotator: str, position: int) -> list[tuple[str, str, int]]:
        """``(kind, batch, items)`` assigned to the annotator past ``position`` (a new chunk): one index
        range, where counting the whole queue again reads every item they were ever given."""
        a = self.t["assignments"]  # counted here: a GROUP BY would take the (kind, batch) index, all of it
        q = select(a.c.kind, a.c.batch_id).where(a.c.annotator == annotator, a.c.position > position)
        counted = Counter(tuple(row) for row in self.read_retrying(lambda conn: conn.execute(q).all()))
        return [(k, b, n) for (k, b), n in sorted(counted.items())]

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
        return version_of(self.read_retrying(lambda conn: conn.execute(q).one()))

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

    def task_summaries(self, kind: str | None = None) -> list[TaskSummary]:
        """Per (kind, batch): tasks, gold tasks, assigned slots, and how many are complete: as many
        people's live labels as the task's overlap, however the labels arrived (the app, a label
        file, Label Studio); skips, flags and LLM judges' labels do not count."""
        t, e = self.t["tasks"], self.t["label_events"]
        latest = (  # each person's live event per task: their latest
            select(func.max(e.c.seq).label("seq"))
            .where(e.c.action != "recalibrate", e.c.source != "judge")
            .group_by(e.c.task_id, e.c.annotator)
            .subquery()
        )
        done = (
            select(e.c.task_id, func.count().label("n_done"))
            .join(latest, e.c.seq == latest.c.seq)
            .where(e.c.action == "label")
            .group_by(e.c.task_id)
            .subquery()
        )
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
        counts = ("tasks", "gold", "assigned", "complete")
        return [
            TaskSummary(r["kind"], r["batch_id"], *(int(r[c] or 0) for c in counts)) for r in self.fetch(q)
        ]
