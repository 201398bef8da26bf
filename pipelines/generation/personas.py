"""Stage 1, personas: sample balanced attributes by code, then have the writer model write each persona.

Attributes are drawn least-used-first across the batch (ties broken by the seeded RNG), so a batch of
N personas spreads career levels, Big-Five poles, Schwartz values and decision styles as evenly as N
allows. Optional seed personas (JSONL, one description per line) start each persona from a real
description; their licence is recorded on every persona made from them.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from prefkit.pipelines.generation.drafts import PersonaDraft
from prefkit.pipelines.generation.prompting import build_request
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.common import InputError
from prefkit.schemas.generation import (
    BIG_FIVE,
    CAREER_LEVELS,
    CUPID_DECISION_STYLES,
    DECISION_STYLES,
    SCHWARTZ_VALUES,
    Persona,
    PersonaAttributes,
)
from prefkit.schemas.reading import read_jsonl

SEED_KEYS = ("persona", "input persona", "description", "text")
BIG_FIVE_POLES = tuple((trait, level) for trait in BIG_FIVE for level in ("High", "Low"))


class AttributeSampler:
    """Draws persona attributes, always among the options used least so far in this batch."""

    def __init__(self, rng: random.Random, styles: Sequence[str] = DECISION_STYLES):
        self.rng = rng
        self.styles = styles
        self.counts: dict[str, Counter] = {}

    def _least_used(
        self, name: str, options: Sequence, k: int, clash: Callable = lambda a, b: a == b
    ) -> list:
        counts = self.counts.setdefault(name, Counter())
        chosen: list = []
        for _ in range(k):
            pool = [o for o in options if not any(clash(o, c) for c in chosen)]
            low = min(counts[o] for o in pool)
            pick = self.rng.choice([o for o in pool if counts[o] == low])
            counts[pick] += 1
            chosen.append(pick)
        return chosen

    def sample(self) -> PersonaAttributes:
        poles = self._least_used("big_five", BIG_FIVE_POLES, 2, clash=lambda a, b: a[0] == b[0])
        return PersonaAttributes(
            career_level=self._least_used("career_level", CAREER_LEVELS, 1)[0],
            big_five=[{"trait": t, "level": lvl} for t, lvl in poles],
            values=self._least_used("values", SCHWARTZ_VALUES, 2),
            decision_style=self._least_used("decision_style", self.styles, 1)[0],
        )


def sample_attributes(n: int, seed: int, decision_styles: str = "prefkit") -> list[PersonaAttributes]:
    """The attributes of personas 0..n-1 for ``seed`` (a prefix of a longer batch is the same);
    ``decision_styles="cupid"`` draws CUPID's set of styles."""
    styles = CUPID_DECISION_STYLES if decision_styles == "cupid" else DECISION_STYLES
    sampler = AttributeSampler(random.Random(f"personas:{seed}"), styles)
    return [sampler.sample() for _ in range(n)]


def persona_id(seed: int, index: int) -> str:
    return f"persona-s{seed}-{index:04d}"


def read_seed_personas(path: Path) -> list[str]:
    """Seed descriptions from JSONL: each line a JSON string or an object with a description key."""
    seeds = []
    for n, value in read_jsonl(Path(path)):
        if isinstance(value, dict):
            value = next((value[k] for k in SEED_KEYS if isinstance(value.get(k), str)), None)
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{path}:{n}: expected a string or an object with one of {', '.join(SEED_KEYS)}")
        seeds.append(value.strip())
    return seeds


def persona_request(pid: str, attrs: PersonaAttributes, seed_persona: str | None) -> LLMRequest:
    context = {"persona_id": pid, "attributes": attrs.model_dump(mode="json"), "seed_persona": seed_persona}
    return build_request("personas", pid, "writer", "personas", PersonaDraft, context, temperature=0.9)


def validate_persona(draft: PersonaDraft) -> None:
    """Raise ValueError when the persona is unusable (the model described itself or wrote a stub)."""
    lowered = draft.text.lower()
    if "as an ai" in lowered or "language model" in lowered:
        raise ValueError("persona text talks about the AI instead of a person")
    if len(draft.text.split()) < 25:
        raise ValueError("persona text is shorter than 25 words")


def make_persona(
    pid: str, attrs: PersonaAttributes, draft: PersonaDraft, seed: str | None, licence: str | None
) -> Persona:
    return Persona(
        persona_id=pid,
        text=draft.text.strip(),
        occupation=draft.occupation.strip(),
        attributes=attrs,
        seed_persona=seed,
        seed_licence=licence if seed else None,
    )
