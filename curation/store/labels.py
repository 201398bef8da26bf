"""Labelling area of the project store (``store.labels``): batches, tasks (with their gold answers),
label events, adjudications.

Label events and adjudications are append-only: nothing here updates or deletes one. An edit is a new
event naming the one it supersedes; a submit carries its own ``event_id`` so a double click, a rerun or
a retry writes it once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from prefkit.curation.store.common import search_text
from prefkit.curation.store.engine import StoreArea, StoreCore, StoreError, from_row, to_row
from prefkit.curation.store.repeats import Repeats
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import Adjudication, AnnotationTask, LabelEvent
from sqlalchemy import ColumnElement, func, select, update

# The tasks table's columns in the order ``Labels._task_tuple`` gives them.
TASK_COLUMNS = tuple(
    """task_id kind item_ref payload_json batch_id overlap is_gold gold_answer_json schema_version
    created_at overlap_min overlap_max audit search_text""".split()
)

#: Actions that finish an assignment (a withdraw does not: it only removes a label).
FINISHING = ("label", "skip", "flag")
#: Actions that close the annotator's assignment: a finished item, or a recalibration answer.
CLOSING = (*FINISHING, "recalibrate")


@dataclass(frozen=True, slots=True)
class Batch:
    """A batch with its status and the task kinds it holds (``kinds``: comma-separated)."""

    batch_id: str
    kinds: str
    status: str
    created_at: str


@dataclass(frozen=True, slots=True)
class Throughput:
    """First submits of one annotator and kind in one time bucket (a day or an hour, UTC)."""

    bucket: str
    annotator: str
    kind: str
    n: int


@dataclass(frozen=True, slots=True)
class SubmitTime:
    """An item finished by a person (the first label, skip or flag of it, not an edit), with the
    seconds spent on it (None when the source did not say) and the task's batch."""

    task_id: str
    kind: str
    batch_id: str
    annotator: str
    action: str
    time_spent_s: float | None
    is_gold: bool
    created_at: str


@dataclass(frozen=True, slots=True)
class FlaggedLabel:
    """An item an annotator reported as broken, with why."""

    task_id: str
    kind: str
    annotator: str
    comment: str | None
    created_at: str


class Labels(StoreArea):
    """Batches, tasks and the label event log."""

    #: Arms (``LabelEvent.assist_arm``) whose labels this process leaves out of everything derived
    #: from the live labels: set only for a release under ``[release] assisted = "control_only"``
    #: (:meth:`leaving_out`); the log itself keeps every event.
    left_out_arms: frozenset[str] = frozenset()
    #: Declared kinds' declarations (``{kind: declaration}``), pinned in the transaction of the kind's
    #: first item or label (:meth:`kind_declarations`); set when the project's kinds are loaded.
    pin_when_recorded: dict[str, dict[str, Any]] = {}

    def __init__(self, core: StoreCore, repeats: Repeats):
        super().__init__(core)
        self.repeats = repeats  # second answers, kept apart from the label log (imports write both)

    @contextmanager
    def leaving_out(self, *arms: str) -> Iterator[None]:
        """Within the block, :meth:`effective_events` leaves out labels made in ``arms``."""
        before = self.left_out_arms
        self.left_out_arms = before | frozenset(arms)
        try:
            yield
        finally:
            self.left_out_arms = before

    # -- batches and tasks --------------------------------------------------------------------------
    def ensure_batch(self, conn, batch_id: str, kind: str) -> None:
        b = self.t["batches"]
        if conn.execute(select(b.c.batch_id).where(b.c.batch_id == batch_id)).first() is None:
            conn.execute(
                b.insert(), {"batch_id": batch_id, "kind": kind, "status": "open", "created_at": utcnow()}
            )

    def set_batch_status(self, batch_id: str, status: str) -> None:
        if status not in ("open", "closed"):
            raise StoreError(f"batch status must be open or closed, not {status!r}")
        b = self.t["batches"]
        with self.write() as conn:
            if conn.execute(update(b).where(b.c.batch_id == batch_id).values(status=status)).rowcount == 0:
                raise StoreError(f"no batch {batch_id!r}")

    def batches(self) -> list[Batch]:
        """Every batch with its status and the task kinds it holds (``kinds``, comma-separated; a
        batch can hold several: ``tasks create --batch week1`` for each kind)."""
        b, t = self.t["batches"], self.t["tasks"]
        with self.read() as conn:
            kinds: dict[str, list[str]] = {}
            for batch_id, kind in conn.execute(select(t.c.batch_id, t.c.kind).distinct().order_by(t.c.kind)):
                kinds.setdefault(batch_id, []).append(kind)
            rows = conn.execute(select(b).order_by(b.c.created_at, b.c.batch_id)).mappings()
            return [from_row(Batch, r, kinds=", ".join(kinds.get(r["batch_id"], [r["kind"]]))) for r in rows]

    def add_tasks(self, tasks: list[AnnotationTask]) -> int:
        """Add tasks; a task whose (kind, item_ref) exists is left as it is. Returns how many were new.

        Reads only the given tasks' refs (a Label Studio push stores 100,000 tasks a thousand at a
        time: reading every stored ref for each batch would grow with the project)."""
        t = self.t["tasks"]
        refs: dict[str, set[str]] = {}
        for task in tasks:
            refs.setdefault(task.kind, set()).add(task.item_ref)
        with self.write() as conn:
            have: set[tuple[str, str]] = set()
            for kind, wanted in refs.items():
                ordered = sorted(wanted)
                for start in range(0, len(ordered), 500):
                    q = select(t.c.item_ref).where(
                        t.c.kind == kind, t.c.item_ref.in_(ordered[start : start + 500])
                    )
                    have |= {(kind, r[0]) for r in conn.execute(q)}
            new, seen = [], set(have)
            for task in tasks:
                if (task.kind, task.item_ref) not in seen:
                    seen.add((task.kind, task.item_ref))
                    new.append(task)
            for batch in {(task.batch, task.kind) for task in new}:
                self.ensure_batch(conn, *batch)
            self.core.insert_tuples(conn, "tasks", TASK_COLUMNS, (self._task_tuple(task) for task in new))
            self._pin(conn, {task.kind for task in new})
        return len(new)

    def _task_tuple(self, task: AnnotationTask) -> tuple:
        return (
            task.task_id,
            task.kind,
            task.item_ref,
            self.dumps(task.payload),
            task.batch,
            task.overlap,
            task.is_gold,
            self.dumps(task.gold_answer),
            task.schema_version,
            task.created_at,
            task.overlap_min,
            task.overlap_max,
            task.audit,
            search_text(task.task_id, task.item_ref, task.payload),
        )

    def _task_from_row(self, r) -> AnnotationTask:
        # Rows were validated when written (add_tasks); reading 100,000 of them (a Label Studio push)
        # must not validate each again.
        same = "task_id kind item_ref overlap schema_version created_at overlap_min overlap_max".split()
        return AnnotationTask.model_construct(
            **{c: r[c] for c in same},
            payload=self.loads(r["payload_json"]),
            batch=r["batch_id"],
            is_gold=bool(r["is_gold"]),
            gold_answer=self.loads(r["gold_answer_json"]),
            audit=bool(r["audit"]),
        )

    def tasks(self, kind: str | None = None, batch: str | None = None) -> list[AnnotationTask]:
        return [self._task_from_row(r) for r in self.rows("tasks", ("task_id",), kind=kind, batch_id=batch)]

    def task(self, task_id: str) -> AnnotationTask:
        row = self.row("tasks", task_id=task_id)
        if row is None:
            raise StoreError(f"no task {task_id!r}")
        return self._task_from_row(row)

    def _event_row(self, ev: LabelEvent) -> dict[str, Any]:
        return to_row(ev, ("values",))

    def _event_from_row(self, r) -> LabelEvent:
        return from_row(LabelEvent, r)

    # -- label events -------------------------------------------------------------------------------
    def append_event(self, event: LabelEvent) -> bool:
        """Record one event in its own short transaction. Returns False when ``event_id`` was
        already recorded (an idempotent retry), True when it was written now."""
        return self.write_retrying(lambda conn: self.insert_event(conn, event))

    def insert_event(self, conn, event: LabelEvent) -> bool:
        """Insert ``event`` unless its id is already recorded (by anyone, even concurrently: the
        unique key decides, so two replicas retrying one submit record it once)."""
        stmt = self.insert_stmt("label_events").on_conflict_do_nothing(index_elements=["event_id"])
        # RETURNING, not rowcount: the psycopg dialect reports -1 for single-row inserts.
        stmt = stmt.returning(self.t["label_events"].c.seq)
        written = conn.execute(stmt, self._event_row(event)).first() is not None
        if written and event.action == "label":
            self._pin(conn, {event.kind})
        return written

    def _pin(self, conn, kinds: set[str], declarations: dict[str, dict[str, Any]] | None = None) -> None:
        """Pin the declaration of each declared kind in ``kinds`` unless one is pinned already."""
        declarations = self.pin_when_recorded if declarations is None else declarations
        for kind in sorted(kinds & set(declarations)):
            row = {
                "kind": kind,
                "declaration_json": self.dumps(declarations[kind]),
                "pinned_at": utcnow(),
            }
            conn.execute(
                self.insert_stmt("kind_declarations").on_conflict_do_nothing(index_elements=["kind"]), row
            )

    def repin(self, kind: str, pinned: dict[str, Any] | None, declaration: dict[str, Any]) -> None:
        """Pin ``declaration`` for ``kind`` in place of ``pinned`` (a change checked against what was
        recorded under it); a pin another process changed meanwhile is left as it is."""
        d = self.t["kind_declarations"]
        with self.write() as conn:
            if pinned is None:
                self._pin(conn, {kind}, {kind: declaration})
            else:
                mine = (d.c.kind == kind) & (d.c.declaration_json == self.dumps(pinned))
                new = {"declaration_json": self.dumps(declaration), "pinned_at": utcnow()}
                conn.execute(update(d).where(mine).values(**new))

    def kind_declarations(self) -> dict[str, dict[str, Any]]:
        """Each declared kind's declaration as the store last accepted it (its pin)."""
        d = self.t["kind_declarations"]
        return {r.kind: self.loads(r.declaration_json) for r in self.fetch_tuples(select(d))}

    def append_events(self, events: list[LabelEvent], repeats: list[LabelEvent] | None = None) -> int:
        """Record many events in one transaction (imports); already-known ids are skipped. ``repeats``
        (``action="repeat"``) go to the repeats table in the same transaction (``Repeats.add``)."""
        e = self.t["label_events"]
        with self.write() as conn:
            ids = [ev.event_id for ev in events]
            have: set[str] = set()
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                have |= {r[0] for r in conn.execute(select(e.c.event_id).where(e.c.event_id.in_(chunk)))}
            rows = [self._event_row(ev) for ev in events if ev.event_id not in have]
            self.insert_many(conn, "label_events", rows)
            self._pin(conn, {ev.kind for ev in events if ev.event_id not in have and ev.action == "label"})
            return len(rows) + (self.repeats.add(conn, repeats) if repeats else 0)

    def events(
        self, kind: str | None = None, task_id: str | None = None, annotator: str | None = None
    ) -> list[LabelEvent]:
        """Every event, oldest first, optionally filtered."""
        rows = self.rows("label_events", ("seq",), kind=kind, task_id=task_id, annotator=annotator)
        return [self._event_from_row(r) for r in rows]

    def effective_events(self, kind: str | None = None, *, every_arm: bool = False) -> list[LabelEvent]:
        """The live event per (task, annotator): the latest one not superseded by a later event.
        A withdrawn label leaves nothing. Derived from the log alone, so it is reproducible. Labels of
        an arm left out (:meth:`leaving_out`) are left out unless ``every_arm``."""
        latest: dict[tuple[str, str], LabelEvent] = {}
        for ev in self.events(kind=kind):
            if ev.action != "recalibrate":  # an answer compared with a decision, never a live label
                latest[(ev.task_id, ev.annotator)] = ev
        out = [ev for ev in latest.values() if ev.action != "withdraw"]
        if self.left_out_arms and not every_arm:
            out = [ev for ev in out if ev.assist_arm not in self.left_out_arms]
        return out

    def last_seq(self) -> int:
        """The sequence number of the log's last event (0 for an empty log); one primary-key probe."""
        e = self.t["label_events"]
        return int(self.scalar(select(func.max(e.c.seq))) or 0)

    def task_finishers(self, conn, task_id: str) -> dict[str, LabelEvent]:
        """In the caller's transaction: per person, their live label, skip or flag of one task (the
        latest event of each, not withdrawn; LLM judges left out). An index range of the task's events."""
        e = self.t["label_events"]
        latest: dict[str, LabelEvent] = {}
        for r in conn.execute(select(e).where(e.c.task_id == task_id).order_by(e.c.seq)).mappings():
            if r["source"] != "judge" and r["action"] != "recalibrate":
                latest[r["annotator"]] = self._event_from_row(r)
        return {a: ev for a, ev in latest.items() if ev.action in FINISHING}

    # -- reads of the event log ---------------------------------------------------------------------
    def event(self, event_id: str) -> LabelEvent | None:
        row = self.row("label_events", event_id=event_id)
        return None if row is None else self._event_from_row(row)

    def recent_live_events(self, annotator: str, n: int) -> list[LabelEvent]:
        """The annotator's last ``n`` live events (one per task, newest first; superseded ones hidden)."""
        e = self.t["label_events"]
        out: dict[str, LabelEvent] = {}
        with self.read() as conn:
            q = select(e).where(e.c.annotator == annotator, e.c.action != "recalibrate")
            q = q.order_by(e.c.seq.desc()).limit(max(4 * n, 20))
            for r in conn.execute(q).mappings():
                if r["task_id"] not in out:
                    out[r["task_id"]] = self._event_from_row(r)
        live = [ev for ev in out.values() if ev.action != "withdraw"]
        return live[:n]

    def live_events_of(
        self,
        annotator: str,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> tuple[list[LabelEvent], int]:
        """The annotator's live events (the latest per task, withdrawals left out), newest first,
        optionally of one ``kind`` and made in ``[since, until)`` (ISO-8601 prefixes compare as text:
        ``"2026-11-30"``); a page of ``limit`` from ``offset``, and how many there are in all."""
        e = self.t["label_events"]
        latest = (
            select(func.max(e.c.seq).label("seq"))
            .where(e.c.annotator == annotator)
            .group_by(e.c.task_id)
            .subquery()
        )
        where: list[ColumnElement[bool]] = [e.c.action.notin_(("withdraw", "recalibrate"))]
        if kind:
            where.append(e.c.kind == kind)
        if since:
            where.append(e.c.created_at >= since)
        if until:
            where.append(e.c.created_at < until)
        base = select(e).join(latest, e.c.seq == latest.c.seq).where(*where)
        page = base.order_by(e.c.seq.desc()).offset(offset)
        if limit is not None:
            page = page.limit(limit)
        with self.read() as conn:
            total = int(conn.execute(select(func.count()).select_from(base.subquery())).scalar_one())
            rows = conn.execute(page).mappings().all()
        return [self._event_from_row(r) for r in rows], total

    def live_id(self, conn, annotator: str, task_id: str) -> str | None:
        """The id of the annotator's latest event for ``task_id``, read in the caller's transaction."""
        e = self.t["label_events"]
        q = select(e.c.event_id).where(e.c.task_id == task_id, e.c.annotator == annotator)
        return conn.execute(q.order_by(e.c.seq.desc()).limit(1)).scalar()

    def live_event(self, annotator: str, task_id: str) -> LabelEvent | None:
        """The annotator's latest event for ``task_id`` (None when they have none)."""
        e = self.t["label_events"]
        q = (
            select(e)
            .where(e.c.task_id == task_id, e.c.annotator == annotator)
            .order_by(e.c.seq.desc())
            .limit(1)
        )
        with self.read() as conn:
            row = conn.execute(q).mappings().first()
        return None if row is None else self._event_from_row(row)

    def throughput(self, bucket_chars: int = 10) -> list[Throughput]:
        """First submits per (time bucket, annotator, kind); 10 chars = per day, 13 = per hour."""
        e = self.t["label_events"]
        bucket = func.substr(e.c.created_at, 1, bucket_chars).label("bucket")
        q = (
            select(bucket, e.c.annotator, e.c.kind, func.count().label("n"))
            .where(e.c.supersedes.is_(None), e.c.action.in_(FINISHING))
            .group_by(bucket, e.c.annotator, e.c.kind)
            .order_by(bucket)
        )
        return [Throughput(*r) for r in self.fetch_tuples(q)]

    def submit_times(self) -> list[SubmitTime]:
        """Every item a person finished (first labels, skips and flags; edits, withdrawals and LLM
        judges' labels left out), oldest first: what annotator time is counted from."""
        e, t = self.t["label_events"], self.t["tasks"]
        q = (
            select(
                e.c.task_id,
                e.c.kind,
                t.c.batch_id,
                e.c.annotator,
                e.c.action,
                e.c.time_spent_s,
                t.c.is_gold,
                e.c.created_at,
            )
            .join_from(e, t, t.c.task_id == e.c.task_id)
            .where(e.c.supersedes.is_(None), e.c.action.in_(FINISHING), e.c.source != "judge")
            .order_by(e.c.seq)
        )
        return [
            SubmitTime(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), r[7]) for r in self.fetch_tuples(q)
        ]

    def flagged(self) -> list[FlaggedLabel]:
        e = self.t["label_events"]
        q = select(e.c.task_id, e.c.kind, e.c.annotator, e.c.comment, e.c.created_at).where(
            e.c.action == "flag"
        )
        return [FlaggedLabel(*r) for r in self.fetch_tuples(q.order_by(e.c.seq))]

    def labelled_by(self) -> int:
        """How many people gave at least one label (accounts that never labelled do not count)."""
        e = self.t["label_events"]
        with self.read() as conn:
            q = select(func.count(func.distinct(e.c.annotator))).where(e.c.action == "label")
            return int(conn.execute(q).scalar_one())

    # -- gold ---------------------------------------------------------------------------------------
    def set_gold(self, task_id: str, answer: dict[str, Any] | None) -> None:
        """Mark a task as gold with its known answer (``None`` makes it a regular task again)."""
        t = self.t["tasks"]
        with self.write() as conn:
            res = conn.execute(
                update(t)
                .where(t.c.task_id == task_id)
                .values(is_gold=answer is not None, gold_answer_json=self.dumps(answer))
            )
            if res.rowcount == 0:
                raise StoreError(f"no task {task_id!r}")

    def gold_answers(self, kind: str | None = None) -> dict[str, tuple[str, dict[str, Any]]]:
        t = self.t["tasks"]
        q = select(t.c.task_id, t.c.kind, t.c.gold_answer_json).where(t.c.is_gold.is_(True))
        if kind:
            q = q.where(t.c.kind == kind)
        return {r[0]: (r[1], self.loads(r[2])) for r in self.fetch_tuples(q) if r[2]}

    def task_ids_by_ref(self, kind: str, item_refs: list[str]) -> dict[str, str]:
        t = self.t["tasks"]
        out: dict[str, str] = {}
        with self.read() as conn:
            for start in range(0, len(item_refs), 500):
                chunk = item_refs[start : start + 500]
                q = select(t.c.item_ref, t.c.task_id).where(t.c.kind == kind, t.c.item_ref.in_(chunk))
                out.update({r[0]: r[1] for r in conn.execute(q)})
        return out

    # -- adjudications ------------------------------------------------------------------------------
    def add_adjudication(self, adj: Adjudication) -> bool:
        a = self.t["adjudications"]
        with self.write() as conn:
            if conn.execute(select(a.c.seq).where(a.c.adjudication_id == adj.adjudication_id)).first():
                return False
            conn.execute(a.insert(), self._adjudication_row(adj))
        return True

    def _adjudication_row(self, adj: Adjudication) -> dict[str, Any]:
        return to_row(adj, ("values",))

    def _adjudication_from_row(self, r) -> Adjudication:
        return from_row(Adjudication, r)

    def adjudications(self, task_id: str | None = None) -> list[Adjudication]:
        return [self._adjudication_from_row(r) for r in self.rows("adjudications", ("seq",), task_id=task_id)]
