"""The suggestion in real Chromium (Playwright against `prefkit annotate serve`): on the assisted arm
the suggested value is marked and Enter confirms it in one key press, then the next item comes; a
control item shows no suggestion at all."""

from __future__ import annotations

import os

import pytest
from appkit import make_project
from conftest import require
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.assist import arm_of
from prefkit.pipelines.assist import suggest
from prefkit.pipelines.llm import LLMLayer
from test_browser_app import CHROMIUM, browser, open_kind, serve, settle, sign_in  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]
KIND = "preference_match"
TITLE = "Preference matching"


@pytest.fixture(scope="module")
def assisted(tmp_path_factory):
    require(os.path.exists(CHROMIUM), "Debian chromium is not installed (apt-get install chromium)")
    project = make_project(tmp_path_factory.mktemp("assist") / "proj", n=8, overlap=2)
    cfg = project.root / "prefkit.toml"
    cfg.write_text(cfg.read_text().replace("assist_control_share = 0.2", "assist_control_share = 0.5"))
    with LLMLayer(project.store, backend="offline", progress=False) as layer:
        assert suggest(project.store, layer, KIND).suggested == 8
    yield from serve(project)


def test_enter_confirms_an_assisted_item_and_control_items_show_nothing(assisted, browser):  # noqa: F811
    project, url, _proc = assisted
    page = sign_in(browser, url, "alice")
    open_kind(page, TITLE)
    seen = set()
    while (item := workflow.current_item(project, "alice", KIND)) is not None:
        arm = arm_of("alice", KIND, item.task.item_ref, 0.5)
        seen.add(arm)
        header = page.get_by_text(f"{TITLE} · item").first.inner_text()
        suggested = page.get_by_role("button", name="Suggested:")
        if arm == "control":
            assert suggested.count() == 0 and "Suggest" not in page.inner_text("[data-testid=stMain]")
            page.keyboard.press("3")
        else:
            assert suggested.count() == 1 and suggested.is_visible()
            page.keyboard.press("Enter")  # one key confirms
        page.wait_for_function(
            "h => [...document.querySelectorAll('h4')].every(e => e.textContent !== h)", arg=header
        )
        settle(page)
        ev = project.store.labels.event(item.event_id)
        sugg = project.store.assist.for_task(item.task.task_id)
        assert (ev.assist_arm, ev.suggestion_id) == (arm, sugg.suggestion_id)
        assert ev.values == (sugg.values if arm == "assisted" else {"coverage": "not_covered"})
    assert seen == {"assisted", "control"}
