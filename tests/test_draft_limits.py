"""Issue 32: a draft is kept only for the annotator's own item as shown now, within a size bound,
with finite values; every refusal is one line and writes nothing."""

from __future__ import annotations

import math

import pytest
from appkit import ALICE, app, project_fixtures
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.workflow import MAX_DRAFT_BYTES, WorkflowError

template, project = project_fixtures(n=2, overlap=2)
KIND = "preference_expressed"


def test_a_draft_for_another_annotators_item_is_refused_and_writes_nothing(project):
    item = workflow.current_item(project, "alice", KIND)
    with pytest.raises(WorkflowError, match=f"not bob's open item as shown \\({item.event_id}\\)"):
        workflow.save_draft(project, "bob", item, {"comment": "mine now"})
    assert project.store.drafts.draft("bob", item.task.task_id) is None
    assert project.store.drafts.draft("alice", item.task.task_id) is None


def test_a_draft_of_a_submitted_showing_is_refused(project):
    item = workflow.current_item(project, "alice", KIND)
    values = {"items": [{"item": 0, "expressed": True, "evidence": [2]}, {"item": 1, "expressed": False}]}
    workflow.submit(project, "alice", item, values)
    with pytest.raises(WorkflowError, match="is not alice's open item"):
        workflow.save_draft(project, "alice", item, {"comment": "late"})
    assert project.store.drafts.draft("alice", item.task.task_id) is None


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, [1.0, {"deep": math.nan}]])
def test_a_draft_with_a_value_that_is_not_finite_is_refused(project, bad):
    item = workflow.current_item(project, "alice", KIND)
    with pytest.raises(WorkflowError, match="finite"):
        workflow.save_draft(project, "alice", item, {"score": bad})
    assert project.store.drafts.draft("alice", item.task.task_id) is None


def test_a_draft_over_the_size_bound_is_refused_and_one_at_it_is_kept(project):
    item = workflow.current_item(project, "alice", KIND)
    overhead = len('{"comment":""}')
    with pytest.raises(WorkflowError, match=f"at most {MAX_DRAFT_BYTES} bytes"):
        workflow.save_draft(project, "alice", item, {"comment": "x" * (MAX_DRAFT_BYTES - overhead + 1)})
    assert project.store.drafts.draft("alice", item.task.task_id) is None
    workflow.save_draft(project, "alice", item, {"comment": "x" * (MAX_DRAFT_BYTES - overhead)})
    assert len(project.store.drafts.draft("alice", item.task.task_id)[1]) == MAX_DRAFT_BYTES


@pytest.mark.parametrize("bad", [["not", "an", "object"], {1: "a key that is no name"}, {"x": object()}])
def test_a_draft_that_is_not_an_object_of_json_values_is_refused(project, bad):
    item = workflow.current_item(project, "alice", KIND)
    with pytest.raises(WorkflowError, match="draft"):
        workflow.save_draft(project, "alice", item, bad)
    assert project.store.drafts.draft("alice", item.task.task_id) is None


def test_the_owners_draft_of_the_showing_item_is_kept(project):
    item = workflow.current_item(project, "alice", KIND)
    workflow.save_draft(project, "alice", item, {"comment": "half-way", "ev:0": [2]})
    assert workflow.annotator_view(project, "alice", KIND).draft == {"comment": "half-way", "ev:0": [2]}


# -- through the app ----------------------------------------------------------------------------------------
def test_the_annotate_page_says_a_draft_over_the_bound_is_not_kept_and_keeps_the_form(project, monkeypatch):
    monkeypatch.setenv("PREFKIT_PROJECT", str(project.root))
    page = app(ALICE, KIND)
    item = workflow.current_item(project, "alice", KIND)
    page.session_state[f"{item.event_id}:comment"] = "x" * (MAX_DRAFT_BYTES + 1)
    page.run()
    assert not page.exception
    warned = [w.value for w in page.warning if w.value.startswith("Not kept as a draft")]
    assert len(warned) == 1 and f"a draft has at most {MAX_DRAFT_BYTES} bytes" in warned[0]
    assert project.store.drafts.draft("alice", item.task.task_id) is None
    assert page.button(key=f"{item.event_id}:submit")  # the item's form is still there
