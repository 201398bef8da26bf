"""``prefkit suggest``: suggestions for every task of a kind, through the LLM layer, stored as
suggestion records (``store.suggestions``) tied to the model, the prompt hash and the run — never as labels.

A run's id is derived from the kind, model, backend, prompt hash, seed and settings, so running the
same command again resumes it: tasks with its suggestion are skipped, the calls of the rest are
answered from the layer's cache where they were made, and failed calls are asked again. Offline
answers are marked offline in the run (and in every exposure the app records).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, LabelError, declared_part, get_kind
from prefkit.curation.store import Suggestion, SuggestionRun
from prefkit.pipelines.llm import Estimate
from prefkit.pipelines.suggestions.kinds import Suggester
from prefkit.schemas.common import PrefkitError, utcnow

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore
    from prefkit.pipelines.llm import LLMLayer
    from prefkit.schemas.curation import AnnotationTask

#: The model name of a run that calls no model (memory verification by the evidence check alone).
EVIDENCE_CHECK = "evidence-check"


class SuggestError(PrefkitError):
    """``prefkit suggest`` cannot run (a kind without suggestions, no tasks)."""


@dataclass
class SuggestReport:
    kind: str
    run_id: str
    model: str
    backend: str
    offline: bool
    tasks: int = 0
    done_before: int = 0
    suggested: int = 0
    failed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "failed": list(self.failed)}


def _suggester(kind: str) -> Suggester:
    """The suggester ``kind`` names (``TaskKind.suggestions``); a kind naming none is one line."""
    found = declared_part(get_kind(kind), "suggestions")
    if found is None:
        with_ = [n for n in TASK_KIND_REGISTRY if TASK_KIND_REGISTRY[n].suggestions]
        raise SuggestError(f"task kind {kind!r} has no suggestions; kinds with: {', '.join(sorted(with_))}")
    return found


def make_run(layer: LLMLayer, kind: str, judge: bool) -> SuggestionRun:
    """The run ``layer`` would make for ``kind`` (its id is the resume key)."""
    s = _suggester(kind)
    uses_llm = s.uses_llm(judge)
    model = layer.settings.model_for("judge") if uses_llm else EVIDENCE_CHECK
    backend = layer.backend.name if uses_llm else EVIDENCE_CHECK
    offline = bool(layer.backend.offline) if uses_llm else False
    settings = {"judge": judge}
    seed = layer.seed if uses_llm else 0
    p_hash = s.prompt_hash(kind, judge)
    return SuggestionRun(
        SuggestionRun.make_id(kind, model, backend, p_hash, seed, settings),
        kind,
        model,
        backend,
        offline,
        p_hash,
        seed,
        settings,
    )


def pending(
    store: ProjectStore, run: SuggestionRun, limit: int | None = None
) -> tuple[list[AnnotationTask], int]:
    """``(tasks still without the run's suggestion, how many have it)``; gold items included (the
    anchoring rate is measured on them)."""
    tasks = store.labels.tasks(kind=run.kind)
    if not tasks:
        raise SuggestError(f"no {run.kind} tasks in the project (prefkit tasks create --kind {run.kind})")
    done = store.suggestions.done_tasks(run.run_id)
    todo = [t for t in tasks if t.task_id not in done]
    return (todo[:limit] if limit else todo), len(tasks) - len(todo)


def estimate(
    store: ProjectStore, layer: LLMLayer, kind: str, judge: bool = False, limit: int | None = None
) -> Estimate:
    """The price of the calls a run would make now (answers already cached cost nothing)."""
    run = make_run(layer, kind, judge)
    todo, _ = pending(store, run, limit)
    s = _suggester(kind)
    return layer.estimate([r for t in todo for r in s.requests(t, judge)])


def suggest(
    store: ProjectStore, layer: LLMLayer, kind: str, judge: bool = False, limit: int | None = None
) -> SuggestReport:
    """Make and store the suggestions of ``kind``'s tasks that the run has not made yet."""
    s = _suggester(kind)
    run = make_run(layer, kind, judge)
    todo, before = pending(store, run, limit)
    report = SuggestReport(kind, run.run_id, run.model, run.backend, run.offline, before + len(todo), before)
    per_task = [s.requests(t, judge) for t in todo]
    flat = [r for rs in per_task for r in rs]
    answers = layer.run(flat, desc=f"suggest {kind}") if flat else []
    made, at, now = [], 0, utcnow()
    kind_ = get_kind(kind)
    for task, reqs in zip(todo, per_task, strict=True):
        mine, at = answers[at : at + len(reqs)], at + len(reqs)
        bad = next((a for a in mine if not a.ok), None)
        if bad is not None:
            report.failed.append(f"{task.item_ref}: {bad.error}")
            continue
        values, detail = s.values(task, mine, judge)
        try:
            values = kind_.validate(values, task)
        except LabelError as exc:
            report.failed.append(f"{task.item_ref}: {exc}")
            continue
        made.append(
            Suggestion(
                Suggestion.make_id(run.run_id, task.task_id),
                run.run_id,
                task.task_id,
                kind,
                values,
                detail,
                created_at=now,
            )
        )
    report.suggested = store.suggestions.add(run, made)
    return report
