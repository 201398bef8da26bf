"""Contracts: good records validate, bad ones fail naming the field, real quirks are kept."""

import json

import pytest
from prefkit.schemas import (
    ALL_SCHEMAS,
    BenchmarkInstance,
    ChecklistItem,
    LabelEvent,
    MemoryItem,
    PersonaAttributes,
    WildChatConversation,
    check_candidate,
)
from pydantic import ValidationError

CUPID_ROW = {
    "persona_id": "p1",
    "instance_type": "consistent",
    "current_request": "Can you draft the agenda for Monday's sync with Dana?",
    "current_context_factor": "Dana (manager)",
    "current_contextual_preference": "Agendas for Dana use numbered items with time boxes.",
    "current_checklist": ["Are items numbered?", "Does each item have a time box?"],
    "prior_interactions": [
        {
            "context_factor": "Dana (manager)",
            "contextual_preference": "Agendas for Dana use numbered items with time boxes.",
            "dialogue": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        }
    ],
}

GOLD_MEMORY = {
    "memory_id": "m1",
    "type": "indirect",
    "label": "Thoughts/Curiosity",
    "label_suggestion": None,
    "value": "Repeated requests for song lyrics",
    "reasoning": "asked three times",
    "evidence": {"session_id": "sess_1", "utterance_index": [0, 4], "text": "Tempo para viver"},
    "confidence": 0.8,
    "time_scope": "recent",
    "emotion": None,
    "preference_attitude": None,
    "updated_at": "2025-01-01T00:00:00Z",
}


def test_cupid_row_round_trips_exactly():
    inst = BenchmarkInstance.model_validate(CUPID_ROW)
    assert inst.model_dump(mode="json") == CUPID_ROW


@pytest.mark.parametrize(
    "change, field",
    [
        ({"instance_type": "weird"}, "instance_type"),
        ({"current_checklist": ["a?"] * 5}, "current_checklist"),
        ({"extra_field": 1}, "extra_field"),
    ],
)
def test_cupid_row_rejects_bad_values(change, field):
    with pytest.raises(ValidationError) as exc:
        BenchmarkInstance.model_validate({**CUPID_ROW, **change})
    assert field in str(exc.value)


def test_memory_keeps_undocumented_time_scope_and_list_evidence():
    item = MemoryItem.model_validate(GOLD_MEMORY)
    assert item.time_scope == "recent" and not item.time_scope_documented
    assert item.evidence.utterance_index == [0, 4]
    assert item.model_dump(mode="json") == GOLD_MEMORY


def test_memory_rejects_wrong_type_and_bad_label():
    with pytest.raises(ValidationError, match="type"):
        MemoryItem.model_validate({**GOLD_MEMORY, "type": "explicit"})
    with pytest.raises(ValidationError, match="taxonomy path"):
        MemoryItem.model_validate({**GOLD_MEMORY, "label": "not a path!"})


def test_candidate_problems_are_reported_not_raised():
    good = {
        "memory_id": "p1",
        "type": "direct",
        "label": "Preferences/Food",
        "value": "likes tea",
        "confidence": 0.9,
        "evidence_text": "I like tea",
    }
    assert check_candidate(good) == []
    problems = check_candidate({**good, "type": "Thoughts/Curiosity", "confidence": None})
    assert any(p.startswith("type:") for p in problems)
    assert any(p.startswith("confidence:") for p in problems)


def test_checklist_item_must_be_a_question():
    assert ChecklistItem(question="Is it short?").question == "Is it short?"
    with pytest.raises(ValidationError, match="question"):
        ChecklistItem(question="Be short.")


def test_the_default_taxonomy_is_cupids_and_a_project_can_replace_it(tmp_path):
    from prefkit.pipelines.generation.taxonomy import TaxonomyError, load_taxonomy

    cupid = load_taxonomy()
    assert cupid.counts == {"factor_types": 8, "preference_types": 16, "families": 3, "task_types": 12}
    assert list(cupid.preference_types) == ["Style", "Content", "Harmless"]
    assert (
        cupid.preference_type("harmless", "safety") == "Safety"
        and cupid.preference_type("Style", "safety") is None
    )
    mine = tmp_path / "tax.json"
    mine.write_text(json.dumps({**cupid.model_dump(), "factor_types": ["Pet"]}), encoding="utf-8")
    assert load_taxonomy(mine).factor_type("pet") == "Pet"
    mine.write_text('{"name": "x", "factor_types": []}', encoding="utf-8")
    with pytest.raises(TaxonomyError, match="tax.json: factor_types"):
        load_taxonomy(tmp_path / "tax.json")


def test_persona_attributes_need_distinct_known_values():
    with pytest.raises(ValidationError, match="unknown Schwartz"):
        PersonaAttributes(
            career_level="mid",
            big_five=[{"trait": "openness", "level": "High"}, {"trait": "neuroticism", "level": "Low"}],
            values=["power", "greed"],
            decision_style="rational",
        )


def test_wildchat_stable_id_disambiguates_repeated_hash():
    base = {
        "conversation_hash": "abc",
        "model": "gpt-4",
        "timestamp": "2023-04-29",
        "turn": 1,
        "language": "English",
        "openai_moderation": [],
        "detoxify_moderation": [],
        "toxic": False,
        "redacted": False,
    }
    a = WildChatConversation.model_validate(
        {**base, "conversation": [{"content": "hi", "role": "user", "turn_identifier": 1}]}
    )
    b = WildChatConversation.model_validate(
        {**base, "conversation": [{"content": "hi", "role": "user", "turn_identifier": 2}]}
    )
    assert a.conversation_hash == b.conversation_hash and a.stable_id() != b.stable_id()


def test_label_event_forbids_unknown_fields():
    with pytest.raises(ValidationError, match="annotator_override"):
        LabelEvent(
            event_id="e",
            task_id="t",
            kind="preference_match",
            annotator="ann",
            created_at="x",
            annotator_override="mallory",
        )


def test_every_schema_describes_every_field():
    for name, model in ALL_SCHEMAS.items():
        doc = model.model_json_schema()
        assert doc.get("properties") or doc.get("$defs"), name
        for sub in [doc, *doc.get("$defs", {}).values()]:
            for field, spec in sub.get("properties", {}).items():
                assert spec.get("description"), f"{name}.{field} has no description"
        json.dumps(doc)  # serialisable
