"""Suggestions in memory verification (Streamlit AppTest), and the arm on skips, flags and label files:
an assisted item starts decided as suggested and says what the evidence check found; a control item
starts undecided and shows nothing; a skip records the arm the item showed; a labels file carries the
arm and the suggestion both ways, and refuses an arm it cannot tie to this project's suggestion."""

from __future__ import annotations

import io
import json

import pytest
from appkit import ALICE, app, project_fixtures, with_share
from prefkit.curation.annotation import labels_io, workflow
from streamlit.testing.v1 import AppTest

KIND = "memory_verify"

template, project = project_fixtures(env=True, n=3, overlap=2, alps=True)


def decisions(at: AppTest, item) -> dict[str, str | None]:
    keys = [c["key"] for c in item.task.payload["candidates"]]
    return {k: at.segmented_control(key=f"{item.event_id}:d:{k}").value for k in keys}


def test_an_assisted_memory_item_starts_as_suggested_and_submit_confirms_it(project):
    with_share(project, 0.0, KIND)
    at = app(ALICE, KIND)
    item = workflow.current_item(project, "alice", KIND)
    sugg = project.store.suggestions.for_task(item.task.task_id)
    suggested = {d["key"]: d["decision"] for d in sugg.values["decisions"]}
    assert decisions(at, item) == suggested  # every candidate decided as suggested
    kept = sum(d == "accept" for d in suggested.values())
    notes = [m.value.replace("\\", "") for m in at.markdown if "Suggestion by" in m.value]  # unescaped
    assert len(notes) == 1 and f"{kept} supported, {len(suggested) - kept} not grounded" in notes[0]
    found = [m.value.replace("\\", "") for m in at.markdown if "suggested: " in m.value]
    assert len(found) == len(suggested)  # each candidate says what the suggestion found
    for key, why in sugg.detail["memories"].items():
        turn = why["found_in"]
        words = f"quote found in turn {turn}" if turn is not None else "quote not found in the dialogue"
        assert sum(words in m for m in found) >= 1, key
    at.button(key=f"{item.event_id}:submit").click().run()
    ev = project.store.labels.event(item.event_id)
    assert ev is not None and (ev.assist_arm, ev.suggestion_id) == ("assisted", sugg.suggestion_id)
    assert [(d["key"], d["decision"]) for d in ev.values["decisions"]] == list(suggested.items())


def test_a_changed_suggestion_is_recorded_as_the_annotator_changed_it(project):
    with_share(project, 0.0, KIND)
    at = app(ALICE, KIND)
    item = workflow.current_item(project, "alice", KIND)
    first = item.task.payload["candidates"][0]["key"]
    at.segmented_control(key=f"{item.event_id}:d:{first}").set_value("reject").run()
    at.button(key=f"{item.event_id}:submit").click().run()  # a rejection says why: asked, not assumed
    assert project.store.labels.event(item.event_id) is None
    assert any("Choose why you reject" in w.value for w in at.warning)
    at.selectbox(key=f"{item.event_id}:why:{first}").set_value("duplicate").run()
    at.button(key=f"{item.event_id}:submit").click().run()
    ev = project.store.labels.event(item.event_id)
    assert ev.values["decisions"][0]["decision"] == "reject" and ev.assist_arm == "assisted"
    assert ev.values["decisions"][0]["reason"] == "duplicate"


def test_a_control_memory_item_starts_undecided_and_shows_no_suggestion(project):
    with_share(project, 1.0, KIND)
    at = app(ALICE, KIND)
    item = workflow.current_item(project, "alice", KIND)
    assert set(decisions(at, item).values()) == {None}
    assert not any("Suggest" in m.value or "suggested" in m.value for m in at.markdown)
    at.button(key=f"{item.event_id}:acc").click().run()
    at.button(key=f"{item.event_id}:submit").click().run()
    ev = project.store.labels.event(item.event_id)
    sugg = project.store.suggestions.for_task(item.task.task_id)
    assert (ev.assist_arm, ev.suggestion_id) == ("control", sugg.suggestion_id)


@pytest.mark.parametrize(("share", "arm"), [(0.0, "assisted"), (1.0, "control")])
def test_a_skip_records_the_arm_the_item_showed(project, share, arm):
    with_share(project, share, KIND)
    at = app(ALICE, KIND)
    item = workflow.current_item(project, "alice", KIND)
    at.toggle(key=f"{item.event_id}:trouble").set_value(True).run()
    at.selectbox(key=f"{item.event_id}:skipr").set_value("cannot judge").run()
    at.button(key=f"{item.event_id}:skip").click().run()
    ev = project.store.labels.event(item.event_id)
    sugg = project.store.suggestions.for_task(item.task.task_id)
    assert (ev.action, ev.assist_arm, ev.suggestion_id) == ("skip", arm, sugg.suggestion_id)


def test_a_flag_records_the_arm_too(project):
    with_share(project, 0.0, KIND)
    item = workflow.current_item(project, "alice", KIND)
    from prefkit.curation.annotation.suggestions import exposure_for

    shown = exposure_for(project, "alice", item.task)
    assert workflow.flag(project, "alice", item, "broken dialogue", assist=shown)
    ev = project.store.labels.event(item.event_id)
    assert (ev.action, ev.assist_arm, ev.suggestion_id) == ("flag", "assisted", shown.suggestion_id)


def _label_both_arms(project):
    """alice labels one item on the assisted arm; bob one item with no arm (no suggestion for it)."""
    from prefkit.curation.annotation.suggestions import exposure_for

    with_share(project, 0.0, KIND)
    item = workflow.current_item(project, "alice", KIND)
    shown = exposure_for(project, "alice", item.task)
    workflow.submit(project, "alice", item, shown.values, assist=shown)
    other = workflow.current_item(project, "bob", "preference_match")
    workflow.submit(project, "bob", other, {"coverage": "fully"})
    return item, shown


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_labels_file_carries_the_arm_and_the_suggestion_both_ways(project, tmp_path, fmt):
    item, shown = _label_both_arms(project)
    out = io.StringIO()
    labels_io.export_labels(project.store, out, fmt)
    rows = labels_io.read_rows(_write(tmp_path / f"labels.{fmt}", out.getvalue()), fmt)
    arms = {(r["annotator"], r["task_kind"]): (r.get("assist_arm"), r.get("suggestion_id")) for _, r in rows}
    assert arms[("alice", KIND)] == ("assisted", shown.suggestion_id)
    assert arms[("bob", "preference_match")] == (None, None)
    # read back as another annotator's labels (new events: their event ids cleared, as an edited export's
    # must be): the arm comes back as it was
    cleared = io.StringIO()
    labels_io.write_rows([{**r, "event_id": None} for _, r in rows], cleared, fmt)
    text = cleared.getvalue().replace("alice", "maya").replace('"bob"', '"maya"').replace("\nbob,", "\nmaya,")
    labels_io.import_labels(project.store, _write(tmp_path / f"again.{fmt}", text), fmt)
    back = {e.kind: e for e in project.store.labels.events(annotator="maya")}
    assert (back[KIND].task_id, back[KIND].assist_arm, back[KIND].suggestion_id) == (
        item.task.task_id,
        "assisted",
        shown.suggestion_id,
    )
    assert (back["preference_match"].assist_arm, back["preference_match"].suggestion_id) == (None, None)


def test_a_labels_file_arm_must_name_a_suggestion_of_this_project_for_that_task(project, tmp_path):
    item, shown = _label_both_arms(project)
    row = {
        "task_kind": KIND,
        "item_id": item.task.item_ref,
        "values": shown.values,
        "timestamp": "2026-12-01T10:00:00+00:00",
    }
    bad = [
        ({"assist_arm": "assisted"}, "suggestion_id: required with assist_arm 'assisted'"),
        ({"suggestion_id": shown.suggestion_id}, "assist_arm: expected one of assisted, control"),
        ({"assist_arm": "both", "suggestion_id": shown.suggestion_id}, "assist_arm: expected one of"),
        (
            {"assist_arm": "control", "suggestion_id": "sg_elsewhere"},
            "no suggestion 'sg_elsewhere' in this project",
        ),
    ]
    other = next(s for s in project.store.suggestions.latest(KIND).values() if s.task_id != item.task.task_id)
    bad.append(({"assist_arm": "control", "suggestion_id": other.suggestion_id}, "is for another task"))
    before = len(project.store.labels.events())
    for extra, said in bad:
        path = _write(tmp_path / "bad.jsonl", json.dumps({"annotator": "bob", **row, **extra}) + "\n")
        with pytest.raises(labels_io.LabelsFileError) as err:
            labels_io.import_labels(project.store, path)
        assert f"{path}:1: " in str(err.value) and said in str(err.value), str(err.value)
    assert len(project.store.labels.events()) == before  # nothing written


def _write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path
