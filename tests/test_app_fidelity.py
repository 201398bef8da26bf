"""The annotator's record equals the annotator's decision, through the library and Streamlit's AppTest:
a submit only for the showing on screen (two tabs), notices at the top of the item.

The same behaviours in a real browser: tests/test_browser_fidelity.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from appkit import project_fixtures
from conftest import ROOT
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import workflow
from prefkit.curation.store.accounts import Account
from streamlit.testing.v1 import AppTest

APP = str(ROOT / "annotate_app" / "app.py")
ALICE = Account("alice", "annotator", None, True, "2026-01-01T00:00:00Z")

template, project = project_fixtures(env=True, n=3, overlap=2, alps=True)


def tab(kind: str) -> AppTest:
    """A browser tab of alice's on ``kind`` (its own Streamlit session)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["user"] = ALICE
    at.session_state["kind"] = kind
    at.session_state[f"intro:{kind}"] = True
    return at.run()


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
