"""Issue 33, items 3 and 5, in Debian chromium through Playwright against ``prefkit annotate serve``:
words selected by a double-click survive a reload with the *Select words* switch as set and go into
the label; *My items* finds an item by its words, filters by status, reopens one whose edit is a new
event, and never lists another annotator's. (Library and AppTest: tests/test_draft_spans.py,
tests/test_my_items.py.)
"""

from __future__ import annotations

import pytest
from appkit import draft_kept, label_match, select_word, serve, served_project, settle, signed_in_on
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.my_items import my_items

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    project = served_project(tmp_path_factory, "spans_items", ("ivy", "jon", "kim"), n=4, overlap=3)
    yield from serve(project)


#: The highest run number on the page (``ui.run_mark`` draws ``st-key-prefkit-run-<n>`` on every run).
RUNS = """() => Math.max(0, ...[...document.querySelectorAll('[class*="st-key-prefkit-run-"]')]
  .flatMap(e => [...e.classList]).filter(c => c.startsWith('st-key-prefkit-run-')).map(c => Number(c.slice(19))))"""


def ran(page, action) -> None:
    """Do ``action`` (a click that changes a widget) and wait until the run it starts has reached the
    page: a click sent before then (Save) would be answered by the form as it was drawn before."""
    before = page.evaluate(RUNS)
    action()
    page.wait_for_function(f"n => ({RUNS})() > n", arg=before)
    settle(page)


def switch_on(page) -> bool:
    return page.locator(".st-key-spans_on input").is_checked()


# -- item 3: drafts keep spans ------------------------------------------------------------------------------
def test_double_clicked_words_survive_a_reload_with_the_switch_and_go_into_the_label(served, browser):
    project, page = signed_in_on(served, browser, "ivy", "preference_expressed")
    item = workflow.current_item(project, "ivy", "preference_expressed")
    page.get_by_text("Select words", exact=True).click()
    page.locator(".prefkit-spans").wait_for()
    settle(page)
    select_word(page, 2, "screen")
    page.locator(".prefkit-spans mark", has_text="screen").wait_for()
    settle(page)
    text = item.task.payload["turns"][2]["content"]
    span = {"turn": 2, "start": text.index("screen"), "end": text.index("screen") + 6, "text": "screen"}
    draft_kept(project, "ivy", item.task.task_id, lambda s: s.get("sp:0") == [span])

    page.reload()  # a new browser session: the switch on, the word highlighted, the turn its evidence
    page.locator(".prefkit-spans mark", has_text="screen").wait_for()
    settle(page)
    assert switch_on(page) and "words=on" in page.url
    assert page.get_by_text("evidence: turn 2 · “screen”").count() == 1
    page.keyboard.press("e")
    settle(page)
    page.keyboard.press("n")
    settle(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_function(f"() => !document.querySelector('[class*=\"st-key-{item.event_id}-submit\"]')")
    settle(page)
    first = project.store.labels.event(item.event_id).values["items"][0]
    assert first == {"item": 0, "expressed": True, "evidence": [2], "spans": [span]}
    assert switch_on(page)  # and it stays on for the next item
    page.context.close()


# -- item 5: My items ---------------------------------------------------------------------------------------
def test_my_items_searches_filters_and_reopens_and_never_shows_another_annotators(served, browser):
    project, url, _ = served
    _, other = signed_in_on(served, browser, "kim", "preference_match")
    label_match(other)  # kim answers the same items, with a comment jon must never see
    kim_first = project.store.labels.events(annotator="kim")[0]
    workflow.edit_label(project, "kim", kim_first.event_id, {"coverage": "fully"}, "kim-only remark")
    other.context.close()

    _, page = signed_in_on(served, browser, "jon", "preference_match")
    first = workflow.current_item(project, "jon", "preference_match")
    label_match(page)
    label_match(page)
    page.get_by_role("link", name="My items").click()
    page.get_by_role("heading", name="My items").wait_for()
    settle(page)
    rows = page.locator("[class*='st-key-mine-']")
    assert rows.count() == my_items(project, "jon").total  # every item of jon's: 2 done, the rest open
    assert page.locator(f".st-key-mine-{kim_first.event_id}").count() == 0

    search = page.get_by_label("Search text or id")
    search.fill(first.task.payload["checklist_item"])
    search.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('[class*=\"st-key-mine-\"]').length === 1")
    settle(page)
    [row] = rows.all()
    assert "done" in row.inner_text() and "Fully covered" in row.inner_text()

    row.get_by_role("button", name="Reopen").click()
    page.get_by_role("button", name="Save edit").wait_for()
    settle(page)
    ran(page, lambda: page.get_by_role("radio", name="Not covered", exact=True).click())
    page.get_by_role("button", name="Save edit").click()
    page.get_by_text("Edit saved").wait_for()
    settle(page)
    live = project.store.labels.live_event("jon", first.task.task_id)
    assert live.values == {"coverage": "not_covered"} and live.supersedes == first.event_id
    assert project.store.labels.event(first.event_id).values == {"coverage": "fully"}  # still in the log

    search.fill("kim-only remark")  # kim's comment, on an item jon has too: not jon's
    search.press("Enter")
    page.get_by_text("None of your items matches these filters.").wait_for()
    search.fill("")
    search.press("Enter")
    page.get_by_role("button", name="Reopen").first.wait_for()
    settle(page)
    page.get_by_role("button", name="Done", exact=True).click()  # the status filter
    page.wait_for_function("() => document.querySelectorAll('[class*=\"st-key-mine-\"]').length === 2")
    settle(page)
    assert all("done" in r.inner_text() for r in rows.all())
    page.context.close()
