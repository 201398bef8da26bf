"""Maintainer operations on tasks: create them from project content, add preference pairs and gold
answers from JSONL files.

Files are read through :mod:`prefkit.schemas.reading` and validated whole before anything is written; a
problem (a repeated pair or task included) is one :class:`TaskFileError` naming the file, the line and
the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.assignment import gold_rate_key
from prefkit.curation.annotation.declared import DeclaredKind
from prefkit.curation.annotation.guidelines import write_default_guidelines
from prefkit.curation.annotation.overlap import adaptive_key, apply_overlap, first_target
from prefkit.curation.annotation.task_kinds import LabelError, feeding, get_kind
from prefkit.curation.store import PreferencePair
from prefkit.schemas.common import Contract, InputError, PrefkitError, content_hash
from prefkit.schemas.config import MAX_OVERLAP, OverlapRange
from prefkit.schemas.curation import AnnotationTask, Provenance
from prefkit.schemas.reading import check_unique, read_jsonl, validate_row
from pydantic import Field

if TYPE_CHECKING:
    from prefkit.curation.project import Project
    from prefkit.curation.store import ProjectStore


class TaskFileError(PrefkitError):
    """A pairs or gold file is malformed: the message names file, line and field."""


class PairLine(Contract):
    """One line of ``prefkit tasks pairs import``."""

    checklist_item: str = Field(min_length=1, description="The gold checklist item (a yes/no question).")
    candidate: str = Field(min_length=1, description="The candidate preference statement.")
    pair_id: str | None = Field(default=None, description="Stable id; derived from the texts when absent.")
    instance_id: str | None = Field(default=None, description="CUPID instance the pair comes from, if any.")
    origin: str = Field(default="import", description="Where the candidate came from (model name, file).")
    meta: dict[str, Any] = Field(default_factory=dict, description="Anything else to keep with the pair.")
    gold: dict[str, Any] | None = Field(
        default=None,
        description="A known answer, e.g. {'coverage': 'fully'}: the task built from the pair becomes a gold item.",
    )


class GoldLine(Contract):
    """One line of ``prefkit tasks gold import``: a task (by id, or kind + item_ref) and its answer."""

    task_id: str | None = Field(default=None, description="The task's id.")
    kind: str | None = Field(default=None, description="Task kind, with item_ref instead of task_id.")
    item_ref: str | None = Field(default=None, description="What the task is about, e.g. 'pair:<id>'.")
    answer: dict[str, Any] = Field(description="The known label values, valid for the task kind.")


def _lines(path: Path, model: type[Contract]) -> list[tuple[int, Any]]:
    try:
        return [(n, validate_row(model, value, f"{path}:{n}")) for n, value in read_jsonl(path)]
    except InputError as exc:
        raise TaskFileError(str(exc)) from None


def import_pairs(project: Project, path: Path) -> int:
    """Add preference pairs for ``preference_match`` tasks; returns how many were new."""
    rows, ids = [], []
    for lineno, line in _lines(Path(path), PairLine):
        if line.gold is not None:
            try:  # the answer of the kind the pairs' labels decide (preference_match)
                for kind in feeding("matching"):
                    kind.validate(line.gold, None)  # type: ignore[arg-type]
            except LabelError as exc:
                raise TaskFileError(f"{path}:{lineno}: field gold.{exc}") from None
        pair_id = line.pair_id or "pair_" + content_hash([line.checklist_item, line.candidate])
        ids.append((lineno, pair_id))
        rows.append(
            PreferencePair(
                pair_id=pair_id,
                checklist_item=line.checklist_item,
                candidate=line.candidate,
                origin=line.origin,
                instance_id=line.instance_id,
                meta={**line.meta, "gold_answer": line.gold} if line.gold else line.meta or None,
            )
        )
    try:
        check_unique(ids, Path(path), "pair_id")
    except InputError as exc:
        raise TaskFileError(f"{exc} (an absent pair_id is derived from the two texts)") from None
    return project.store.content.add_preference_pairs(rows, Provenance(source="import.pairs"))


def create_tasks(
    project: Project,
    kind: str,
    overlap: int | OverlapRange | None = None,
    batch: str = "default",
    gold_rate: float | None = None,
    items: Path | None = None,
) -> int:
    """Build tasks of ``kind`` from what the project holds (a declared kind: from the ``items`` file,
    :func:`item_tasks`); returns how many were new.

    ``overlap``: a number, or an :class:`OverlapRange` (adaptive overlap, :mod:`.overlap`); default
    ``[annotation] overlap``. ``gold_rate`` (0..1) is the share of gold items mixed into each
    annotator's queue for this kind."""
    task_kind = get_kind(kind)
    if items is not None and not (
        isinstance(task_kind, DeclaredKind) and not task_kind.declaration.hooks.items
    ):
        raise TaskFileError(
            f"task kind {kind!r} is built from the project's content: build its tasks with tasks create"
        )
    k = project.config.annotation.overlap if overlap is None else overlap
    if isinstance(k, int) and not 1 <= k <= MAX_OVERLAP:
        raise TaskFileError(f"overlap {k}: give 1 to {MAX_OVERLAP} annotators per item")
    if gold_rate is not None:
        if not 0 <= gold_rate < 1:
            raise TaskFileError("gold rate must be in [0, 1)")
        project.store.set_meta(gold_rate_key(kind), str(gold_rate))
    built = (
        task_kind.build_tasks(project.store, first_target(k), batch)
        if items is None
        else item_tasks(task_kind, Path(items), first_target(k), batch)  # type: ignore[arg-type]
    )
    tasks = apply_overlap(built, k)
    was = (
        {t.item_ref: (t.payload, t.gold_answer) for t in project.store.labels.tasks(kind=kind)}
        if items
        else {}
    )
    changed = [
        t.item_ref
        for t in tasks
        if was.get(t.item_ref, (t.payload, t.gold_answer)) != (t.payload, t.gold_answer)
    ]
    if changed:
        raise TaskFileError(
            f"{items}: {len(changed)} item(s) already in the project with other content: "
            f"{', '.join(changed[:5])}{', ...' * (len(changed) > 5)} (an import only adds items: give new ids)"
        )
    if isinstance(k, OverlapRange):
        project.store.set_meta(adaptive_key(kind), "1")
    new = project.store.labels.add_tasks(tasks)
    _mark_known_answers(project, kind)
    # A kind installed after the project was made (a plugin) gets its default guidelines now.
    write_default_guidelines(project.guidelines_dir, [kind])
    return new


def item_tasks(kind: DeclaredKind, path: Path, overlap: int, batch: str) -> list[AnnotationTask]:
    """The tasks of a declared kind's item file, one a line, checked whole (a missing or extra key, a
    wrong type, a duplicate id: one :class:`TaskFileError` naming file, line and key)."""
    tasks, ids = [], []
    try:
        lines = read_jsonl(path)
    except InputError as exc:
        raise TaskFileError(str(exc)) from None
    for n, line in lines:
        if not isinstance(line, dict):
            raise TaskFileError(f"{path}:{n}: expected a JSON object, got {type(line).__name__}")
        try:
            item_id, payload, gold = kind.item(line, f"{path}:{n}")
        except LabelError as exc:
            raise TaskFileError(str(exc)) from None
        ids.append((n, item_id))
        task = kind.make_task(item_id, payload, overlap, batch)
        task.is_gold, task.gold_answer = gold is not None, gold
        tasks.append(task)
    try:
        check_unique(ids, path, "id")
    except InputError as exc:
        raise TaskFileError(str(exc)) from None
    return tasks


def _mark_known_answers(project: Project, kind: str) -> None:
    """Tasks whose answer the kind knows up front (``TaskKind.known_answers``) become gold items."""
    known = get_kind(kind).known_answers(project.store)
    for ref, task_id in project.store.labels.task_ids_by_ref(kind, list(known)).items():
        task = project.store.labels.task(task_id)
        if not task.is_gold:
            project.store.labels.set_gold(task_id, get_kind(kind).validate(known[ref], task))


def import_gold(project: Project, path: Path) -> int:
    """Set known answers from a JSONL file; each answer is validated against its task. Returns count."""
    path = Path(path)
    resolved: list[tuple[str, dict[str, Any]]] = []
    lines: list[int] = []
    for lineno, line in _lines(path, GoldLine):
        lines.append(lineno)
        task_id = line.task_id
        if task_id is None:
            if not (line.kind and line.item_ref):
                raise TaskFileError(f"{path}:{lineno}: give task_id, or kind and item_ref")
            try:
                get_kind(line.kind)
            except LabelError as exc:
                raise TaskFileError(f"{path}:{lineno}: field kind: {exc}") from None
            task_id = project.store.labels.task_ids_by_ref(line.kind, [line.item_ref]).get(line.item_ref)
            if task_id is None:
                raise TaskFileError(f"{path}:{lineno}: no {line.kind} task for item_ref {line.item_ref!r}")
        try:
            task = project.store.labels.task(task_id)
            resolved.append((task_id, get_kind(task.kind).validate(line.answer, task)))
        except LabelError as exc:
            raise TaskFileError(f"{path}:{lineno}: field answer.{exc}") from None
        except PrefkitError as exc:
            raise TaskFileError(f"{path}:{lineno}: {exc}") from None
    try:
        check_unique(((n, task_id) for n, (task_id, _) in zip(lines, resolved, strict=True)), path, "task_id")
    except InputError as exc:
        raise TaskFileError(str(exc)) from None
    for task_id, answer in resolved:
        project.store.labels.set_gold(task_id, answer)
    return len(resolved)


def task_rows(store: ProjectStore, kind: str | None = None, batch: str | None = None) -> list[dict[str, Any]]:
    """The project's tasks as rows of ``prefkit tasks export``: what a label file needs to name an item
    (``task_kind``, ``item_id`` = the item reference, ``task_id``) and what the annotator sees
    (``payload``: for memory_verify, the candidates with the ``key`` each decision names)."""
    if kind is not None:
        get_kind(kind)  # an unknown kind is refused by name, not exported as nothing
    return [
        {
            "task_id": t.task_id,
            "task_kind": t.kind,
            "item_id": t.item_ref,
            "batch": t.batch,
            "overlap": t.overlap,
            "is_gold": t.is_gold,
            "payload": t.payload,
        }
        for t in store.labels.tasks(kind=kind, batch=batch)
    ]
