"""Label Studio configs and the result ↔ values mapping, without a server."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from appkit import memory_candidates
from click.testing import CliRunner
from prefkit.annotate_app.labelstudio.config import TASK_ID_KEY, label_config, ls_kind, task_data
from prefkit.annotate_app.labelstudio.kinds.memory_verify import MAX_CANDIDATES
from prefkit.cli import cli
from prefkit.curation.annotation.task_kinds import LabelError, get_kind
from prefkit.curation.store import PreferencePair
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import AnnotationTask, LabelEvent, Provenance

TURNS = [
    {"index": 0, "role": "user", "content": "I only cook vegetarian food."},
    {"index": 1, "role": "assistant", "content": "Noted! Here is a lentil stew."},
    {"index": 2, "role": "user", "content": "Keep recipes under 30 minutes, please."},
]


def _task(kind: str, payload: dict) -> AnnotationTask:
    return AnnotationTask(
        task_id=f"{kind}_t1", kind=kind, item_ref="x:1", payload=payload, overlap=2, created_at=utcnow()
    )


def expressed_task(n_items: int = 2) -> AnnotationTask:
    checklist = ["Is the recipe vegetarian?", "Is it quick?", "Is it cheap?", "Is it spicy?", "Is it Thai?"]
    payload = {
        "dialogue_id": "s1",
        "persona_id": "p1",
        "session_index": 1,
        "context_factor": "weeknight dinners",
        "preference": "Vegetarian recipes under 30 minutes",
        "checklist": checklist[:n_items],
        "turns": TURNS,
    }
    return _task("preference_expressed", payload)


def match_task() -> AnnotationTask:
    payload = {
        "pair_id": "p1",
        "checklist_item": "Is it vegetarian?",
        "candidate": "Likes vegetables",
        "instance_id": None,
        "origin": "test",
    }
    return _task("preference_match", payload)


def memory_task(n: int = 3) -> AnnotationTask:
    return _task("memory_verify", {"dialogue_id": "d1", "turns": TURNS, "candidates": memory_candidates(n)})


VALUES = {
    "preference_expressed": (
        expressed_task,
        {
            "items": [{"item": 0, "expressed": True, "evidence": [0]}, {"item": 1, "expressed": False}],
            "comment": "ok",
        },
    ),
    "preference_match": (match_task, {"coverage": "partially", "comment": "broader"}),
    "memory_verify": (
        memory_task,
        {
            "decisions": [
                {"key": "m:0", "decision": "accept"},
                {"key": "m:1", "decision": "reject", "reason": "too_generic"},
                {
                    "key": "m:2",
                    "decision": "edit",
                    "edited": {
                        "value": "User eats no meat",
                        "label": "Preferences/Food",
                        "type": "direct",
                        "time_scope": "unknown",
                    },
                },
            ]
        },
    ),
}


@pytest.mark.parametrize("kind", list(VALUES))
def test_values_survive_a_round_trip_through_label_studio_results(kind):
    make, values = VALUES[kind]
    task = make()
    lsk = ls_kind(kind)
    back = lsk.values(lsk.results(values, task), task)
    assert back == get_kind(kind).validate(values, task)


@pytest.mark.parametrize("kind", list(VALUES))
def test_every_control_and_data_variable_of_the_config_is_consistent(kind):
    make, _ = VALUES[kind]
    root = ET.fromstring(label_config(kind))
    data = task_data(make())
    variables = {el.get("value")[1:] for el in root.iter() if (el.get("value") or "").startswith("$")}
    assert variables <= set(data), f"config reads data keys the task lacks: {variables - set(data)}"
    controls = {el.get("name") for el in root.iter() if el.get("toName")}
    assert controls == ls_kind(kind).controls
    assert data[TASK_ID_KEY] == make().task_id


def test_dialogue_kinds_show_turns_as_dialogue_paragraphs():
    for kind in ("preference_expressed", "memory_verify"):
        para = ET.fromstring(label_config(kind)).find(".//Paragraphs")
        assert (
            para.get("layout") == "dialogue"
            and para.get("nameKey") == "role"
            and para.get("textKey") == "content"
        )


def test_checklist_slots_beyond_the_task_offer_no_choices():
    data = task_data(expressed_task(n_items=2))
    assert [len(data[f"item{i}_options"]) for i in range(4)] == [2, 2, 0, 0]
    assert data["q2"] == "" and "(keys 3 / 4)" in data["q1"]
    hotkeys = [o["hotkey"] for i in range(2) for o in data[f"item{i}_options"]]
    assert hotkeys == ["1", "2", "3", "4"]


def choice(control: str, to: str, value: str) -> dict:
    """One Label Studio ``choices`` result."""
    return {"from_name": control, "to_name": to, "type": "choices", "value": {"choices": [value]}}


#: A choices result the kind refuses: ``{case: (the task, its kind, the result, what the refusal says)}``.
REFUSED_CHOICES = {
    "a choice the config does not offer": (
        match_task,
        "preference_match",
        choice("coverage", "candidate", "mostly"),
        "coverage",
    ),
    "a result from an unknown control": (
        match_task,
        "preference_match",
        choice("sentiment", "candidate", "fully"),
        "unknown control 'sentiment'",
    ),
    "a missing checklist decision fails the kind schema": (
        lambda: expressed_task(n_items=2),
        "preference_expressed",
        choice("item0", "dialogue", "expressed"),
        "items",
    ),
    "a memory decision beyond the candidates": (
        lambda: memory_task(n=2),
        "memory_verify",
        choice("c5", "dialogue", "accept"),
        "only 2 candidates",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED_CHOICES))
def test_a_choices_result_the_kind_cannot_take_is_rejected(case):
    make_task, kind, result, refusal = REFUSED_CHOICES[case]
    with pytest.raises(LabelError, match=refusal):
        ls_kind(kind).values([result], make_task())


def test_evidence_on_an_assistant_turn_is_rejected():
    task = expressed_task(n_items=1)
    results = ls_kind("preference_expressed").results({"items": [{"item": 0, "expressed": True}]}, task)
    results.append(
        {
            "from_name": "evidence",
            "to_name": "dialogue",
            "type": "paragraphlabels",
            "value": {"start": 1, "end": 1, "startOffset": 0, "endOffset": 5, "paragraphlabels": ["item 1"]},
        }
    )
    with pytest.raises(LabelError, match="not user turns"):
        ls_kind("preference_expressed").values(results, task)


def test_tasks_larger_than_the_config_do_not_fit():
    assert ls_kind("memory_verify").fits(memory_task(n=MAX_CANDIDATES)) is None
    assert "61 candidates" in ls_kind("memory_verify").fits(memory_task(n=MAX_CANDIDATES + 1))
    assert "5 checklist items" in ls_kind("preference_expressed").fits(expressed_task(n_items=5))


def test_config_command_prints_the_xml_of_a_kind():
    result = CliRunner().invoke(cli, ["labelstudio", "config", "preference_match"])
    assert result.exit_code == 0
    root = ET.fromstring(result.output)
    assert [c.get("hotkey") for c in root.iter("Choice")] == ["1", "2", "3"]


def test_push_without_a_token_is_one_clear_error(project, monkeypatch):
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    args = ["labelstudio", "push", "preference_match", "--url", "http://127.0.0.1:9", "-p", str(project.root)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "LABEL_STUDIO_API_KEY" in result.output and "Traceback" not in result.output


def test_pull_before_push_names_the_push_command(project, monkeypatch):
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "0" * 40)
    args = ["labelstudio", "pull", "memory_verify", "--url", "http://127.0.0.1:9", "-p", str(project.root)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "prefkit labelstudio push memory_verify" in result.output


def test_the_annotation_map_replaces_its_row_on_an_edit(project):
    store = project.store
    store.labels.add_tasks([match_task()])
    store.accounts.add_user("ann", "annotator", "password123")
    store.labelstudio.map_annotation(
        "u", 1, 7, task_id="preference_match_t1", annotator="ann", event_id="e1", updated_at="t1"
    )
    store.labelstudio.map_annotation(
        "u", 1, 7, task_id="preference_match_t1", annotator="ann", event_id="e2", updated_at="t2"
    )
    rows = store.labelstudio.annotations("u", 1)
    assert list(rows) == [7] and rows[7].event_id == "e2" and rows[7].updated_at == "t2"


def test_the_label_studio_maps_are_upserts_on_both_backends(any_project):
    store = any_project.store
    task = match_task()
    store.labels.add_tasks([task])
    store.accounts.add_user("ann", "annotator", "password123")
    store.labelstudio.set_project("u", "preference_match", 7, "first")
    store.labelstudio.set_project(
        "u", "preference_match", 8, "recreated"
    )  # deleted in Label Studio, pushed again
    assert [(p.ls_project_id, p.title) for p in store.labelstudio.projects("u")] == [(8, "recreated")]

    assert store.labelstudio.add_tasks("u", 8, {task.task_id: 70}) == 1
    assert store.labelstudio.add_tasks("u", 8, {task.task_id: 70}) == 0  # a second push, or another process
    assert store.labelstudio.add_tasks("u", 8, {task.task_id: 71}) == 0  # a task is mapped once per project
    assert store.labelstudio.task_ids("u", 8) == {task.task_id: 70}

    def event(event_id: str, supersedes: str | None = None) -> LabelEvent:
        return LabelEvent(
            event_id=event_id,
            task_id=task.task_id,
            kind="preference_match",
            annotator="ann",
            values={"coverage": "fully"},
            supersedes=supersedes,
            source="labelstudio",
            created_at=utcnow(),
        )

    assert store.labelstudio.record_annotation(event("e1"), "u", 8, 5, updated_at="2026-01-01T00:00:01Z")
    assert not store.labelstudio.record_annotation(event("e1"), "u", 8, 5, updated_at="2026-01-01T00:00:01Z")
    assert store.labelstudio.record_annotation(
        event("e2", "e1"), "u", 8, 5, updated_at="2026-01-01T00:00:02Z"
    )
    # A slower pull that read the annotation before its edit finishes last: the map keeps the edit.
    store.labelstudio.map_annotation(
        "u", 8, 5, task_id=task.task_id, annotator="ann", event_id="e1", updated_at="2026-01-01T00:00:01Z"
    )
    row = store.labelstudio.annotations("u", 8)[5]
    assert (row.event_id, row.updated_at) == ("e2", "2026-01-01T00:00:02Z")
    assert [e.event_id for e in store.labels.events()] == ["e1", "e2"]


@pytest.mark.parametrize("pushed_before", [False, True])
def test_an_unreachable_server_is_one_clear_error(project, monkeypatch, pushed_before):
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "0" * 40)
    url = "http://127.0.0.1:9"  # the discard port: nothing listens there
    project.store.content.add_preference_pairs(
        [PreferencePair("p1", "Q?", "C", "t")],
        Provenance(source="test"),
    )
    if pushed_before:
        project.store.labelstudio.set_project(url, "preference_match", 7, "t")
    args = ["labelstudio", "push", "preference_match", "--url", url, "-p", str(project.root)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "cannot reach Label Studio" in result.output and "Traceback" not in result.output
