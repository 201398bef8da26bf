"""The session plan: code places factor A, its change and the contrastive partner B exactly."""

from __future__ import annotations

import random

import pytest
from prefkit.pipelines.generation.plan import (
    PlanShape,
    factor_roles,
    place_roles,
    place_sessions,
    validate_pattern,
)
from prefkit.schemas.common import PrefkitError
from prefkit.schemas.generation import ContextFactor, SessionPlan


def make_factors(n: int = 8) -> list[ContextFactor]:
    return [
        ContextFactor(
            factor_id=f"f{i}",
            type="person",
            name=f"Factor {i}",
            background="A factor in the user's working life.",
            task_types=["planning"],
            preference={
                "text": f"Preference number {i} about replies.",
                "family": "Style",
                "preference_type": "tone",
            },
        )
        for i in range(n)
    ]


def planned(seed: int, shape: PlanShape = PlanShape(), factors=None) -> SessionPlan:
    """A placed plan with A' written (as the LLM would), ready for validation."""
    factors = factors or make_factors()
    plan = place_sessions(random.Random(seed), shape, factors, "p")
    slots = [
        s.model_copy(update={"preference_text": "A changed preference."}) if s.role == "A_prime" else s
        for s in plan.slots
    ]
    return plan.model_copy(update={"slots": slots})


def test_roles_follow_cupid_pattern_over_200_seeds():
    for seed in range(200):
        roles = place_roles(random.Random(seed), PlanShape())
        a_positions = [i for i, r in enumerate(roles, start=1) if r in ("A", "A_prime")]
        assert len(roles) == 13
        assert a_positions[-1] == 13 and len(a_positions) == 5
        assert all(p <= 11 for p in a_positions[:-1])
        assert [roles[p - 1] for p in a_positions] == ["A", "A", "A_prime", "A_prime", "A_prime"]
        b_positions = [i for i, r in enumerate(roles, start=1) if r == "B"]
        assert len(b_positions) == 2 and 13 not in b_positions
        assert roles.count("other") == 6


def test_placed_plans_validate_over_200_seeds():
    factors = make_factors()
    seen_a_sets = set()
    for seed in range(200):
        plan = planned(seed, factors=factors)
        validate_pattern(plan, PlanShape(), factors)
        a_id, b_id = factor_roles(plan)
        assert {a_id, b_id} == {"f6", "f7"}  # the contrastive pair is always the last two factors
        seen_a_sets.add(tuple(s.index for s in plan.slots if s.factor_id == a_id))
    assert len(seen_a_sets) > 100  # positions really are random, not one fixed layout


def test_filler_factors_are_spread_evenly():
    plan = planned(3)
    fillers = [s.factor_id for s in plan.slots if s.role == "other"]
    assert sorted(fillers) == ["f0", "f1", "f2", "f3", "f4", "f5"]


def test_counts_are_configurable():
    shape = PlanShape(sessions=10, a_prior=4, b_count=1)
    for seed in range(50):
        plan = planned(seed, shape)
        validate_pattern(plan, shape, make_factors())
        assert sum(s.role == "B" for s in plan.slots) == 1 and len(plan.slots) == 10


def test_impossible_counts_are_a_user_error():
    with pytest.raises(PrefkitError, match="cannot hold"):
        PlanShape(sessions=6, a_prior=4, b_count=2)


def _with_slot(plan: SessionPlan, index: int, **update) -> SessionPlan:
    slots = [s.model_copy(update=update) if s.index == index else s for s in plan.slots]
    return plan.model_copy(update={"slots": slots})


@pytest.mark.parametrize(
    "breakage", ["a_at_12", "swap_roles", "b_at_13", "missing_b", "filler_pref", "a_prime_same"]
)
def test_wrong_session_pattern_is_rejected(breakage):
    factors = make_factors()
    plan = planned(7, factors=factors)
    a_id, b_id = factor_roles(plan)
    first_a = next(s.index for s in plan.slots if s.role == "A")
    other = next(s for s in plan.slots if s.role == "other")
    b_slot = next(s for s in plan.slots if s.role == "B")
    broken = {
        "a_at_12": _with_slot(
            plan, 12, factor_id=a_id, role="A_prime", preference_text="A changed preference."
        ),
        "swap_roles": _with_slot(plan, first_a, role="A_prime", preference_text="A changed preference."),
        "b_at_13": _with_slot(
            plan, 13, factor_id=b_id, role="B", preference_text=factors[-1].preference.text
        ),
        "missing_b": _with_slot(
            plan, b_slot.index, factor_id=other.factor_id, role="other", preference_text=other.preference_text
        ),
        "filler_pref": _with_slot(plan, other.index, preference_text="Something else entirely."),
        "a_prime_same": plan.model_copy(
            update={
                "slots": [
                    s.model_copy(
                        update={
                            "preference_text": next(f for f in factors if f.factor_id == a_id).preference.text
                        }
                    )
                    if s.role == "A_prime"
                    else s
                    for s in plan.slots
                ]
            }
        ),
    }[breakage]
    with pytest.raises(ValueError):
        validate_pattern(broken, PlanShape(), factors)
