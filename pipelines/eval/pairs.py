"""The loop back to annotators: a run's (gold checklist item, inferred statement) pairs become
``preference_match`` tasks, with the judge's label recorded as a judge rater on each.

Pairs are sampled stratified by the judge's label (up to ``per_label`` of each of fully / partially /
not_covered, seeded), so the human matching set sees every kind of decision the judge made, not mostly
the common one. The judge's labels are label events of annotator ``judge.<model>`` with
``source="judge"``: agreement compares them with the human consensus and consensus never counts them
as votes. Annotators never see the judge's label (it is not in the task payload). Rerunning is
idempotent: pairs, tasks and judge events have stable ids.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.kinds.preference_match import KIND, TASK_KIND, item_ref
from prefkit.curation.annotation.overlap import apply_overlap, first_target
from prefkit.curation.store import EvalRun, PreferencePair
from prefkit.pipelines.eval.judge import ensure_judge_user
from prefkit.pipelines.eval.release import EvalInputError
from prefkit.schemas.common import content_hash, utcnow
from prefkit.schemas.curation import LabelEvent, Provenance

if TYPE_CHECKING:
    from prefkit.curation.project import Project
    from prefkit.curation.store import ProjectStore

LABELS = ("fully", "partially", "not_covered")


@dataclass
class PairsResult:
    run_id: str
    available: dict[str, int]
    sampled: dict[str, int]
    new_pairs: int
    new_tasks: int
    judge_events: int
    batch: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run_pairs(store: ProjectStore, run_id: str) -> tuple[EvalRun, list[dict[str, Any]]]:
    """Every distinct (gold item, inferred statement) pair a CUPID inference run judged."""
    run = store.eval.run(run_id)
    if run.benchmark != "cupid" or run.task != "inference":
        raise EvalInputError(
            f"run {run.run_id} is {run.benchmark} {run.task}; pairs come from a CUPID inference run"
        )
    if run.status != "complete":
        raise EvalInputError(f"run {run.run_id} has not finished; rerun its command to resume it")
    pairs: dict[str, dict[str, Any]] = {}
    for item in store.eval.items(run.run_id):
        pred = item.record.get("prediction") or {}
        statement = (pred.get("inferred") or "").strip()
        for lab in (pred.get("labels") or {}).get("gold", []):
            pair_id = "pair_" + content_hash([lab["item"], statement])
            pairs.setdefault(
                pair_id,
                {
                    "pair_id": pair_id,
                    "checklist_item": lab["item"],
                    "candidate": statement,
                    "instance_id": item.item_key,
                    "judge": lab["coverage"],
                },
            )
    return run, sorted(pairs.values(), key=lambda p: p["pair_id"])


def pairs_from_run(
    project: Project,
    run_id: str,
    per_label: int = 50,
    seed: int = 0,
    overlap: int | None = None,
    batch: str | None = None,
) -> PairsResult:
    """Sample a run's pairs by judge label into tasks and record the judge's labels on them."""
    store = project.store
    run, pairs = run_pairs(store, run_id)
    if per_label < 1:
        raise EvalInputError("--per-label must be at least 1")
    rng = random.Random(f"{seed}:{run.run_id}")
    chosen: list[dict[str, Any]] = []
    available = {lab: sum(1 for p in pairs if p["judge"] == lab) for lab in LABELS}
    for lab in LABELS:
        group = [p for p in pairs if p["judge"] == lab]
        rng.shuffle(group)
        chosen += group[:per_label]
    if run.judge_model is None:
        raise EvalInputError(
            f"run {run.run_id} recorded no judge model: it has no judge labels to turn into tasks"
        )
    annotator = ensure_judge_user(store, run.judge_model)  # before any pair, so nothing is left half-way
    batch = batch or f"eval-{run.run_id}"
    origin = f"eval:{run.run_id}"
    rows = [
        PreferencePair(
            pair_id=p["pair_id"],
            checklist_item=p["checklist_item"],
            candidate=p["candidate"],
            origin=origin,
            instance_id=p["instance_id"],
            meta={"run_id": run.run_id, "judge_model": run.judge_model},
        )
        for p in chosen
    ]
    new_pairs = store.content.add_preference_pairs(
        rows, Provenance(source="eval.pairs_from_run", model=run.judge_model)
    )
    kind = TASK_KIND
    k = overlap or project.config.annotation.overlap
    wanted = {item_ref(p["pair_id"]) for p in chosen}
    built = [t for t in kind.build_tasks(store, first_target(k), batch) if t.item_ref in wanted]
    new_tasks = store.labels.add_tasks(apply_overlap(built, k))
    now = utcnow()
    events = []
    for p in chosen:
        task_id = kind.task_id(item_ref(p["pair_id"]))
        values = {"coverage": p["judge"]}
        events.append(
            LabelEvent(
                event_id="judge_" + content_hash([annotator, task_id, values], 24),
                task_id=task_id,
                kind=KIND,
                annotator=annotator,
                values=values,
                source="judge",
                created_at=now,
            )
        )
    written = store.labels.append_events(events)
    return PairsResult(
        run.run_id,
        available,
        {lab: sum(1 for p in chosen if p["judge"] == lab) for lab in LABELS},
        new_pairs,
        new_tasks,
        written,
        batch,
    )
