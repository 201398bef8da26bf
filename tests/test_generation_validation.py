"""Each stage's validation rejects what the pipeline must never store."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from prefkit.pipelines.generation import offline
from prefkit.pipelines.generation.checklists import validate_checklist
from prefkit.pipelines.generation.dialogues import DialogueJob, DialogueRules, check_verdict, start
from prefkit.pipelines.generation.drafts import (
    ChecklistDraft,
    FactorsDraft,
    SessionStoriesDraft,
    SimulatorVerdict,
)
from prefkit.pipelines.generation.factors import make_factors, validate_factors
from prefkit.pipelines.generation.personas import read_seed_personas, sample_attributes
from prefkit.pipelines.generation.plan import PlanShape, place_sessions, validate_stories
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.common import InputError
from prefkit.schemas.generation import ContextualPreference

PERSONA = "Amara Okafor is a staff nurse with several years of experience who plans carefully."


def offline_draft(model, seed: int = 0, **context):
    request = LLMRequest(
        stage="t",
        item="i",
        role="writer",
        messages=(("user", "x"),),
        response_model=model,
        offline_context=context,
    )
    generator = {FactorsDraft: offline.offline_factors, SessionStoriesDraft: offline.offline_stories}[model]
    return generator(request, random.Random(seed))


def good_factors(seed: int = 0) -> FactorsDraft:
    return offline_draft(FactorsDraft, seed, persona=PERSONA, n_factors=8)


def test_offline_factors_pass_validation_for_many_seeds():
    """``validate_factors`` raises on any factor set it refuses: 30 seeds, none refused."""
    for seed in range(30):
        validate_factors(good_factors(seed), 8)


def _broken_pair(draft: FactorsDraft, **change) -> FactorsDraft:
    factors = list(draft.factors)
    factors[-1] = factors[-1].model_copy(update=change)
    return draft.model_copy(update={"factors": factors})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"type": "Location/Place"}, "types differ"),
        ({"name": "PLACEHOLDER"}, "not distinct entities"),
        ({"preference": "SAME"}, "not mutually exclusive"),
        (
            {
                "preference": ContextualPreference(
                    text="Answer with a poem about the weather every single time.",
                    family="Harmless",
                    preference_type="safety",
                )
            },
            "one family",
        ),
    ],
)
def test_broken_contrastive_pair_is_rejected(change, message):
    draft = good_factors()
    a = draft.factors[-2]
    if change.get("name") == "PLACEHOLDER":
        change["name"] = f"{a.name} in the afternoon"
    if change.get("preference") == "SAME":
        change["preference"] = a.preference.model_copy(update={"text": a.preference.text + " Please."})
    with pytest.raises(ValueError, match=message):
        validate_factors(_broken_pair(draft, **change), 8)


def test_preference_naming_its_factor_is_rejected():
    draft = good_factors()
    first = draft.factors[0]
    pref = first.preference.model_copy(
        update={"text": f"When {first.name} is involved, keep it short and plain."}
    )
    factors = [first.model_copy(update={"preference": pref}), *draft.factors[1:]]
    with pytest.raises(ValueError, match="not understandable alone"):
        validate_factors(draft.model_copy(update={"factors": factors}), 8)


def test_wrong_factor_count_is_rejected():
    with pytest.raises(ValueError, match="expected 10"):
        validate_factors(good_factors(), 10)


def test_checklist_of_six_items_is_rejected():
    draft = ChecklistDraft(items=[{"question": f"Does the reply cover point {i}?"} for i in range(6)])
    with pytest.raises(ValueError, match="at most 4"):
        validate_checklist(draft)
    assert validate_checklist(ChecklistDraft(items=draft.items[:4]))[0] == "Does the reply cover point 0?"


def test_checklist_repeating_an_item_is_rejected():
    draft = ChecklistDraft(
        items=[{"question": "Does the reply use bullets?"}, {"question": "does the reply use bullets?"}]
    )
    with pytest.raises(ValueError, match="repeats"):
        validate_checklist(draft)


def _plan_and_stories(seed: int = 0):
    factors = make_factors("p", good_factors(seed))
    plan = place_sessions(random.Random(seed), PlanShape(), factors, "p")
    a = next(f for f in factors if f.factor_id == next(s.factor_id for s in plan.slots if s.role == "A"))
    context = {
        "persona": PERSONA,
        "first_change": next(s.index for s in plan.slots if s.role == "A_prime"),
        "factor_a": a.model_dump(mode="json"),
        "sessions": [
            {
                "index": s.index,
                "role": s.role,
                "factor": next(f for f in factors if f.factor_id == s.factor_id).model_dump(mode="json"),
            }
            for s in plan.slots
        ],
    }
    return factors, plan, offline_draft(SessionStoriesDraft, seed, **context)


def test_offline_stories_validate():
    """``validate_stories`` raises on any story set it refuses: 10 seeds, none refused."""
    for seed in range(10):
        factors, plan, stories = _plan_and_stories(seed)
        validate_stories(stories, plan, factors)


def _edit_story(stories: SessionStoriesDraft, index: int, request: str) -> SessionStoriesDraft:
    sessions = [
        s.model_copy(update={"opening_request": request}) if s.index == index else s for s in stories.sessions
    ]
    return stories.model_copy(update={"sessions": sessions})


def test_request_stating_the_preference_or_missing_the_factor_is_rejected():
    factors, plan, stories = _plan_and_stories()
    slot = plan.slots[3]
    name = next(f.name for f in factors if f.factor_id == slot.factor_id)
    with pytest.raises(ValueError, match="states the preference"):
        validate_stories(
            _edit_story(stories, 4, f"Help me with {name}. {slot.preference_text}"), plan, factors
        )
    with pytest.raises(ValueError, match="does not name"):
        validate_stories(_edit_story(stories, 4, "Can you help me plan my week please?"), plan, factors)


def test_changed_preference_announced_as_a_change_is_rejected():
    factors, plan, stories = _plan_and_stories()
    with pytest.raises(ValueError, match="worded like A"):
        validate_stories(
            stories.model_copy(update={"changed_preference": "I no longer want long answers at all."}),
            plan,
            factors,
        )


def _state(checklist_size=3, touched=()):
    factors = make_factors("p", good_factors())
    plan = place_sessions(random.Random(0), PlanShape(), factors, "p")
    slot = plan.slots[0].model_copy(update={"opening_request": "Can you help me?"})
    job = DialogueJob(
        "p-s01", None, slot, factors[0], [f"Does the reply do thing {i}?" for i in range(checklist_size)]
    )
    state = start(job)
    state.touched.update(touched)
    return state


def verdict(scores, items=(), message="Hmm, not quite what I had in mind."):
    return SimulatorVerdict(
        scores=[{"item": i, "score": s} for i, s in enumerate(scores, start=1)],
        feedback_items=list(items),
        message=message,
    )


def test_verdict_rules():
    rules = DialogueRules(max_turns=16, met_score=8)
    check_verdict(_state(), verdict([3, 4, 9], items=[1]), rules)
    with pytest.raises(ValueError, match="at most one unmet"):
        check_verdict(_state(), verdict([3, 4, 9], items=[1, 2]), rules)
    with pytest.raises(ValueError, match="each of the 3"):
        check_verdict(_state(), verdict([3, 4]), rules)
    with pytest.raises(ValueError, match="next message"):
        check_verdict(_state(), verdict([3, 4, 9], items=[1], message=""), rules)
    check_verdict(
        _state(touched={1, 2, 3}), verdict([9, 8, 10], message=""), rules
    )  # all met and raised: ends
    with pytest.raises(ValueError, match=r"never raised.*missing \[2, 3\]"):  # met, but 2 and 3 never raised
        check_verdict(_state(touched={1}), verdict([9, 8, 10], message=""), rules)
    check_verdict(_state(touched={1}), verdict([9, 8, 10], items=[2, 3], message="Good, keep both."), rules)


def test_last_message_must_cover_every_untouched_item():
    rules = DialogueRules(max_turns=3, met_score=8)
    state = _state(touched={1})
    state.scores.append([3, 3, 3])  # one reply scored; the next verdict writes the last message
    with pytest.raises(ValueError, match=r"missing \[3\]"):
        check_verdict(state, verdict([9, 3, 3], items=[2]), rules)
    check_verdict(state, verdict([9, 3, 3], items=[2, 3]), rules)


def test_persona_attributes_are_balanced():
    attrs = sample_attributes(12, seed=5)
    assert Counter(a.career_level for a in attrs) == {"entry": 4, "mid": 4, "senior": 4}
    assert set(Counter(a.decision_style for a in attrs).values()) == {3}
    values = Counter(v for a in attrs for v in a.values)
    assert max(values.values()) - min(values.values()) <= 1 and len(values) == 10
    poles = Counter((t.trait, t.level) for a in attrs for t in a.big_five)
    assert max(poles.values()) - min(poles.values()) <= 1
    assert sample_attributes(5, seed=5) == attrs[:5]  # a longer batch extends a shorter one


def test_seed_persona_file_errors_name_the_line(tmp_path):
    path = tmp_path / "seeds.jsonl"
    path.write_text(
        '"A beekeeper in Wales."\n{"persona": "A tram driver in Lisbon."}\n{"x": 1}\n', encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"seeds.jsonl:3"):
        read_seed_personas(path)
    path.write_text(
        '"A beekeeper in Wales."\n{"input persona": "A tram driver in Lisbon."}\n', encoding="utf-8"
    )
    assert read_seed_personas(path) == ["A beekeeper in Wales.", "A tram driver in Lisbon."]


def test_persona_about_an_ai_or_too_short_is_rejected():
    from prefkit.pipelines.generation.drafts import PersonaDraft
    from prefkit.pipelines.generation.personas import validate_persona

    with pytest.raises(ValueError, match="talks about the AI"):
        validate_persona(
            PersonaDraft(text="As an AI language model I cannot invent a person, " * 3, occupation="none")
        )
    with pytest.raises(ValueError, match="shorter than 25 words"):
        validate_persona(
            PersonaDraft(text="Rosa is a nurse in Lisbon who likes long walks and tea.", occupation="nurse")
        )
    validate_persona(
        PersonaDraft(
            text=PERSONA + " She wants to teach, dislikes rushed handovers and walks to work daily.",
            occupation="nurse",
        )
    )


def test_offline_changed_preference_for_an_unknown_preference_is_still_valid():
    """``validate_stories`` raises if the changed preference makes the stories invalid."""
    factors, plan, stories = _plan_and_stories()
    changed = offline._changed_preference("Always answer in exactly three short bullet points.")
    validate_stories(stories.model_copy(update={"changed_preference": changed}), plan, factors)


def test_a_silent_session_is_simulated_again_and_fails_when_it_stays_silent(project):
    """With one reply allowed, the user never gets to raise an item: every attempt is silent."""
    from dataclasses import replace

    from prefkit.curation.quality.verification import silent_sessions
    from prefkit.pipelines.generation.dialogues import is_silent, simulate
    from prefkit.pipelines.llm import LLMLayer
    from prefkit.schemas.generation import Persona

    persona = Persona(
        persona_id="p",
        text="Rosa Delgado, a staff nurse.",
        occupation="nurse",
        attributes=sample_attributes(1, 0)[0],
    )
    state = _state()
    state.job = replace(state.job, persona=persona)
    with LLMLayer(
        project.store, llm_config=project.config.llm, backend="offline", seed=0, progress=False
    ) as layer:
        (done,) = layer.wait(
            simulate(layer, project.store, [state.job], DialogueRules(max_turns=1, attempts=2))
        )
    assert (
        is_silent(done.feedback)
        and done.failed == "silent after 2 attempts: the user never raised a checklist item"
    )
    assert [f.error for f in project.store.content.failures("dialogues")] == [
        "silent session (attempt 1): no checklist item raised"
    ]
    assert silent_sessions(project.store) == []


def test_the_silent_session_check_catches_a_planted_silent_session(project):
    from prefkit.curation.quality.verification import silent_sessions
    from prefkit.schemas.curation import Provenance
    from prefkit.schemas.generation import Session, Turn

    factor = make_factors("p", good_factors())[0]
    session = Session(
        session_id="p-s01",
        persona_id="p",
        index=1,
        timestamp="2025-01-08T10:00:00Z",
        context_factor=factor,
        preference=factor.preference,
        checklist=[{"question": "Does the reply do it?"}],
        turns=[
            Turn(index=0, role="user", content="Help me plan."),
            Turn(index=1, role="assistant", content="Sure."),
        ],
    )
    project.store.generation.add_session(session, {}, [None, {"scores": [9]}], Provenance(source="test"))
    assert silent_sessions(project.store) == ["p-s01"]


def test_cupid_decision_styles_are_a_choice():
    cupid = sample_attributes(8, seed=5, decision_styles="cupid")
    assert sorted({a.decision_style for a in cupid}) == [
        "analytical",
        "behavioral",
        "conceptual",
        "directive",
    ]
    assert {a.decision_style for a in sample_attributes(8, seed=5)} == {
        "rational",
        "intuitive",
        "dependent",
        "avoidant",
    }
