"""Instances: CUPID's row format and its shared/swapped prior-session rule."""

from __future__ import annotations

import random

import pytest
from prefkit.exports.cupid import CUPID_COLUMNS
from prefkit.pipelines.generation.checklists import preference_key
from prefkit.pipelines.generation.instances import InstanceError, build_instances, prior_sets
from prefkit.pipelines.generation.plan import PlanShape, place_sessions
from prefkit.schemas.cupid import BenchmarkInstance
from prefkit.schemas.generation import Session, Turn
from test_generation_plan import make_factors, planned


def sessions_for(plan, factors):
    by_id = {f.factor_id: f for f in factors}
    return [
        Session(
            session_id=f"{plan.persona_id}_s{s.index}",
            persona_id=plan.persona_id,
            index=s.index,
            timestamp="2025-01-01T00:00:00+00:00",
            context_factor=by_id[s.factor_id],
            preference=by_id[s.factor_id].preference.model_copy(update={"text": s.preference_text}),
            checklist=[],
            turns=[
                Turn(index=0, role="user", content=f"request {s.index}"),
                Turn(index=1, role="assistant", content=f"reply {s.index}"),
            ],
        )
        for s in plan.slots
    ]


def checklists_for(plan):
    return {
        preference_key(s.preference_text): [f"Does the reply honour {s.preference_text}?"] for s in plan.slots
    }


def test_each_type_has_8_prior_sessions_sharing_6():
    for seed in range(50):
        plan = planned(seed)
        sets = prior_sets(plan, random.Random(seed))
        roles = {s.index: s.role for s in plan.slots}
        assert all(len(v) == 8 for v in sets.values())
        shared = set(sets["consistent"]) & set(sets["contrastive"]) & set(sets["changing"])
        assert len(shared) == 6 and {roles[i] for i in shared} <= {"A", "other"}
        assert sum(roles[i] == "A" for i in shared) == 2
        assert {roles[i] for i in set(sets["contrastive"]) - shared} == {"B"}
        assert {roles[i] for i in set(sets["changing"]) - shared} == {"A_prime"}
        assert {roles[i] for i in set(sets["consistent"]) - shared} == {"other"}
        assert all(v == sorted(v) and 13 not in v for v in sets.values())


def test_instances_are_cupid_rows_with_the_right_gold():
    factors = make_factors()
    plan = planned(11, factors=factors)
    made = build_instances(plan, sessions_for(plan, factors), checklists_for(plan), random.Random(0))
    assert [i.instance_type for i in made] == ["consistent", "contrastive", "changing"]
    rows = [i.model_dump(mode="json") for i in made]
    assert all(tuple(r) == CUPID_COLUMNS for r in rows)
    assert all(BenchmarkInstance.model_validate(r) == i for r, i in zip(rows, made, strict=True))
    a_pref = next(s.preference_text for s in plan.slots if s.role == "A")
    assert [r["current_contextual_preference"] for r in rows] == [a_pref, a_pref, "A changed preference."]
    assert {r["current_request"] for r in rows} == {"request 13"}
    assert rows[2]["current_checklist"] == ["Does the reply honour A changed preference.?"]
    first = prior_sets(plan, random.Random(0))["consistent"][0]  # the same draw build_instances made
    assert rows[0]["prior_interactions"][0]["dialogue"][0] == {"role": "user", "content": f"request {first}"}


def test_single_b_session_is_topped_up_with_a_held_out_filler():
    shape = PlanShape(sessions=13, a_prior=4, b_count=1)
    plan = place_sessions(random.Random(2), shape, make_factors(), "p")
    sets = prior_sets(plan, random.Random(2))
    assert len(sets["contrastive"]) == len(sets["consistent"]) == len(sets["changing"]) == 9  # 7 fillers now
    roles = {s.index: s.role for s in plan.slots}
    swapped_in = set(sets["contrastive"]) - set(sets["changing"])
    assert sorted(roles[i] for i in swapped_in) == ["B", "other"]


def test_missing_sessions_are_refused():
    factors = make_factors()
    plan = planned(1, factors=factors)
    with pytest.raises(InstanceError, match="not simulated yet"):
        build_instances(plan, sessions_for(plan, factors)[:-1], checklists_for(plan), random.Random(0))


def test_cupid_rule_leaves_the_held_out_fillers_out_of_the_consistent_instance():
    plan = planned(3)
    equal = prior_sets(plan, random.Random(3))
    cupid = prior_sets(plan, random.Random(3), consistent="cupid")
    # CUPID's create_instances drops the held-out fillers from the consistent instance: 8 - 2 = 6
    assert len(cupid["consistent"]) == 6 and set(cupid["consistent"]) < set(equal["consistent"])
    assert cupid["contrastive"] == equal["contrastive"] and cupid["changing"] == equal["changing"]
