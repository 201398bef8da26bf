"""Offline answers for evaluation prompts: deterministic, network-free, for demos and tests.

The evaluated "model" restates something the user said earlier (it sees only what the prompt shows);
the "judge" labels by word overlap. Both are crude on purpose: offline runs exercise the whole harness
and are marked offline in every result, never mistaken for a model's score.
"""

from __future__ import annotations

import json
import random
import re

from prefkit.pipelines.llm import register_offline
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.evaluation import (
    MAX_INFERENCE_WORDS,
    CoveredItem,
    GroundedAnswer,
    InferredItems,
    InferredPreference,
    MemoryList,
    PairCoverage,
    PredictedMemory,
    RetrievalAnswer,
    ScoredAnswer,
)

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP_WORDS = (
    "a an and are as at be by does do for from has have i in is it its me my of on or that the this to "
    "was with you your reply prefers prefer user"
)
_STOP = frozenset(_STOP_WORDS.split(" "))


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall((text or "").lower()) if w not in _STOP and len(w) > 2}


def overlap(a: str, b: str) -> float:
    wa, wb = words(a), words(b)
    return len(wa & wb) / len(wa) if wa else 0.0


def _coverage(share: float) -> str:
    return "fully" if share >= 0.5 else "partially" if share >= 0.2 else "not_covered"


@register_offline(InferredPreference)
def offline_inference(request: LLMRequest, rng: random.Random) -> InferredPreference:
    said = [m["content"] for s in request.offline_context["sessions"] for m in s if m["role"] == "user"]
    if not said:
        return InferredPreference(preference="")
    text = " ".join(rng.choice(said[-4:]).split()[: MAX_INFERENCE_WORDS - 3])
    return InferredPreference(preference=f"Wants answers that {text}")


@register_offline(PairCoverage)
def offline_pair(request: LLMRequest, rng: random.Random) -> PairCoverage:
    share = overlap(request.offline_context["item"], request.offline_context["statement"])
    return PairCoverage(reason=f"word overlap {share:.2f} (offline judge)", coverage=_coverage(share))


@register_offline(InferredItems)
def offline_items(request: LLMRequest, rng: random.Random) -> InferredItems:
    parts = [p.strip() for p in re.split(r",|;| and ", request.offline_context["statement"]) if p.strip()]
    gold = request.offline_context["gold"]
    return InferredItems(items=[CoveredItem(item=p, coverage=_coverage(overlap(p, gold))) for p in parts])


@register_offline(ScoredAnswer)
def offline_score(request: LLMRequest, rng: random.Random) -> ScoredAnswer:
    ctx = request.offline_context
    target = ctx.get("preference") or ctx.get("memory") or ""
    answer = ctx.get("response") or ctx.get("answer") or ""
    share = overlap(target, answer)
    return ScoredAnswer(reason=f"word overlap {share:.2f} (offline judge)", score=1 + round(9 * share))


@register_offline("eval.cupid.generate")
def offline_answer(request: LLMRequest, rng: random.Random) -> str:
    ctx = request.offline_context
    hint = ctx.get("preference") or ""
    return f"Here is my answer to: {ctx['request']} {hint}".strip()


@register_offline(MemoryList)
def offline_memories(request: LLMRequest, rng: random.Random) -> MemoryList:
    ctx = request.offline_context
    if "memory" in ctx:  # task 2: keep what was known
        kept = [m for m in ctx["memory"] if isinstance(m, dict) and m.get("value")]
        return MemoryList(
            memory_items=[
                PredictedMemory(
                    memory_id=str(m.get("memory_id") or f"m{i}"),
                    type=m.get("type") if m.get("type") in ("direct", "indirect") else "direct",
                    label=str(m.get("label") or "Unknown"),
                    value=str(m["value"]),
                    confidence=float(m.get("confidence") or 0.5),
                )
                for i, m in enumerate(kept, start=1)
            ]
        )
    said = [t.get("text") or "" for t in ctx["dialogue"] if t.get("role") == "user"]
    picked = [s for s in said if s.strip()][:2]
    return MemoryList(
        memory_items=[
            PredictedMemory(
                memory_id=f"m{i}",
                type="direct",
                label="Personal_Background/Other",
                value="User said: " + " ".join(s.split()[:12]),
                confidence=0.5,
                evidence_text=" ".join(s.split()[:12]),
            )
            for i, s in enumerate(picked, start=1)
        ]
    )


@register_offline(RetrievalAnswer)
def offline_retrieval(request: LLMRequest, rng: random.Random) -> RetrievalAnswer:
    ctx = request.offline_context
    candidates = [m for m in ctx["candidates"] if isinstance(m, dict)]
    best = max(candidates, key=lambda m: overlap(ctx["query"], str(m.get("value"))), default={})
    return RetrievalAnswer(
        answer=str(best.get("value") or ""),
        reason="most words in common with the question (offline)",
        selected_memory_id=str(best.get("memory_id") or ""),
    )


@register_offline(GroundedAnswer)
def offline_grounded(request: LLMRequest, rng: random.Random) -> GroundedAnswer:
    ctx = request.offline_context
    fact = ctx.get("memory") or next(
        (t.get("text") or "" for t in ctx.get("dialogue") or [] if t.get("role") == "user"), ""
    )
    return GroundedAnswer(
        answer=f"Keeping in mind that {fact}: here is my answer.", used_memory_fact=str(fact)
    )


# -- the official CUPID steps (free text, parsed like CUPID's) ------------------------------------------------
@register_offline("eval.cupid.official.infer")
def offline_official_inference(request: LLMRequest, rng: random.Random) -> str:
    log = request.offline_context["interaction_log"]
    said = [b.split("\n\n", 1)[1].strip() for b in log.split("#### User")[1:] if "\n\n" in b]
    said = [s.split("\n")[0] for s in said if s]
    text = " ".join(rng.choice(said[-4:]).split()[: MAX_INFERENCE_WORDS - 3]) if said else ""
    answer = f"Wants answers that {text}" if text else ""
    return f"### Analysis\n\nRestating something the user said (offline).\n\n### Most Likely Preference\n\n{answer}"


@register_offline("eval.cupid.official.decompose")
def offline_decompose(request: LLMRequest, rng: random.Random) -> str:
    parts = [p.strip() for p in re.split(r",|;| and ", request.offline_context["preferences"]) if p.strip()]
    questions = [f"Does the answer respect: {p}?" for p in parts[:4]]
    return (
        "**Analysis**\n\nSplit at commas (offline).\n\n**Checklist**\n\n```json\n"
        + json.dumps({"checklist": questions})
        + "\n```"
    )


def _official_labels(request: LLMRequest) -> list[dict[str, object]]:
    ctx = request.offline_context
    entries = [line.split(". ", 1)[1] for line in ctx["checklist"].splitlines() if ". " in line]
    names = {"fully": "Fully Covered", "partially": "Partially Covered", "not_covered": "Not Covered"}
    return [
        {"index": i + 1, "entry": e, "label": names[_coverage(overlap(e, ctx["preference"]))]}
        for i, e in enumerate(entries)
    ]


@register_offline("eval.cupid.official.match")
def offline_official_match(request: LLMRequest, rng: random.Random) -> str:
    return "```json\n" + json.dumps({"results": _official_labels(request)}) + "\n```"


@register_offline("eval.cupid.official.prefmatch")
def offline_prefmatch(request: LLMRequest, rng: random.Random) -> str:
    return json.dumps(_official_labels(request))


@register_offline("eval.cupid.official.generate")
def offline_official_answer(request: LLMRequest, rng: random.Random) -> str:
    return f"Here is my answer to: {request.offline_context['curr_request']}"


@register_offline("eval.cupid.official.judge")
def offline_official_judge(request: LLMRequest, rng: random.Random) -> str:
    ctx = request.offline_context
    score = 1 + round(9 * overlap(ctx["preference"], ctx["ai_response"]))
    labels = (
        "Unacceptable|Very Poor|Poor|Below Average|Acceptable|Above Average|Good|Very Good|Excellent|Exceptional"
    ).split("|")
    return (
        f"### Evaluation of AI Assistant's Response\n\nWord overlap (offline judge).\n\n"
        f"### Evaluation Label\n\n{labels[score - 1]}\n\n### Evaluation Score\n\n{score}"
    )
