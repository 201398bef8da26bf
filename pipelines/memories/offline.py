"""Offline answers for memory extraction: deterministic, grounded in the dialogue, marked offline.

Stage 1 quotes the opening words of a few user turns (so every quote is really in its turn) and labels
them from the taxonomy; stage 2 keeps most candidates at a calibrated level and rejects about one in
four with a reason. Used for demos, tests and cost estimates; never for a release without
``allow_offline``.
"""

from __future__ import annotations

import random

from prefkit.pipelines.llm.offline import register_offline
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.extraction import (
    CONFIDENCE_LEVELS,
    REJECTED_CONFIDENCE,
    CandidateEvidence,
    CandidateList,
    Judgement,
    JudgementList,
    MemoryCandidate,
    Segment,
    SegmentMemory,
    SegmentTurn,
    UpdateDialogue,
    UserQuery,
)


@register_offline(CandidateList)
def offline_candidates(request: LLMRequest, rng: random.Random) -> CandidateList:
    ctx = request.offline_context
    users = [t for t in ctx["turns"] if t["role"] == "user" and t["content"].strip()]
    picked = rng.sample(users, min(len(users), 3))
    memories = []
    for k, t in enumerate(sorted(picked, key=lambda t: t["index"])):
        words = t["content"].split()
        quote = " ".join(words[:8])
        memories.append(
            MemoryCandidate(
                type="indirect" if k % 2 == 0 else "direct",
                label=rng.choice(ctx["taxonomy"]),
                value=f"Is interested in: {' '.join(words[:6])}",
                reasoning="The user raised this topic themselves.",
                evidence=CandidateEvidence(utterance_index=t["index"], text=quote),
                confidence=round(rng.uniform(0.4, 0.9), 2),
                time_scope=rng.choice(["long_term", "short_term", "unknown"]),
            )
        )
    return CandidateList(memories=memories)


@register_offline(JudgementList)
def offline_judgements(request: LLMRequest, rng: random.Random) -> JudgementList:
    out = []
    for c in request.offline_context["candidates"]:
        if rng.random() < 0.25:
            out.append(
                Judgement(
                    memory_id=c["memory_id"],
                    verdict="reject",
                    confidence=REJECTED_CONFIDENCE,
                    reason="The quote shows a one-off task, not something lasting about the user.",
                )
            )
        else:
            out.append(
                Judgement(
                    memory_id=c["memory_id"],
                    verdict="keep",
                    confidence=rng.choice(CONFIDENCE_LEVELS),
                    reason="The user's own words support it.",
                )
            )
    return JudgementList(judgements=out)


@register_offline(UserQuery)
def offline_query(request: LLMRequest, rng: random.Random) -> UserQuery:
    topic = request.offline_context["memory"]["label"].split("/")[-1].replace("_", " ").lower()
    opener = rng.choice(["Could you help me", "I need some help", "Can you give me a hand"])
    return UserQuery(query=f"{opener} planning my week around {topic}? What would you suggest for me?")


@register_offline(UpdateDialogue)
def offline_update(request: LLMRequest, rng: random.Random) -> UpdateDialogue:
    ctx = request.offline_context
    target = ctx["target"]

    def seg(kind, user, memory=None):
        turns = [
            SegmentTurn(role="user", text=user),
            SegmentTurn(role="assistant", text="Understood, thank you."),
        ]
        return Segment(kind=kind, turns=turns, memory=memory)

    segments = [
        seg("neutral", "Can you convert 12 miles to kilometres?") for _ in range(ctx["n_segments"] - 2)
    ]
    segments.append(
        seg(
            "conflict",
            f"Actually, that has changed: it is no longer true that {target['value'].lower()}.",
            SegmentMemory(type="direct", label=target["label"], value=f"No longer: {target['value']}"),
        )
    )
    segments.append(
        seg(
            "new",
            "By the way, I started learning the cello last month.",
            SegmentMemory(type="direct", label="Preferences/Music", value="Is learning the cello"),
        )
    )
    rng.shuffle(segments)
    return UpdateDialogue(segments=segments)
