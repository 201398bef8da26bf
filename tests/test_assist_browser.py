"""The suggestion in real Chromium (Playwright against `prefkit annotate serve`): on the assisted arm
the suggested value is marked and Enter confirms it in one key press, then the next item comes; a
control item shows no suggestion at all."""

from __future__ import annotations

import pytest
from appkit import (
    ITEM_NOW,
    item_now,
    keys_ready,
    serve,
    served_project,
    set_control_share,
    settle,
    signed_in_on,
)
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.suggestions import arm_of
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.suggestions import suggest

pytestmark = [pytest.mark.browser, pytest.mark.slow]
KIND = "preference_match"
TITLE = "Preference matching"


@pytest.fixture(scope="module")
def assisted(tmp_path_factory):
    project = served_project(tmp_path_factory, "assist", n=8, overlap=2)
    set_control_share(project.root, 0.5)
    with LLMLayer(project.store, backend="offline", progress=False) as layer:
        assert suggest(project.store, layer, KIND).suggested == 8
    yield from serve(project)


def test_enter_confirms_an_assisted_item_and_control_items_show_nothing(assisted, browser):
    project, page = signed_in_on(assisted, browser, "alice", KIND)
    seen = set()
    while (item := workflow.current_item(project, "alice", KIND)) is not None:
        arm = arm_of("alice", KIND, item.task.item_ref, 0.5)
        seen.add(arm)
        header = item_now(page, TITLE)
        suggested = page.get_by_role("button", name="Suggested:")
        keys_ready(page)  # a key right after the last one is that item's burst, dropped on this one
        if arm == "control":
            assert suggested.count() == 0 and "Suggest" not in page.inner_text("[data-testid=stMain]")
            page.keyboard.press("3")
        else:
            assert suggested.count() == 1 and suggested.is_visible()
            page.keyboard.press("Enter")  # one key confirms
        page.wait_for_function(f"([t, h]) => ({ITEM_NOW})(t) !== h", arg=[TITLE, header])
        settle(page)
        ev = project.store.labels.event(item.event_id)
        sugg = project.store.suggestions.for_task(item.task.task_id)
        assert (ev.assist_arm, ev.suggestion_id) == (arm, sugg.suggestion_id)
        assert ev.values == (sugg.values if arm == "assisted" else {"coverage": "not_covered"})
    assert seen == {"assisted", "control"}
