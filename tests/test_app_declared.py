"""A declared kind on the app's other pages (Streamlit AppTest): an earlier label changed under My
items, a tie decided on the adjudication page, both with the form drawn from the declaration."""

from __future__ import annotations

import pytest
from appkit import app
from declaredkind import ANSWERS, NAME, app_project, declared_project
from prefkit.curation.annotation import workflow


@pytest.fixture
def project(tmp_path, monkeypatch):
    yield from app_project(declared_project(tmp_path / "proj", None, overlap="2"), monkeypatch)


def test_an_earlier_label_is_changed_under_my_items(project):
    item = workflow.current_item(project, "alice", NAME)
    workflow.submit(project, "alice", item, ANSWERS["ann1"][item.task.item_ref])
    at = app(project.store.accounts.user("alice"))
    at.switch_page("views/my_items.py").run()
    at.button(key=f"reopen:{item.event_id}").click().run()
    p = f"edit:{item.event_id}"
    at.button_group(key=f"{p}:q:strength").set_value(3).run()
    at.button(key=f"{p}:save").click().run()
    assert not at.exception
    live = [e for e in project.store.labels.effective_events(NAME) if e.annotator == "alice"]
    assert [(e.values["strength"], e.values["better"], e.supersedes) for e in live] == [
        (3, ANSWERS["ann1"][item.task.item_ref]["better"], item.event_id)
    ]


def test_a_tie_is_decided_on_the_adjudication_page(project):
    for who, better in (("alice", "A"), ("bob", "B")):
        item = workflow.current_item(project, who, NAME)
        assert item.task.item_ref == "i1"
        workflow.submit(project, who, item, {"better": better, "strength": 2, "order": ["m1", "m2", "m3"]})
    at = app(project.store.accounts.user("maya"))
    at.session_state["adj_kind"] = NAME  # the page's kind picker, on the declared kind
    at.switch_page("views/adjudicate.py").run()
    tid = at.session_state["adj_task"]
    assert project.store.labels.task(tid).item_ref == "i1"
    assert at.button_group(key=f"adj:{tid}:q:strength").value == 2  # what the annotators agreed on
    at.button_group(key=f"adj:{tid}:q:better").set_value("tie").run()
    at.button(key=f"adj:{tid}:save").click().run()
    assert not at.exception
    adj = project.store.labels.adjudications(tid)[0]
    assert (adj.maintainer, adj.values) == (
        "maya",
        {"better": "tie", "strength": 2, "order": ["m1", "m2", "m3"]},
    )


def test_a_guidelines_file_that_cannot_be_shown_is_one_line_on_the_page_and_no_item_is_drawn(project):
    path = project.guidelines_dir / f"{NAME}.md"
    path.write_bytes(b"caf\xe9\n")
    at = app(project.store.accounts.user("alice"), NAME)
    assert not at.exception
    assert [e.value for e in at.error] == [f"guidelines/{NAME}.md: not UTF-8 text (byte 3 is 0xe9)"]
    assert project.store.count("assignments") == 0
