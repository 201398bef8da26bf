"""Stage 6, benchmark instances: three per persona (consistent, contrastive, changing) in CUPID's row
format, sharing one current request (the last session's opening message).

Following CUPID's release, every instance has the same number of prior sessions (8 with the default
plan): the sessions with A's original preference plus the filler sessions form a shared core, minus
``swap`` randomly held-out filler sessions (swap = the number of A' sessions before the request, 2).
The consistent instance gets the held-out fillers back, the contrastive one gets the B sessions
instead (topped up with held-out fillers if B appears less often than ``swap``), the changing one the
A' sessions. Gold: A's preference and checklist for consistent and contrastive, A''s for changing.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from prefkit.curation.store import InstanceLink, StoredSession
from prefkit.pipelines.generation.checklists import preference_key
from prefkit.schemas.cupid import BenchmarkInstance, PriorInteraction
from prefkit.schemas.generation import SessionPlan

#: The plan roles of the sessions an instance depends on: the ones carrying its gold preference, the
#: contrastive partner (B) for contrastive, and both the old (A) and the new (A') preference for
#: changing - a change is only shown when both sides of it are.
RELEVANT_ROLES: dict[str, frozenset[str]] = {
    "consistent": frozenset({"A"}),
    "contrastive": frozenset({"A", "B"}),
    "changing": frozenset({"A", "A_prime"}),
}


class InstanceError(ValueError):
    """The persona's sessions cannot make the three instances (e.g. too few filler sessions)."""


def prior_sets(plan: SessionPlan, rng: random.Random, consistent: str = "equal") -> dict[str, list[int]]:
    """Session indices of each instance type's prior interactions, chronological. ``consistent="cupid"``
    leaves the held-out fillers out of the consistent instance, as CUPID's ``create_instances`` does."""
    last = plan.slots[-1].index
    by_role: dict[str, list[int]] = {"A": [], "A_prime": [], "B": [], "other": []}
    for slot in plan.slots[:-1]:
        by_role[slot.role].append(slot.index)
    swap = len(by_role["A_prime"])
    if len(by_role["other"]) < swap:
        raise InstanceError(
            f"need at least {swap} filler sessions before session {last}, have {len(by_role['other'])}"
        )
    held_out = sorted(rng.sample(by_role["other"], swap))
    shared = by_role["A"] + [i for i in by_role["other"] if i not in held_out]
    top_up = held_out[: max(0, swap - len(by_role["B"]))]
    return {
        "consistent": sorted(shared + (held_out if consistent == "equal" else [])),
        "contrastive": sorted(shared + by_role["B"] + top_up),
        "changing": sorted(shared + by_role["A_prime"]),
    }


def prior_interaction(session: StoredSession) -> PriorInteraction:
    return PriorInteraction(
        context_factor=session.factor_name,
        contextual_preference=session.preference_text,
        dialogue=[{"role": t.role, "content": t.content} for t in session.turns],
    )


def build_instances(
    plan: SessionPlan,
    sessions: list[StoredSession],
    checklists: dict[str, list[str]],
    rng: random.Random,
    consistent: str = "equal",
) -> list[BenchmarkInstance]:
    """The persona's three instances from its plan, its stored sessions and its checklists by preference key."""
    by_index = {s.index: s for s in sessions}
    missing = [slot.index for slot in plan.slots if slot.index not in by_index]
    if missing:
        raise InstanceError(f"sessions {missing} of {plan.persona_id} are not simulated yet")
    current = by_index[plan.slots[-1].index]
    original = next(s.preference_text for s in plan.slots if s.role == "A")
    changed = plan.slots[-1].preference_text
    gold = {"consistent": original, "contrastive": original, "changing": changed}
    out = []
    for kind, indices in prior_sets(plan, rng, consistent).items():
        out.append(
            BenchmarkInstance(
                persona_id=plan.persona_id,
                instance_type=kind,
                current_request=current.turns[0].content,
                current_context_factor=current.factor_name,
                current_contextual_preference=gold[kind],
                current_checklist=checklists[preference_key(gold[kind])],
                prior_interactions=[prior_interaction(by_index[i]) for i in indices],
            )
        )
    return out


def instance_links(
    plan: SessionPlan, indices: list[int], instance_type: str, session_id: Callable[[int], str]
) -> list[InstanceLink]:
    """The store's links of one instance: for each prior interaction (in order) its session id, its
    role in the plan, and whether the instance depends on that session being verified."""
    roles = {slot.index: slot.role for slot in plan.slots}
    return [
        InstanceLink(pos, session_id(i), roles[i], roles[i] in RELEVANT_ROLES[instance_type])
        for pos, i in enumerate(indices)
    ]
