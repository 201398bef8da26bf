"""The annotator's record equals the annotator's decision, through the library and Streamlit's AppTest:
a submit only for the showing on screen (two tabs), notices at the top of the item.

The same behaviours in a real browser: tests/test_browser_fidelity.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from appkit import ALICE, app, project_fixtures
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import workflow
from streamlit.testing.v1 import AppTest

template, project = project_fixtures(env=True, n=3, overlap=2, alps=True)


def tab(kind: str) -> AppTest:
    """A browser tab of alice's on ``kind`` (its own Streamlit session)."""
    return app(ALICE, kind)


def warnings(at: AppTest) -> str:
    """The warnings' text as read (markdown escapes dropped)."""
    return " ".join(w.value for w in at.warning).replace("\\", "")


def header(at: AppTest) -> str:
    return next(m.value for m in at.markdown if "· item" in m.value)


# -- the store refuses a submit from a showing that is not the open one -----------------------------
def test_the_same_showing_answered_again_differently_is_refused(project):
    item = workflow.current_item(project, "alice", "preference_match")
    assert workflow.submit(project, "alice", item, {"coverage": "fully"})
    assert not workflow.submit(project, "alice", item, {"coverage": "fully"})  # a retry: recorded once
    with pytest.raises(workflow.StaleSubmit, match="already finished with another answer"):
        workflow.submit(project, "alice", item, {"coverage": "not_covered"})
    with pytest.raises(workflow.StaleSubmit):
        workflow.skip(project, "alice", item, "cannot judge")
    assert [e.values for e in project.store.labels.events(annotator="alice")] == [{"coverage": "fully"}]


def test_a_submit_from_another_showing_of_the_open_item_is_refused(project):
    item = workflow.current_item(project, "alice", "preference_match")
    other = replace(item, event_id="ev_" + "0" * 32)  # not the id written when the item was shown
    with pytest.raises(workflow.StaleSubmit, match="no longer the one on your screen"):
        workflow.submit(project, "alice", other, {"coverage": "fully"})
    assert project.store.labels.event(other.event_id) is None
    assert workflow.current_item(project, "alice", "preference_match") == item  # still open, unchanged


# -- two tabs on one account ----------------------------------------------------------------------
def test_a_stale_tab_says_so_and_records_nothing_for_a_key_in_matching(project):
    first, second = tab("preference_match"), tab("preference_match")
    x = workflow.current_item(project, "alice", "preference_match")
    second.button(key=f"{x.event_id}:fully").click().run()
    first.button(key=f"{x.event_id}:not_covered").click().run()  # the stale tab still shows x
    assert "no longer open for you here" in warnings(first) or "Not recorded" in warnings(first)
    y = workflow.current_item(project, "alice", "preference_match")
    assert y.event_id != x.event_id and md_escape(y.task.item_ref) in header(first)  # the current item, shown
    assert [e.values for e in project.store.labels.events(annotator="alice")] == [{"coverage": "fully"}]


def test_the_same_key_in_a_stale_tab_is_not_passed_off_as_saved_here(project):
    first, second = tab("preference_match"), tab("preference_match")
    x = workflow.current_item(project, "alice", "preference_match")
    second.button(key=f"{x.event_id}:fully").click().run()
    first.button(key=f"{x.event_id}:fully").click().run()
    assert "already been saved, with the same answer, in another tab" in warnings(first)
    assert not [m for m in first.markdown if "Saved ·" in m.value or "Already saved" in m.value]
    assert len(project.store.labels.events(annotator="alice")) == 1


def test_a_key_in_a_stale_expressed_tab_shows_the_current_item_and_records_nothing(project):
    first, second = tab("preference_expressed"), tab("preference_expressed")
    x = workflow.current_item(project, "alice", "preference_expressed")
    for key in ("kE", "kN"):
        second.button(key=f"{x.event_id}:{key}").click().run()
    second.button(key=f"{x.event_id}:submit").click().run()
    first.button(key=f"{x.event_id}:kE").click().run()  # the first key in the stale tab
    y = workflow.current_item(project, "alice", "preference_expressed")
    assert "no longer open for you here" in warnings(first) and x.task.item_ref in warnings(first)
    assert md_escape(y.task.item_ref) in header(first)
    assert [e.task_id for e in project.store.labels.events(annotator="alice")] == [x.task.task_id]
    first.button(key=f"{y.event_id}:kE").click().run()  # the next key works on what is on screen
    assert "no longer open" not in warnings(first)


def test_a_tab_that_finished_its_own_item_shows_no_stale_notice(project):
    at = tab("preference_match")
    x = workflow.current_item(project, "alice", "preference_match")
    at.button(key=f"{x.event_id}:fully").click().run()
    assert not at.warning and any("Saved ·" in m.value for m in at.markdown)


# -- errors where the eye is, contradictions before saving ------------------------------------------
def test_contradictions_are_refused_by_the_library_naming_the_part(project):
    from prefkit.curation.annotation.task_kinds import ContradictoryLabel

    item = workflow.current_item(project, "alice", "preference_expressed")
    values = {"items": [{"item": 0, "expressed": False, "evidence": [2]}, {"item": 1, "expressed": True}]}
    with pytest.raises(ContradictoryLabel) as caught:
        workflow.submit(project, "alice", item, values)
    [found] = caught.value.found
    assert found.unit == "item0" and "Item 1 is Not expressed but has evidence (turn 2)" in found.message
    assert project.store.labels.events() == []
    values["items"][0]["evidence"] = []
    assert workflow.submit(project, "alice", item, values)


def test_a_missing_memory_the_candidates_already_say_is_a_contradiction(project):
    from prefkit.curation.annotation.task_kinds import ContradictoryLabel

    item = workflow.current_item(project, "alice", "memory_verify")
    first = item.task.payload["candidates"][0]
    said = first["memory"]["value"]
    decisions = [{"key": c["key"], "decision": "accept"} for c in item.task.payload["candidates"]]
    added = [{"value": f"  {said.upper()} ", "label": "UNMAPPED", "type": "direct", "time_scope": "unknown"}]
    with pytest.raises(ContradictoryLabel) as caught:
        workflow.submit(project, "alice", item, {"decisions": decisions, "added": added * 2})
    assert [c.unit for c in caught.value.found] == ["added0", "added1"]
    assert f"repeats candidate “{said}” ({first['model']})" in caught.value.found[0].message


def test_an_empty_missing_memory_is_named_at_the_top_and_by_its_row_and_the_item_stays(project):
    at = tab("memory_verify")
    item = workflow.current_item(project, "alice", "memory_verify")
    at.button(key=f"{item.event_id}:addbtn").click().run()
    at.button(key=f"{item.event_id}:acc").click().run()
    at.button(key=f"{item.event_id}:submit").click().run()
    top, *others = (w.value.replace("\\", "") for w in at.warning)  # the first on the page: the top
    assert top.startswith("Missing memory 1 is empty: type the memory the models missed, or remove the row")
    assert [w for w in others if w.startswith("Empty: type the memory the models missed")]  # by its row
    assert "added.0.value" not in top and any(c.value == "Missing memory 1" for c in at.caption)
    assert project.store.labels.events() == [] and md_escape(item.task.item_ref) in header(at)


def test_a_contradiction_is_pointed_out_before_saving_and_can_be_fixed(project):
    at = tab("preference_expressed")
    item = workflow.current_item(project, "alice", "preference_expressed")
    p = item.event_id
    at.radio(key=f"{p}:exp:0").set_value("Not expressed").run()
    at.radio(key=f"{p}:exp:1").set_value("Expressed").run()
    at.session_state[f"{p}:ev:0"] = [2]  # the evidence pill of item 1
    at.run()
    at.button(key=f"{p}:submit").click().run()
    messages = [w.value.replace("\\", "") for w in at.warning]
    assert messages[0].startswith("Not saved, the answers contradict each other: Item 1 is Not expressed")
    assert "choose Expressed, or remove the evidence" in messages[1]  # beside item 1
    assert project.store.labels.events() == []
    at.radio(key=f"{p}:exp:0").set_value("Expressed").run()
    at.button(key=f"{p}:submit").click().run()
    [ev] = project.store.labels.events()
    assert ev.values["items"][0] == {"item": 0, "expressed": True, "evidence": [2]}


# -- a reload: the half-done form comes back; an item that merely opens writes nothing ------------------
def test_a_new_browser_session_gets_the_half_done_form_back(project):
    first = tab("preference_expressed")
    item = workflow.current_item(project, "alice", "preference_expressed")
    first.radio(key=f"{item.event_id}:exp:0").set_value("Not expressed").run()
    first.text_area(key=f"{item.event_id}:comment").input("the user never says it").run()
    assert project.store.drafts.draft("alice", item.task.task_id)[0] == item.event_id
    again = tab("preference_expressed")  # a reload: a new session, nothing in its state
    assert again.radio(key=f"{item.event_id}:exp:0").value == "Not expressed"
    assert again.radio(key=f"{item.event_id}:active").value == 1  # the next undecided item, as left
    assert again.text_area(key=f"{item.event_id}:comment").value == "the user never says it"
    assert project.store.labels.events() == []


def test_labelling_with_one_key_writes_no_draft(project):
    at = tab("preference_match")
    for _ in range(2):
        item = workflow.current_item(project, "alice", "preference_match")
        at.button(key=f"{item.event_id}:partially").click().run()
    assert project.store.count("drafts") == 0 and len(project.store.labels.events()) == 2
