"""Every editor reads its form at Save and records nothing unasked (Streamlit AppTest, a declared kind):
a Save with a question left open names it and records nothing, in each editor alike; changes left
unsaved in the editor of a label are a draft, shown again when it is reopened (by another browser
session, by the other editor), recorded only by Save edit, and gone with Discard changes."""

from __future__ import annotations

import json

import pytest
from appkit import app
from declaredkind import ANSWERS, NAME, app_project, declared_project
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.workflow import WorkflowError

FIRST = ANSWERS["ann1"]["i1"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    yield from app_project(declared_project(tmp_path / "proj", None, overlap="2"), monkeypatch)


def _labelled(project, who: str = "alice", values: dict = FIRST):
    item = workflow.current_item(project, who, NAME)
    workflow.submit(project, who, item, values)
    return item


def _annotate(project):
    item = workflow.current_item(project, "alice", NAME)
    return app(project.store.accounts.user("alice"), NAME), item.event_id, f"{item.event_id}:submit"


def _my_items(project):
    item = _labelled(project)
    at = app(project.store.accounts.user("alice"))
    at.switch_page("views/my_items.py").run()
    at.button(key=f"reopen:{item.event_id}").click().run()
    return at, f"edit:{item.event_id}", f"edit:{item.event_id}:save"


def _previous(project):
    item = _labelled(project)
    at = app(project.store.accounts.user("alice"), NAME)
    at.button(key=f"prev:{NAME}").click().run()  # the P key
    return at, f"edit:{item.event_id}", f"edit:{item.event_id}:save"


def _adjudication(project):
    for who, better in (("alice", "A"), ("bob", "B")):
        _labelled(project, who, {**FIRST, "better": better})
    at = app(project.store.accounts.user("maya"))
    at.session_state["adj_kind"] = NAME
    at.switch_page("views/adjudicate.py").run()
    return at, f"adj:{at.session_state['adj_task']}", f"adj:{at.session_state['adj_task']}:save"


def _recorded(project) -> int:
    return len(project.store.labels.events(kind=NAME)) + sum(
        len(project.store.labels.adjudications(t))
        for t in project.store.labels.task_ids_by_ref(NAME, ["i1", "i2"]).values()
    )


EDITORS = {
    "annotate": _annotate,
    "my_items": _my_items,
    "previous_item": _previous,
    "adjudication": _adjudication,
}


@pytest.mark.parametrize(
    ("order", "said"),
    [
        ([], "Order the models first."),
        (["m2"], "Order the models (every value placed: 1 of 3 so far) first."),
    ],
    ids=["empty", "partly_placed"],
)
@pytest.mark.parametrize("editor", EDITORS)
def test_a_save_with_a_question_left_open_names_it_and_records_nothing(project, editor, order, said):
    at, prefix, save = EDITORS[editor](project)
    before = _recorded(project)
    at.multiselect(key=f"{prefix}:q:order").set_value(order).run()
    if editor == "annotate":  # the other required questions answered: only the order is open
        at.button_group(key=f"{prefix}:q:better").set_value("A").run()
        at.button_group(key=f"{prefix}:q:strength").set_value(2).run()
    at.button(key=save).click().run()
    assert not at.exception
    (shown,) = [w.value.replace("\\", "") for w in at.warning]  # the words, without markdown's escapes
    assert shown.startswith("Answer ") and shown.endswith(said)
    assert _recorded(project) == before


def test_changes_left_in_an_editor_are_a_draft_that_comes_back_and_only_save_records(project):
    item = _labelled(project)
    prefix, task_id = f"edit:{item.event_id}", item.task.task_id
    at = app(project.store.accounts.user("alice"))
    at.switch_page("views/my_items.py").run()
    at.button(key=f"reopen:{item.event_id}").click().run()
    at.button_group(key=f"{prefix}:q:strength").set_value(5).run()
    at.text_area(key=f"{prefix}:q:why").set_value("changed my mind").run()
    kept = project.store.drafts.draft("alice", task_id)
    assert kept[0] == item.event_id and json.loads(kept[1])["q:why"] == "changed my mind"
    assert [e.event_id for e in project.store.labels.events(kind=NAME)] == [item.event_id]  # nothing recorded
    # signed in again elsewhere, back with P: the other editor of the same label shows the draft
    again = app(project.store.accounts.user("alice"), NAME)
    again.button(key=f"prev:{NAME}").click().run()
    assert again.button_group(key=f"{prefix}:q:strength").value == 5
    assert again.text_area(key=f"{prefix}:q:why").value == "changed my mind"
    assert any("Unsaved changes" in c.value for c in again.caption)
    again.button(key=f"{prefix}:save").click().run()
    live = project.store.labels.live_event("alice", task_id)
    assert (live.supersedes, live.values["strength"], live.values["why"]) == (
        item.event_id,
        5,
        "changed my mind",
    )
    assert project.store.drafts.draft("alice", task_id) is None  # the edit took its draft with it


def test_discard_changes_drops_the_draft_and_shows_the_label_again(project):
    item = _labelled(project)
    at = app(project.store.accounts.user("alice"))
    at.switch_page("views/my_items.py").run()
    at.button(key=f"reopen:{item.event_id}").click().run()
    at.button_group(key=f"edit:{item.event_id}:q:strength").set_value(5).run()
    assert project.store.drafts.draft("alice", item.task.task_id) is not None
    at.button(key=f"edit:{item.event_id}:discard").click().run()
    assert project.store.drafts.draft("alice", item.task.task_id) is None
    assert at.button_group(key=f"edit1:{item.event_id}:q:strength").value == FIRST["strength"]
    assert [e.event_id for e in project.store.labels.events(kind=NAME)] == [item.event_id]


def test_an_editor_draft_is_kept_only_for_the_live_label_of_a_finished_item(project):
    first = _labelled(project)
    ev = project.store.labels.event(first.event_id)
    with pytest.raises(WorkflowError, match="not bob's live label"):  # bob's account, alice's label
        workflow.save_edit_draft(project, "bob", ev, {"q:why": "x"})
    workflow.edit_label(project, "alice", ev.event_id, {**FIRST, "strength": 3})
    with pytest.raises(WorkflowError, match="not alice's live label"):  # replaced since it was opened
        workflow.save_edit_draft(project, "alice", ev, {"q:why": "late"})
    assert project.store.drafts.draft("alice", ev.task_id) is None
