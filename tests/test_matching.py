"""Matching pairs built from instances: each checklist item meets its own and the other preference."""

from pipelines.matching import pairs_from_instances


def _inst(iid, persona, kind, pref, items):
    return {"instance_id": iid, "record": {"persona_id": persona, "instance_type": kind,
            "current_contextual_preference": pref, "current_checklist": items}}


def test_pairs_cover_same_and_other_preference_without_duplicates():
    instances = [
        _inst("i1", "p1", "consistent", "Short answers for Dana", ["Is it under 100 words?"]),
        _inst("i2", "p1", "contrastive", "Short answers for Dana", ["Is it under 100 words?"]),
        _inst("i3", "p1", "changing", "Detailed answers for Dana", ["Does it give step-by-step detail?"]),
    ]
    pairs = pairs_from_instances(instances)
    combos = {(p["checklist_item"], p["candidate"]) for p in pairs}
    assert combos == {
        ("Is it under 100 words?", "Short answers for Dana"),
        ("Is it under 100 words?", "Detailed answers for Dana"),
        ("Does it give step-by-step detail?", "Detailed answers for Dana"),
        ("Does it give step-by-step detail?", "Short answers for Dana"),
    }
    assert len(pairs) == len({p["pair_id"] for p in pairs}) == 4
    relations = {(p["checklist_item"], p["candidate"]): p["meta_json"] for p in pairs}
    assert "same_preference" in relations[("Is it under 100 words?", "Short answers for Dana")]
    assert pairs == pairs_from_instances(list(reversed(instances)))  # order-independent
