"""Running models on CUPID: preference inference and response generation, each scored by the judge.

The evaluated model (role ``assistant``) sees the prior sessions' dialogue text and the current request
only — the request builders take messages and the request, never the hidden factor, preference or
checklist fields (the judge, role ``judge``, does see the gold). Oracle settings for analysis:
``relevant`` shows only the sessions that share the current context factor; ``gold`` gives the gold
preference to the generating model (an upper bound). Every call goes through the LLM layer, so a rerun
or a resume after ``kill -9`` repeats no completed call. This module never writes SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from prefkit.pipelines.eval.cupid_metrics import key_name, with_fields
from prefkit.pipelines.eval.prompting import build_request
from prefkit.pipelines.eval.release import CupidKey, EvalInputError, relevant_positions
from prefkit.pipelines.llm.costs import Estimate
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.cupid import BenchmarkInstance
from prefkit.schemas.evaluation import (
    CupidLabels,
    CupidPrediction,
    InferredItems,
    InferredPreference,
    ItemLabel,
    PairCoverage,
    ScoredAnswer,
)

Task = Literal["inference", "generation"]
Oracle = Literal["none", "relevant", "gold"]
TASKS: tuple[str, ...] = ("inference", "generation")
TEMPLATES: dict[str, tuple[str, ...]] = {
    "inference": ("cupid_infer", "cupid_match_gold", "cupid_match_inferred"),
    "generation": ("cupid_generate", "cupid_judge_generation"),
}
STAGE = "eval.cupid"


@dataclass(frozen=True)
class CupidOptions:
    task: Task = "inference"
    oracle: Oracle = "none"
    protocol: str = "cupid-official"  # see protocols.py; "prefkit" is this module's own pipeline
    prompts: Path | None = None  # a CUPID checkout whose prompt files replace prefkit's (official protocols)

    def check(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown CUPID task {self.task!r}")
        if self.oracle == "gold" and self.task != "generation":
            raise EvalInputError("--oracle gold gives the gold preference to the model: generation only")
        if self.oracle == "gold" and self.protocol != "prefkit":
            raise EvalInputError("--oracle gold is prefkit's analysis: use it with --protocol prefkit")
        if self.protocol == "cupid-prefmatcher" and self.task == "generation":
            raise EvalInputError(
                "--protocol cupid-prefmatcher: PrefMatcher only matches preferences; judge generation "
                "with --protocol cupid-official"
            )
        if self.prompts is not None and self.protocol == "prefkit":
            raise EvalInputError("--prompts loads CUPID's own prompt files: use it with a cupid-* protocol")


# -- what the evaluated model sees -----------------------------------------------------------------------
def history(inst: BenchmarkInstance, oracle: str) -> list[list[dict[str, str]]]:
    """The prior sessions as dialogue text only (role + content), all or only the relevant ones."""
    chosen: Sequence[int] = range(len(inst.prior_interactions))
    if oracle == "relevant":
        chosen = relevant_positions(inst)
    return [
        [{"role": m.role, "content": m.content} for m in inst.prior_interactions[i].dialogue] for i in chosen
    ]


def infer_request(key: CupidKey, inst: BenchmarkInstance, oracle: str) -> LLMRequest:
    context = {"sessions": history(inst, oracle), "request": inst.current_request}
    return build_request(
        f"{STAGE}.infer",
        key_name(key),
        "assistant",
        "cupid_infer",
        InferredPreference,
        context,
        max_tokens=120,
    )


def generate_request(key: CupidKey, inst: BenchmarkInstance, oracle: str) -> LLMRequest:
    context = {
        "sessions": history(inst, oracle),
        "request": inst.current_request,
        "preference": inst.current_contextual_preference if oracle == "gold" else "",
    }
    return build_request(
        f"{STAGE}.generate", key_name(key), "assistant", "cupid_generate", None, context, temperature=0.7
    )


# -- what the judge sees ----------------------------------------------------------------------------------
def match_requests(key: CupidKey, inst: BenchmarkInstance, statement: str) -> list[LLMRequest]:
    """One request per (gold checklist item, statement) pair, and one decomposing the statement."""
    name = key_name(key)
    out = [
        build_request(
            f"{STAGE}.match_gold",
            f"{name}#gold{i}",
            "judge",
            "cupid_match_gold",
            PairCoverage,
            {"item": item, "statement": statement},
            max_tokens=150,
        )
        for i, item in enumerate(inst.current_checklist)
    ]
    out.append(
        build_request(
            f"{STAGE}.match_inferred",
            f"{name}#inferred",
            "judge",
            "cupid_match_inferred",
            InferredItems,
            {"gold": inst.current_contextual_preference, "statement": statement},
            max_tokens=300,
        )
    )
    return out


def judge_generation_request(key: CupidKey, inst: BenchmarkInstance, response: str) -> LLMRequest:
    context = {
        "request": inst.current_request,
        "preference": inst.current_contextual_preference,
        "checklist": list(inst.current_checklist),
        "response": response,
    }
    return build_request(
        f"{STAGE}.judge_generation",
        key_name(key),
        "judge",
        "cupid_judge_generation",
        ScoredAnswer,
        context,
        max_tokens=200,
    )


# -- running ------------------------------------------------------------------------------------------------
def run_model(
    layer, instances: Mapping[CupidKey, BenchmarkInstance], options: CupidOptions
) -> dict[CupidKey, CupidPrediction]:
    """The evaluated model's answer per instance (a failed call is a prediction with ``error``)."""
    keys = sorted(instances)
    if options.task == "inference":
        requests = [infer_request(k, instances[k], options.oracle) for k in keys]
    else:
        requests = [generate_request(k, instances[k], options.oracle) for k in keys]
    out: dict[CupidKey, CupidPrediction] = {}
    for key, r in zip(keys, layer.run(requests, desc=f"{STAGE}.{options.task}"), strict=True):
        if not r.ok:
            out[key] = CupidPrediction(persona_id=key[0], instance_type=key[1], error=r.error or "failed")
        elif options.task == "inference":
            out[key] = CupidPrediction(persona_id=key[0], instance_type=key[1], inferred=r.parsed.preference)
        else:
            out[key] = CupidPrediction(persona_id=key[0], instance_type=key[1], response=r.text or "")
    return out


def judge(
    layer,
    instances: Mapping[CupidKey, BenchmarkInstance],
    preds: Mapping[CupidKey, CupidPrediction],
    task: str,
) -> tuple[dict[CupidKey, CupidPrediction], int]:
    """Predictions with judge labels (inference) or scores (generation) wherever they lack them.
    Returns the predictions and how many judge calls failed (those instances stay unlabelled)."""
    out = dict(preds)
    todo: list[tuple[CupidKey, list[LLMRequest]]] = []
    for key, pred in sorted(preds.items()):
        if pred.error is not None:
            continue
        if task == "inference" and (pred.inferred or "").strip() and pred.labels is None:
            todo.append((key, match_requests(key, instances[key], pred.inferred or "")))
        elif task == "generation" and (pred.response or "").strip() and pred.score is None:
            todo.append((key, [judge_generation_request(key, instances[key], pred.response or "")]))
    flat = [r for _k, reqs in todo for r in reqs]
    responses = iter(layer.run(flat, desc=f"{STAGE}.judge")) if flat else iter(())
    failed = 0
    for key, reqs in todo:
        answers = [next(responses) for _ in reqs]
        bad = next((a for a in answers if not a.ok), None)
        if bad is not None:
            failed += 1
            out[key] = with_fields(out[key], {"error": f"judge: {bad.error}"})
        elif task == "inference":
            inst = instances[key]
            labels = CupidLabels(
                gold=[
                    ItemLabel(item=item, coverage=a.parsed.coverage)
                    for item, a in zip(inst.current_checklist, answers[:-1], strict=True)
                ],
                inferred=[ItemLabel(item=i.item, coverage=i.coverage) for i in answers[-1].parsed.items],
            )
            out[key] = with_fields(out[key], {"labels": labels})
        else:
            out[key] = with_fields(out[key], {"score": answers[0].parsed.score})
    return out, failed


def estimate(layer, instances: Mapping[CupidKey, BenchmarkInstance], options: CupidOptions) -> Estimate:
    """Price a run before any call (see :func:`estimate_requests`)."""
    return layer.estimate(estimate_requests(instances, options))


def estimate_requests(
    instances: Mapping[CupidKey, BenchmarkInstance], options: CupidOptions
) -> list[LLMRequest]:
    """The requests of a run: the model's exactly; the judge's with the gold preference standing in
    for the answer it will judge (one pair per checklist item plus one decomposition)."""
    keys = sorted(instances)
    requests: list[LLMRequest] = []
    for k in keys:
        inst = instances[k]
        if options.task == "inference":
            requests.append(infer_request(k, inst, options.oracle))
            requests += match_requests(k, inst, inst.current_contextual_preference)
        else:
            requests.append(generate_request(k, inst, options.oracle))
            requests.append(judge_generation_request(k, inst, inst.current_contextual_preference))
    return requests
