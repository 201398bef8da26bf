"""Offline answers for suggestion prompts: deterministic, network-free, by word overlap.

Crude on purpose: an offline suggestion exercises the whole path (store, app, Label Studio, the
arms' statistics) and is marked offline in its run; it is not a model's judgement.
"""

from __future__ import annotations

import random

from prefkit.pipelines.eval.offline import overlap, words
from prefkit.pipelines.llm import register_offline
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.assist import (
    CoverageSuggestion,
    ExpressedDecision,
    ExpressedSuggestion,
    MemorySupport,
    TaskQcJudgement,
)


def _coverage(share: float) -> str:
    return "fully" if share >= 0.5 else "partially" if share >= 0.2 else "not_covered"


@register_offline(CoverageSuggestion)
def offline_coverage(request: LLMRequest, rng: random.Random) -> CoverageSuggestion:
    ctx = request.offline_context
    share = overlap(ctx["checklist_item"], ctx["candidate"])
    return CoverageSuggestion(reason=f"word overlap {share:.2f} (offline)", coverage=_coverage(share))


@register_offline(ExpressedSuggestion)
def offline_expressed(request: LLMRequest, rng: random.Random) -> ExpressedSuggestion:
    ctx = request.offline_context
    items = []
    for i, question in enumerate(ctx["checklist"]):
        turns = [t["index"] for t in ctx["turns"] if overlap(question, t["content"]) >= 0.25]
        items.append(ExpressedDecision(item=i, expressed=bool(turns), evidence=turns))
    return ExpressedSuggestion(items=items)


@register_offline(MemorySupport)
def offline_memory(request: LLMRequest, rng: random.Random) -> MemorySupport:
    ctx = request.offline_context
    said = " ".join(t["content"] for t in ctx["turns"])
    share = overlap(ctx["memory"], said)
    return MemorySupport(reason=f"word overlap {share:.2f} (offline)", supported=share >= 0.3)


@register_offline(TaskQcJudgement)
def offline_task_qc(request: LLMRequest, rng: random.Random) -> TaskQcJudgement:
    ctx = request.offline_context
    memory = words(ctx["memory"])
    share = len(memory & words(ctx["generated"])) / len(memory) if memory else 0.0
    return TaskQcJudgement(
        leak_reason=f"{share:.2f} of the memory's words in the text (offline)",
        leaks=share >= 0.6,
        answer_reason="not checked offline",
        answer_correct=True,
    )
