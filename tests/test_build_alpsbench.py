"""`prefkit tasks build-alpsbench`: retrieval pools from other users only, stratified and seeded;
use queries with the leakage check; update dialogues in controlled segments."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from prefkit.curation.store import Account, Dialogue, DialogueTurn, ImportBundle, NewMemory
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.memories.tasks import BuildConfig, build_alpsbench, leakage, stratified_sample
from prefkit.schemas.curation import Provenance

LABELS = (
    "Preferences/Food",
    "Preferences/Music",
    "Personal_Background/Occupation",
    "Constraints_and_Boundaries/Disliked_Topics",
)
USERS = 30
PER_USER = 40  # 30 users x 40 memories: enough for 1000 distractors from other users


def seed_gold(project) -> None:
    bundle = ImportBundle("test", "synthetic", "0" * 64, USERS, Provenance(source="test"))
    for u in range(USERS):
        did = f"sess_u{u:02d}"
        turns = [
            DialogueTurn(0, "user", f"I am user {u} and I like things."),
            DialogueTurn(1, "assistant", "Noted."),
        ]
        bundle.dialogues.append(Dialogue(did, "alpsbench", None, None, False, {}, turns))
        for k in range(PER_USER):
            label = LABELS[(u + k) % len(LABELS)] if k < PER_USER - 10 else LABELS[0]
            rec = {
                "memory_id": f"m{k + 1}",
                "type": "indirect" if k % 2 else "direct",
                "label": label,
                "value": f"u{u:02d} fact{k}",
                "confidence": 0.9,
                "evidence": {"session_id": did, "utterance_index": 0, "text": f"I am user {u}"},
            }
            bundle.memories.append(NewMemory(did, "gold", k, rec, rec["memory_id"], rec, source_model=""))
    project.store.content.import_bundle(bundle)


@pytest.fixture
def built(project):
    seed_gold(project)
    with LLMLayer(project.store, llm_config=project.config.llm, backend="offline", progress=False) as layer:
        report = build_alpsbench(project.store, layer, BuildConfig(limit=3, seed=7))
    return project, report


def test_retrieval_pools_never_hold_the_same_users_memories(built):
    project, report = built
    for n in (100, 300, 500, 700, 1000):
        rows = project.store.alps_tasks.tasks(track=f"task3_d{n}")
        assert len(rows) == 3 and report.built[f"task3_d{n}"] == 3
        for r in rows:
            cands = r.input["input"]["candidate_memories"]
            assert len(cands) == n + 1 and len({c["memory_id"] for c in cands}) == n + 1
            owner = r.benchmark_id.removeprefix("sess_")
            positive = r.gold["gold"]["selected_memory"]
            others = [c for c in cands if c["memory_id"] != positive["memory_id"]]
            assert positive["value"].startswith(owner + " ")
            assert not any(c["value"].startswith(owner + " ") for c in others)


def test_distractors_are_stratified_by_label_seeded_and_shuffled(built):
    project, _ = built
    rows = project.store.alps_tasks.tasks(track="task3_d1000")
    cands = rows[0].input["input"]["candidate_memories"]
    positive = rows[0].gold["gold"]["selected_memory"]["memory_id"]
    got = Counter(c["label"] for c in cands if c["memory_id"] != positive)
    owner = rows[0].benchmark_id
    pool = Counter(
        m.record["label"] for m in project.store.content.memories(origin="gold") if m.dialogue_id != owner
    )
    total = sum(pool.values())
    # Each label's share of the 1000 distractors is its share of the other users' memories (to the unit).
    assert set(got) == set(pool) and sum(got.values()) == 1000
    assert all(abs(got[lb] - 1000 * pool[lb] / total) < 1 for lb in pool)
    positions = {
        r.gold["gold"]["selected_memory_id"] for r in project.store.alps_tasks.tasks(track="task3_d100")
    }
    assert len(positions) > 1  # shuffled: the positive is not always at the same place


def test_same_seed_same_pools_other_seed_other_pools(project):
    pool = [{"label": LABELS[i % 4], "value": str(i)} for i in range(400)]
    import random

    a = stratified_sample(pool, 50, random.Random(1))
    assert a == stratified_sample(pool, 50, random.Random(1)) != stratified_sample(pool, 50, random.Random(2))
    assert stratified_sample(pool, 401, random.Random(1)) is None


def test_use_queries_and_update_dialogues(built):
    project, report = built
    t4 = project.store.alps_tasks.tasks(track="task4_ability2")
    assert t4 and all(
        leakage(r.input["input"]["query"], r.gold["gold"]["selected_memory"]) is None for r in t4
    )
    t2 = project.store.alps_tasks.tasks(track="task2")
    assert len(t2) == 3
    kinds = Counter(s["kind"] for s in t2[0].checks["segments"])
    assert kinds == {"neutral": 1, "new": 1, "conflict": 1}
    answer = t2[0].gold["gold"]["answer"]
    assert len(answer) == PER_USER + 1 and sum(m["memory_id"].endswith("_updated") for m in answer) == 1


@pytest.mark.parametrize(
    ("query", "leaks"),
    [
        ("What should I cook tonight? Something quick.", False),
        ("As someone who is vegetarian and loves spicy food, what should I cook?", True),
        ("I love spicy vegetarian dishes, any ideas?", True),
    ],
)
def test_leakage_check(query, leaks):
    memory = {"value": "Is vegetarian and loves spicy food", "label": "Preferences/Food"}
    assert (leakage(query, memory) is not None) == leaks


def test_task_qc_decides_which_built_rows_ship(built):
    from prefkit.curation.annotation.task_admin import create_tasks
    from prefkit.curation.annotation.task_kinds import LabelError, get_kind
    from prefkit.exports.release_data import alpsbench_configs
    from test_release_support import add_users, label

    project, _ = built
    store = project.store
    assert create_tasks(project, "task_qc", overlap=1) == len(store.alps_tasks.tasks())
    add_users(store, "ann1")
    qc = {
        t.payload["benchmark_id"]: t
        for t in store.labels.tasks(kind="task_qc")
        if t.payload["track"] == "task3_d100"
    }
    with pytest.raises(LabelError, match="leakage"):
        get_kind("task_qc").validate({"leakage": "maybe", "answer": "correct"}, next(iter(qc.values())))
    (bad, *good) = sorted(qc)
    label(store, qc[bad].task_id, "ann1", {"leakage": "leaks", "answer": "correct"}, kind="task_qc")
    for bid in good:
        label(store, qc[bid].task_id, "ann1", {"leakage": "none", "answer": "correct"}, kind="task_qc")
    configs = {c.name: c for c in alpsbench_configs(store) if not c.private}
    d100 = configs["alpsbench_task3_d100"]
    shipped = {json.loads(line)["benchmark_id"] for rows in d100.splits.values() for line in rows}
    assert shipped == set(good) and d100.dropped == {"built, failed task_qc (leakage or wrong answer)": 1}
    assert d100.needs == ("task_qc",)
    # Rows nobody checked yet do not ship either.
    assert configs["alpsbench_task2"].count == 0
    assert configs["alpsbench_task2"].dropped == {"built, not yet checked (task_qc)": 3}


def test_task_qc_round_trips_through_the_label_studio_config(built):
    from xml.dom import minidom

    from prefkit.annotate_app.labelstudio.config import label_config, ls_kind
    from prefkit.curation.annotation.task_admin import create_tasks

    project, _ = built
    create_tasks(project, "task_qc", overlap=1)
    task = project.store.labels.tasks(kind="task_qc")[0]
    minidom.parseString(label_config("task_qc"))  # well-formed XML
    cfg = ls_kind("task_qc")
    values = {"leakage": "leaks", "answer": "incorrect", "comment": "states the diet"}
    assert cfg.values(cfg.results(values, task), task) == values
    assert set(cfg.data(task)) == {"question", "generated", "memory", "gold_answer"}


def test_task_qc_form_records_both_verdicts(built, monkeypatch):
    from conftest import ROOT
    from prefkit.curation.annotation import workflow
    from prefkit.curation.annotation.task_admin import create_tasks
    from streamlit.testing.v1 import AppTest
    from test_release_support import add_users

    project, _ = built
    create_tasks(project, "task_qc", overlap=1)
    add_users(project.store, "alice")
    monkeypatch.setenv("PREFKIT_PROJECT", str(project.root))
    at = AppTest.from_file(str(ROOT / "annotate_app" / "app.py"), default_timeout=60)
    at.session_state["user"] = Account("alice", "annotator", None, True, "2026-01-01T00:00:00Z")
    at.session_state["kind"] = "task_qc"
    at.session_state["intro:task_qc"] = True
    at.run()
    item = workflow.current_item(project, "alice", "task_qc")
    p = item.event_id
    at.button(key=f"{p}:submit").click().run()
    assert "leakage" in at.warning[0].value.lower() and project.store.labels.events() == []
    at.button_group(key=f"{p}:q:leakage").set_value("leaks").run()
    at.button_group(key=f"{p}:q:answer").set_value("correct").run()
    at.text_input(key=f"{p}:comment").input("names the food preference").run()
    at.button(key=f"{p}:submit").click().run()
    ev = project.store.labels.event(p)
    assert (ev.kind, ev.values, ev.comment) == (
        "task_qc",
        {"leakage": "leaks", "answer": "correct"},
        "names the food preference",
    )


def test_verified_memories_come_from_memory_verify_labels(tmp_path):
    import wildchat_fixture as fx
    from prefkit.curation.annotation.task_admin import create_tasks
    from prefkit.pipelines.memories.tasks import verified_memories
    from test_release_support import add_users, label

    project, _ = fx.extracted_project(tmp_path, limit=2)
    create_tasks(project, "memory_verify", overlap=1)
    add_users(project.store, "ann1")
    task = max(project.store.labels.tasks(kind="memory_verify"), key=lambda t: len(t.payload["candidates"]))
    keys = [c["key"] for c in task.payload["candidates"]]
    decisions = [{"key": k, "decision": "accept"} for k in keys]
    if len(keys) > 1:
        decisions[0] = {"key": keys[0], "decision": "reject", "reason": "too_generic"}
    label(project.store, task.task_id, "ann1", {"decisions": decisions}, kind="memory_verify")
    got = verified_memories(project.store)
    kept = sum(d["decision"] == "accept" for d in decisions)
    assert list(got) == [task.payload["dialogue_id"]] and len(got[task.payload["dialogue_id"]]) == kept
    project.close()


@pytest.mark.parametrize(
    ("memory", "ability"),
    [
        ({"label": "Personal_Background/Education", "value": "M.S. in CS at Binghamton"}, "ability1"),
        ({"label": "States_Experiences/Past_Experience", "value": "Lived in Berlin for years"}, "ability1"),
        ({"label": "Possessions/Car", "value": "Owns a Tesla bought 7 months ago"}, "ability2"),
        ({"label": "Preferences/Food", "value": "Prefers spicy vegetarian food"}, "ability2"),
        (
            {"label": "Thoughts/Curiosity", "value": "Curious about roleplay scenarios as a knight"},
            "ability3",
        ),
        (
            {
                "label": "Personal_Background/Occupation",
                "value": "A student at a wizard school",
                "reasoning": "stated in character during a role-play",
            },
            "ability3",
        ),
        ({"label": "Constraints_and_Boundaries/Disliked_Topics", "value": "No talk of politics"}, "ability4"),
        (
            {"label": "States_Experiences/Mental_State", "value": "Anxious about the visa deadline"},
            "ability5",
        ),
        ({"label": "Thoughts/Curiosity", "value": "Curious how compilers work"}, None),
    ],
)
def test_ability_of_follows_alpsbench_definitions(memory, ability):
    from prefkit.pipelines.memories.tasks import ability_of

    assert ability_of(memory) == ability


@pytest.mark.shared_data
def test_ability_mapping_agrees_with_alpsbench_packets(alps_packets):
    """AlpsBench's own packets say which ability each selected memory served: the mapping must agree on
    nearly all of them (the rest are memories AlpsBench itself filed against their label)."""
    from prefkit.pipelines.memories.tasks import ability_of

    agree = total = 0
    per_ability: Counter = Counter()
    for path in sorted(alps_packets.glob("chunks/*/sess_*.json")):
        packet = json.loads(path.read_text(encoding="utf-8"))
        gold = {m.get("memory_id"): m for m in packet["task1"].get("ground_truth_memories") or []}
        for item in packet.get("task4") or []:
            memory = gold.get(item.get("task4_selected_memory_id"))
            if memory is None:
                continue
            total += 1
            if ability_of(memory) == item["ability"]:
                agree += 1
                per_ability[item["ability"]] += 1
    assert total > 400
    assert agree / total >= 0.9, (agree, total)
    # each ability present in the sample is recognised for most of its memories, role-play included
    assert per_ability["ability3"] >= 70 and per_ability["ability2"] >= 180 and per_ability["ability4"] >= 45
