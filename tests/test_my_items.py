"""Issue 33, item 5: *My items*, an annotator's list of their own items (open, done, skipped, flagged),
found by words of the item's text or its id and filtered by kind, batch, status and day, any answer
reopened (an edit is a new event); never another annotator's. The library
(:mod:`prefkit.curation.annotation.my_items`) and the page under Streamlit's AppTest; in Chromium:
tests/test_browser_spans_and_items.py.
"""

from __future__ import annotations

import pytest
from appkit import ALICE, app, project_fixtures
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.my_items import my_batches, my_items
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.schemas.common import utcnow

template, project = project_fixtures(env=True, n=12, overlap=2, alps=True)


def answer(project, who: str, kind: str, action: str = "label", values=None, comment=None):
    item = workflow.current_item(project, who, kind)
    if action == "skip":
        workflow.skip(project, who, item, "cannot judge")
    elif action == "flag":
        workflow.flag(project, who, item, "the candidate is empty")
    else:
        workflow.submit(project, who, item, values or {"coverage": "fully"}, comment=comment)
    return item


def statuses(page) -> list[tuple[str, str]]:
    return [(it.status, it.task.item_ref) for it in page.items]


# -- the library ----------------------------------------------------------------------------------------
def test_every_item_of_ones_own_with_its_status_open_first_then_newest(project):
    done = answer(project, "alice", "preference_match", comment="deadline wording is odd")
    skipped = answer(project, "alice", "preference_match", "skip")
    flagged = answer(project, "alice", "preference_match", "flag")
    shown = workflow.current_item(project, "alice", "preference_match")  # on screen, not answered
    page = my_items(project, "alice", kind="preference_match", per_page=100)
    assert statuses(page)[0] == ("open", shown.task.item_ref) and page.items[0].shown
    assert ("flagged", flagged.task.item_ref) in statuses(page)
    answered = [s for s in statuses(page) if s[0] != "open"]
    assert answered == [
        ("flagged", flagged.task.item_ref),
        ("skipped", skipped.task.item_ref),
        ("done", done.task.item_ref),
    ]  # newest answer first
    assert page.items[-1].event.event_id == done.event_id and page.total == len(page.items)
    assert {it.status for it in page.items[1:-3]} <= {"open"}  # the rest of the chunk: queued, open


def test_search_finds_words_of_the_items_text_its_id_and_ones_comment_case_aside(project):
    done = answer(project, "alice", "preference_match", comment="Deadline wording is odd")
    other = answer(project, "alice", "preference_match")
    words = done.task.payload["checklist_item"]  # "Does the reply mention deadline N?"
    assert [it.task.task_id for it in my_items(project, "alice", search=words.upper()).items] == [
        done.task.task_id
    ]
    assert [it.task.task_id for it in my_items(project, "alice", search=other.task.task_id).items] == [
        other.task.task_id
    ]
    assert my_items(project, "alice", search=done.task.item_ref).items[0].task.task_id == done.task.task_id
    assert [it.task.task_id for it in my_items(project, "alice", search="WORDING IS").items] == [
        done.task.task_id
    ]
    assert my_items(project, "alice", search="checklist_item").total == 0  # a field name is not text
    assert my_items(project, "alice", search="100%_\\").total == 0  # LIKE's wildcards are text


def test_filters_by_kind_batch_status_and_day_combine(project):
    answer(project, "alice", "preference_match")
    answer(project, "alice", "preference_match", "skip")
    workflow.current_item(project, "alice", "memory_verify")
    assert {it.task.kind for it in my_items(project, "alice", kind="memory_verify", per_page=100).items} == {
        "memory_verify"
    }
    skips = my_items(project, "alice", statuses=["skipped"])
    assert [it.status for it in skips.items] == ["skipped"] and skips.items[0].event.action == "skip"
    assert my_items(project, "alice", statuses=["done", "skipped"]).total == 2
    today = utcnow()[:10]
    assert my_items(project, "alice", since=today, until=today).total == 2  # open items have no day
    assert my_items(project, "alice", since="2000-01-01", until="2000-01-02").total == 0
    assert my_batches(project, "alice") == ["default"]
    assert my_items(project, "alice", batch="default").total == my_items(project, "alice").total > 0
    assert my_items(project, "alice", batch="no-such-batch").total == 0


def test_another_annotators_items_never_appear(project):
    mine = answer(project, "alice", "preference_match", comment="alice's own note")
    theirs = answer(project, "bob", "preference_match", comment="bob's note")
    assert mine.task.task_id == theirs.task.task_id  # the same item, overlap 2: two annotators' answers
    [item] = my_items(project, "alice", search="note").items
    assert item.event.annotator == "alice" and item.event.event_id == mine.event_id
    assert my_items(project, "alice", search="bob's note").total == 0
    assert all(
        it.event is None or it.event.annotator == "alice"
        for it in my_items(project, "alice", per_page=500).items
    )
    assert my_items(project, "carol").total == 0  # no such annotator: nothing, never someone else's


def test_bad_filters_are_one_clear_line(project):
    with pytest.raises(workflow.WorkflowError, match="unknown status 'pending': use one of open, done"):
        my_items(project, "alice", statuses=["pending"])
    with pytest.raises(workflow.WorkflowError, match="a search is at most 200 characters"):
        my_items(project, "alice", search="x" * 201)
    with pytest.raises(workflow.WorkflowError, match=r"not a day: '2026-13-45'"):
        my_items(project, "alice", since="2026-13-45")


# -- the page -------------------------------------------------------------------------------------------
def test_the_page_searches_filters_and_reopens_an_answer_whose_edit_is_a_new_event(project):
    first = answer(project, "alice", "preference_match", values={"coverage": "partially"})
    answer(project, "alice", "preference_match", values={"coverage": "partially"})
    answer(project, "bob", "preference_match", comment="only bob's")
    at = app(ALICE)
    at.switch_page("views/my_items.py").run()
    assert at.title[0].value == "My items"
    at.text_input(key="mine_search").input(first.task.payload["checklist_item"]).run()
    rows = [m.value for m in at.markdown if "Partially covered" in m.value]
    assert len(rows) == 1 and "done" in rows[0]  # the one item, its status and the answer in words
    at.button(key=f"reopen:{first.event_id}").click().run()
    p = f"edit:{first.event_id}"
    at.button_group(key=f"{p}:q:coverage").set_value("not_covered").run()
    at.button(key=f"{p}:save").click().run()
    live = project.store.labels.live_event("alice", first.task.task_id)
    assert live.values == {"coverage": "not_covered"} and live.supersedes == first.event_id
    assert project.store.labels.event(first.event_id).values == {"coverage": "partially"}  # kept in the log
    at.text_input(key="mine_search").input("only bob's").run()
    assert any("None of your items matches" in i.value for i in at.info)  # bob's comment is not alice's


def test_the_page_filters_by_status_and_an_open_item_leads_to_its_queue(project):
    answer(project, "alice", "preference_match", "flag")
    shown = workflow.current_item(project, "alice", "memory_verify")
    at = app(ALICE)
    at.switch_page("views/my_items.py").run()
    at.button_group(key="mine_status").set_value(["flagged"]).run()
    rows = [m.value for m in at.markdown if "batch default" in m.value]
    assert len(rows) == 1 and "flagged" in rows[0] and "the candidate is empty" in rows[0]
    at.button_group(key="mine_status").set_value(["open"]).run()
    at.selectbox(key="mine_kind").set_value("memory_verify").run()
    assert any("on your screen now" in m.value for m in at.markdown)
    at.button(key=f"annotate:{shown.task.task_id}").click().run()
    title = get_kind("memory_verify").title  # the Annotate page on that kind: its guidelines first
    assert [t.value for t in at.title] == [title] and at.button(key="start:memory_verify").label
    assert at.session_state["kind"] == "memory_verify"  # (the item itself: in Chromium)


def test_a_stale_tab_replaying_an_edit_undone_since_is_told_not_saved(project):
    first = answer(project, "alice", "preference_match", values={"coverage": "fully"})  # e0
    at = app(ALICE)
    at.switch_page("views/my_items.py").run()
    at.button(key=f"reopen:{first.event_id}").click().run()  # this tab shows e0
    p = f"edit:{first.event_id}"
    at.button_group(key=f"{p}:q:coverage").set_value("not_covered").run()
    e1 = workflow.edit_label(project, "alice", first.event_id, {"coverage": "not_covered"})  # another tab
    workflow.edit_label(project, "alice", e1.event_id, {"coverage": "fully"})  # and back (e2)
    before = len(project.store.labels.events(annotator="alice"))
    at.button(key=f"{p}:save").click().run()  # the first edit again, from the tab still showing e0
    assert any("Not saved" in e.value and "changed since you opened it" in e.value for e in at.error)
    assert not any("Edit saved" in c.value for c in at.caption)
    assert len(project.store.labels.events(annotator="alice")) == before == 3
    assert project.store.labels.live_event("alice", first.task.task_id).values == {"coverage": "fully"}
