"""Work: the tasks per kind and batch as a maintainer runs them. The one implementation behind
``prefkit tasks create / release / gold mark / gold unmark`` and ``prefkit batches open / close`` and
the app's Work page: both call these functions, so both refuse the same things in the same words.

Each change is an audited event (``store.audit``: who, when, what; ``prefkit audit list``), recorded
once the change is made (a refused change records nothing). The ``actor`` is the maintainer signed
in to the app, or ``shell:<login>`` for a command.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_admin import TaskFileError, create_tasks
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.store import IdleQueue, ReleasedAssignment
from prefkit.schemas.config import OverlapRange

if TYPE_CHECKING:
    from prefkit.curation.project import Project


@dataclass(frozen=True, slots=True)
class WorkRow:
    """One (kind, batch) of the Work page: its tasks, overlap, progress and stale queues."""

    kind: str
    batch: str
    status: str  # open / closed
    tasks: int
    gold: int
    overlap: str  # "3" (fixed) or "2..4 adaptive (now 2-3)"
    assigned: int  # slots handed to annotators so far
    complete: int  # tasks with all the labels their overlap asks for
    stale: int  # open items in queues idle past [annotation] stale_after_hours
    created_at: str  # when the batch was made


#: What *complete* counts (``store.progress.task_summaries``), said beside the number wherever it is shown.
COMPLETE = (
    "Complete: tasks with as many people's labels as their overlap, however the labels arrived "
    "(this app, prefkit labels import, Label Studio); skips and flags do not count."
)


def overlap_text(low: int, high: int, lo_bound: int | None, hi_bound: int | None) -> str:
    """How the Work page and ``tasks list`` name a batch's overlap."""
    if lo_bound is None or hi_bound is None:
        return str(low) if low == high else f"{low}-{high}"
    now = str(low) if low == high else f"{low}-{high}"
    return f"{lo_bound}..{hi_bound} adaptive (now {now})"


def _hours_ago(hours: float) -> str:
    return (datetime.now(UTC) - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def stale_queues(project: Project, hours: float | None = None) -> list[IdleQueue]:
    """The queues :func:`hand_back` would release now: idle ``hours`` (default ``[annotation]
    stale_after_hours``, where 0 means never: then none are stale)."""
    if hours is None:
        hours = workflow.stale_after_hours(project)
        if hours <= 0:
            return []
    return project.store.stale.idle_queues(_hours_ago(hours))


def rows(project: Project, kind: str | None = None) -> list[WorkRow]:
    """The one listing of the work: per kind and batch (only ``kind``'s, if given), the batch's status,
    tasks, gold, overlap, assigned slots, complete tasks, stale items and when the batch was made.
    ``prefkit tasks status`` prints it whole, ``tasks list`` and ``batches list`` are views of it
    (:func:`task_list`, :func:`batch_list`), and the app's Work page shows it."""
    store = project.store
    summaries = store.progress.task_summaries(kind)  # first: a batch is stored with its first tasks
    batches = {b.batch_id: b for b in store.labels.batches()}
    overlaps = {(o.kind, o.batch_id): o for o in store.submits.overlap_ranges()}
    stale: dict[tuple[str, str], int] = {}
    for q in stale_queues(project):
        for batch, n in q.by_batch:
            stale[(q.kind, batch)] = stale.get((q.kind, batch), 0) + n
    out = []
    for s in summaries:
        o, b = overlaps.get((s.kind, s.batch_id)), batches[s.batch_id]
        text = overlap_text(o.low, o.high, o.min, o.max) if o else "–"
        counts = (s.tasks, s.gold, text, s.assigned, s.complete, stale.get((s.kind, s.batch_id), 0))
        out.append(WorkRow(s.kind, s.batch_id, b.status, *counts, b.created_at))
    return out


def task_list(project: Project, kind: str | None = None) -> list[dict[str, Any]]:
    """``prefkit tasks list``: the counts of :func:`rows` per kind and batch (the batch as ``batch_id``)."""
    keys = ("kind", "batch_id", "tasks", "gold", "assigned", "complete")
    return [{k: getattr(r, k.removesuffix("_id")) for k in keys} for r in rows(project, kind)]


def batch_list(project: Project) -> list[dict[str, Any]]:
    """``prefkit batches list``: :func:`rows` per batch, oldest first: the kinds it holds (comma-separated),
    its status and when it was made (a batch is made with its first tasks, so each has a row)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows(project):
        made = {"batch_id": r.batch, "kinds": [], "status": r.status, "created_at": r.created_at}
        out.setdefault(r.batch, made)["kinds"].append(r.kind)
    listed = sorted(out.values(), key=lambda b: (b["created_at"], b["batch_id"]))
    return [{**b, "kinds": ", ".join(b["kinds"])} for b in listed]


def parse_overlap(project: Project, text: str | None) -> int | OverlapRange | None:
    """``"3"`` or ``"2..4"`` (None: the config's); a range keeps the config's other adaptive settings
    (audit share, confidence, gold items)."""
    if text is None or not str(text).strip():
        return None
    k = OverlapRange.parse(str(text))
    configured = project.config.annotation.overlap
    if isinstance(k, OverlapRange) and isinstance(configured, OverlapRange):
        k = OverlapRange(**{**configured.model_dump(), "min": k.min, "max": k.max})
    return k


def create(
    project: Project,
    actor: str,
    kind: str,
    overlap: str | None = None,
    batch: str = "default",
    gold_rate: float | None = None,
    items: Path | None = None,
) -> int:
    """Build tasks of ``kind`` into ``batch`` with ``overlap`` ("3", "2..4"; default the config's)
    (a declared kind's from the ``items`` file: ``prefkit tasks import``); returns how many were new.
    Refused: an unknown kind, an overlap out of 1..100 or not a number or range, a gold rate outside
    [0, 1), an empty batch name."""
    get_kind(kind)
    if not batch or not batch.strip():
        raise TaskFileError("give the batch a name")
    k = parse_overlap(project, overlap)
    n = create_tasks(project, kind, overlap=k, batch=batch.strip(), gold_rate=gold_rate, items=items)
    action = "tasks.create" if items is None else "tasks.import"
    project.store.audit.record(
        actor,
        action,
        f"{kind} / {batch.strip()}",
        {"new": n, "overlap": overlap or "config", "gold_rate": gold_rate},
    )
    return n


def hand_back(
    project: Project,
    actor: str,
    hours: float | None = None,
    annotator: str | None = None,
    kind: str | None = None,
) -> list[ReleasedAssignment]:
    """Hand items back to the pool from queues idle ``hours`` (see :func:`workflow.release_stale`);
    the annotators keep every label they gave. Audited when anything was handed back."""
    released = workflow.release_stale(project, hours=hours, annotator=annotator, kind=kind)
    if released:
        who = sorted({r.annotator for r in released})
        project.store.audit.record(
            actor,
            "tasks.release",
            ", ".join(who),
            {"items": len(released), "kind": kind, "idle_hours": hours},
        )
    return released


def parse_answer(text: str) -> dict[str, Any]:
    """A gold answer typed as JSON (``{"coverage": "fully"}``), or one clear line."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"the answer is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(value, dict):
        raise TaskFileError('the answer is a JSON object, e.g. {"coverage": "fully"}')
    return value


def mark_gold(project: Project, actor: str, task_id: str, answer: dict[str, Any]) -> dict[str, Any]:
    """Make a task a gold item with its known ``answer`` (validated against the task's kind, as a
    label would be). Returns the answer as stored."""
    task = project.store.labels.task(task_id)
    checked = get_kind(task.kind).validate(answer, task)
    project.store.labels.set_gold(task_id, checked)
    project.store.audit.record(actor, "gold.mark", task_id, {"kind": task.kind, "answer": checked})
    return checked


def unmark_gold(project: Project, actor: str, task_id: str) -> None:
    """Make a gold item a regular task again (labels already scored against it keep their events)."""
    task = project.store.labels.task(task_id)
    if not task.is_gold:
        raise TaskFileError(f"task {task_id} is not a gold item")
    project.store.labels.set_gold(task_id, None)
    project.store.audit.record(actor, "gold.unmark", task_id, {"kind": task.kind})


def set_batch_status(project: Project, actor: str, batch: str, status: str) -> None:
    """Open a batch (its tasks are handed out) or close it (they leave every queue; labels stay)."""
    project.store.labels.set_batch_status(batch, status)
    project.store.audit.record(actor, f"batch.{'open' if status == 'open' else 'close'}", batch)
