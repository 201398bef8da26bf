"""Stage 3, the chronological session plan: code places the factors, the LLM only writes the stories.

Reading of CUPID (``create_series_structure`` and ``validate_sessions`` in kixlab/CUPID): with
n sessions, factor A is drawn at ``a_prior`` (4) random positions among sessions 1..n-2 and always
takes session n; the first half of A's prior sessions carry preference A, the rest and session n carry
A' (so [A, A, A', A'] then A' at n). The first A' session's story explains the change. The contrastive
partner B takes ``b_count`` (2; CUPID's validator accepts 1-2) of the remaining sessions before n, with
its own preference; every other session uses the other factors, spread evenly in a shuffled order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from prefkit.pipelines.generation.drafts import SessionStoriesDraft
from prefkit.pipelines.generation.factors import normalise, overlap
from prefkit.pipelines.generation.prompting import build_request
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.common import PrefkitError
from prefkit.schemas.generation import ContextFactor, Persona, SessionPlan, SessionSlot

CHANGE_MARKERS = ("no longer", "anymore", "any more", "instead of", "changed", "used to", "not anymore")


@dataclass(frozen=True)
class PlanShape:
    """How many sessions, A's prior appearances and B's appearances a plan has."""

    sessions: int = 13
    a_prior: int = 4
    b_count: int = 2

    def __post_init__(self) -> None:
        if self.a_prior < 2 or self.b_count < 1:
            raise PrefkitError(
                "a session plan needs factor A at least twice and B at least once before the end"
            )
        if self.a_prior + self.b_count + 1 > self.sessions - 1:
            raise PrefkitError(
                f"{self.sessions} sessions cannot hold A {self.a_prior}+1 times and B {self.b_count} times"
            )

    @property
    def a_original(self) -> int:
        """How many of A's prior sessions keep the original preference (the first half)."""
        return self.a_prior // 2


def place_roles(rng: random.Random, shape: PlanShape) -> list[str]:
    """Role of each session 1..n: 'A', 'A_prime', 'B' or 'other' (pure: the seeded RNG decides)."""
    n = shape.sessions
    a_positions = sorted(rng.sample(range(1, n - 1), shape.a_prior))
    remaining = [i for i in range(1, n) if i not in a_positions]
    b_positions = set(rng.sample(remaining, shape.b_count))
    roles = ["other"] * n
    for k, pos in enumerate(a_positions):
        roles[pos - 1] = "A" if k < shape.a_original else "A_prime"
    for pos in b_positions:
        roles[pos - 1] = "B"
    roles[n - 1] = "A_prime"
    return roles


def place_sessions(
    rng: random.Random, shape: PlanShape, factors: list[ContextFactor], persona_id: str
) -> SessionPlan:
    """The plan without stories: A' slots carry A's preference until the LLM writes A'."""
    a, b = (factors[-2], factors[-1]) if rng.random() < 0.5 else (factors[-1], factors[-2])
    others = list(factors[:-2])
    rng.shuffle(others)
    slots, k = [], 0
    for i, role in enumerate(place_roles(rng, shape), start=1):
        if role in ("A", "A_prime"):
            factor = a
        elif role == "B":
            factor = b
        else:
            factor, k = others[k % len(others)], k + 1
        slots.append(
            SessionSlot(
                index=i, factor_id=factor.factor_id, role=role, preference_text=factor.preference.text
            )
        )
    return SessionPlan(persona_id=persona_id, slots=slots)


def factor_roles(plan: SessionPlan) -> tuple[str, str]:
    """The factor ids of A and B in ``plan``."""
    a = next((s.factor_id for s in plan.slots if s.role in ("A", "A_prime")), None)
    b = next((s.factor_id for s in plan.slots if s.role == "B"), None)
    if a is None or b is None or a == b:
        raise ValueError("plan must have a target factor A and a distinct contrastive factor B")
    return a, b


def validate_pattern(plan: SessionPlan, shape: PlanShape, factors: list[ContextFactor]) -> None:
    """Raise ValueError unless ``plan`` follows the exact CUPID pattern for ``shape``."""
    by_id = {f.factor_id: f for f in factors}
    n, slots = shape.sessions, plan.slots
    if [s.index for s in slots] != list(range(1, n + 1)):
        raise ValueError(f"plan must have sessions 1..{n} in order")
    if any(s.factor_id not in by_id for s in slots):
        raise ValueError("plan uses a factor the persona does not have")
    a_id, b_id = factor_roles(plan)
    a_pref, b_pref = by_id[a_id].preference.text, by_id[b_id].preference.text
    a_slots = [s for s in slots if s.factor_id == a_id]
    if (
        len(a_slots) != shape.a_prior + 1
        or a_slots[-1].index != n
        or any(s.index > n - 2 for s in a_slots[:-1])
    ):
        raise ValueError(
            f"factor A must appear {shape.a_prior} times in sessions 1..{n - 2} and at session {n}"
        )
    want = ["A"] * shape.a_original + ["A_prime"] * (shape.a_prior - shape.a_original + 1)
    if [s.role for s in a_slots] != want:
        raise ValueError(f"factor A's preference pattern must be {want}")
    changed = {s.preference_text for s in a_slots if s.role == "A_prime"}
    if (
        any(s.preference_text != a_pref for s in a_slots if s.role == "A")
        or len(changed) != 1
        or a_pref in changed
    ):
        raise ValueError("A sessions must keep A's preference and every A' session one changed preference")
    b_slots = [s for s in slots if s.factor_id == b_id]
    if len(b_slots) != shape.b_count or any(
        s.role != "B" or s.preference_text != b_pref or s.index == n for s in b_slots
    ):
        raise ValueError(
            f"factor B must appear {shape.b_count} times before session {n} with its own preference"
        )
    for s in slots:
        if s.factor_id not in (a_id, b_id) and (
            s.role != "other" or s.preference_text != by_id[s.factor_id].preference.text
        ):
            raise ValueError(f"session {s.index}: a filler session must carry its own factor's preference")


def stories_request(persona: Persona, plan: SessionPlan, factors: list[ContextFactor]) -> LLMRequest:
    by_id = {f.factor_id: f for f in factors}
    a_id, _ = factor_roles(plan)
    first_change = next(s.index for s in plan.slots if s.role == "A_prime")
    context = {
        "persona_id": persona.persona_id,
        "persona": persona.text,
        "occupation": persona.occupation,
        "factor_a": by_id[a_id].model_dump(mode="json"),
        "first_change": first_change,
        "sessions": [
            {"index": s.index, "role": s.role, "factor": by_id[s.factor_id].model_dump(mode="json")}
            for s in plan.slots
        ],
    }
    return build_request("sessions", persona.persona_id, "writer", "sessions", SessionStoriesDraft, context)


def names_factor(request: str, name: str) -> bool:
    """Whether ``request`` names the factor (verbatim, or most of its content words)."""
    if normalise(name) in normalise(request):
        return True
    name_words = {w for w in normalise(name).split() if len(w) > 2}
    return bool(name_words) and len(name_words & set(normalise(request).split())) / len(name_words) >= 0.6


def validate_stories(draft: SessionStoriesDraft, plan: SessionPlan, factors: list[ContextFactor]) -> None:
    by_id = {f.factor_id: f for f in factors}
    a_pref = by_id[factor_roles(plan)[0]].preference.text
    if [s.index for s in draft.sessions] != [s.index for s in plan.slots]:
        raise ValueError(f"expected stories for sessions 1..{len(plan.slots)} in order")
    changed = draft.changed_preference
    if normalise(changed) == normalise(a_pref):
        raise ValueError("A' must differ from A's preference")
    if any(m in changed.lower() for m in CHANGE_MARKERS):
        raise ValueError("A' must be worded like A, not as a negation or an announced change")
    for slot, story in zip(plan.slots, draft.sessions, strict=True):
        factor = by_id[slot.factor_id]
        preference = changed if slot.role == "A_prime" else slot.preference_text
        if not names_factor(story.opening_request, factor.name):
            raise ValueError(f"session {slot.index}: the opening request does not name {factor.name!r}")
        if (
            normalise(preference) in normalise(story.opening_request)
            or overlap(preference, story.opening_request) > 0.5
        ):
            raise ValueError(f"session {slot.index}: the opening request states the preference")


def apply_stories(plan: SessionPlan, draft: SessionStoriesDraft) -> SessionPlan:
    slots = [
        slot.model_copy(
            update={
                "story": story.story.strip(),
                "opening_request": story.opening_request.strip(),
                "preference_text": draft.changed_preference.strip()
                if slot.role == "A_prime"
                else slot.preference_text,
            }
        )
        for slot, story in zip(plan.slots, draft.sessions, strict=True)
    ]
    return plan.model_copy(update={"slots": slots})
