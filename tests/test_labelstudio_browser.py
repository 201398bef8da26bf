"""Pushed tasks rendered by Label Studio's own web UI in headless Chromium: what an annotator needs is
on screen, and nothing for slots the task does not use."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from appkit import LAUNCH, SHOTS, require_chromium
from prefkit.annotate_app.labelstudio import bridge
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.schemas.curation import Provenance
from test_labelstudio_server import _session, ls  # noqa: F401 - the server fixture

pytestmark = [pytest.mark.labelstudio, pytest.mark.browser, pytest.mark.slow]
LABELING = ".lsf-main-view"
RENDER_MS = 120_000  # Label Studio's labeling bundle is large; a loaded 2-core CI box needs the margin


def _local_only(route):
    """Every request stays on 127.0.0.1 (Label Studio's page links fonts and trackers elsewhere)."""
    if route.request.url.startswith(("http://127.0.0.1", "data:", "blob:")):
        route.continue_()
    else:
        route.abort()


def _login(page, url: str, email: str, password: str) -> None:
    page.goto(f"{url}/user/login/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda u: "/user/login" not in u, timeout=RENDER_MS)


@pytest.fixture(scope="module")
def page(ls):  # noqa: F811
    require_chromium()
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(**LAUNCH, headless=True)
        pg = browser.new_page(viewport={"width": 1400, "height": 1100})
        pg.set_default_timeout(RENDER_MS)
        pg.route("**/*", _local_only)
        _login(pg, ls.url, ls.admin.email, os.environ["LABEL_STUDIO_ADMIN_PASSWORD"])
        yield pg
        browser.close()


@pytest.fixture(scope="module")
def project(tmp_path_factory, fixture_packets) -> Iterator[Project]:
    from prefkit.pipelines.ingest import alpsbench

    project = Project.init(tmp_path_factory.mktemp("lsb") / "proj", name="ls-browser")
    project.store.generation.add_session(_session(1), {}, [None, None, None], Provenance(source="test"))
    project.store.content.import_bundle(alpsbench.build_bundle(fixture_packets))
    for kind in ("preference_expressed", "memory_verify"):
        create_tasks(project, kind)
    yield project
    project.close()


def _open(page, ls, project: Project, kind: str, task) -> None:  # noqa: F811
    report = bridge.push(project, kind, ls.url)
    ls_task = project.store.labelstudio.task_ids(ls.url, report.ls_project_id)[task.task_id]
    page.goto(f"{ls.url}/projects/{report.ls_project_id}/data?task={ls_task}")


def test_a_dialogue_task_shows_its_turns_and_one_choice_pair_per_checklist_item(page, ls, project):  # noqa: F811
    task = project.store.labels.tasks(kind="preference_expressed")[0]
    _open(page, ls, project, "preference_expressed", task)
    editor = page.locator(LABELING)  # the labeling panel, not the data table beside it
    editor.get_by_text("Too long, I need it done in 30 minutes.").wait_for()
    page.screenshot(path=str(SHOTS / "labelstudio_preference_expressed.png"))
    for turn in task.payload["turns"]:
        assert editor.get_by_text(turn["content"]).is_visible()
    assert editor.get_by_text("1. Is it vegetarian? (keys 1 / 2)").is_visible()
    # Each choice is "<value><sup>[hotkey]</sup>": 2 checklist items × 2, none for the empty slots 3 and 4.
    choices = [t for t in editor.locator("span:has(> sup.lsf-hint)").all_inner_texts() if "expressed" in t]
    assert [c.replace("\n", "") for c in choices] == [
        "expressed[1]",
        "not_expressed[2]",
        "expressed[3]",
        "not_expressed[4]",
    ]


def test_memory_candidates_show_reject_reasons_only_after_reject(page, ls, project):  # noqa: F811
    task = min(project.store.labels.tasks(kind="memory_verify"), key=lambda t: len(t.payload["candidates"]))
    _open(page, ls, project, "memory_verify", task)
    editor = page.locator(LABELING)
    editor.get_by_text(task.payload["candidates"][0]["memory"]["value"], exact=True).wait_for()
    reason = editor.get_by_text("not_grounded", exact=True)
    assert reason.first.is_hidden()
    editor.get_by_text("reject", exact=True).first.click()
    reason.first.wait_for(state="visible")
    assert sum(reason.nth(i).is_visible() for i in range(reason.count())) == 1
    page.screenshot(path=str(SHOTS / "labelstudio_memory_verify.png"))


def test_a_label_made_in_the_ui_with_hotkeys_comes_back_as_the_right_event(page, ls, project):  # noqa: F811
    task = project.store.labels.tasks(kind="preference_expressed")[0]
    _open(page, ls, project, "preference_expressed", task)
    editor = page.locator(LABELING)
    turn = editor.get_by_text(task.payload["turns"][0]["content"])
    turn.wait_for()
    editor.get_by_text("item 1", exact=True).first.click()  # evidence label, then select the user turn
    box = turn.bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    page.keyboard.press("1")  # item 1: expressed
    page.keyboard.press("4")  # item 2: not expressed
    with page.expect_response(lambda r: r.request.method == "POST" and "/annotations" in r.url) as posted:
        page.get_by_role("button", name="Submit").click()
    assert posted.value.status == 201
    report = bridge.pull(project, "preference_expressed", ls.url)
    assert (report.labels, report.invalid) == (1, [])
    event = project.store.labels.events(kind="preference_expressed")[-1]
    assert event.values["items"] == [
        {"item": 0, "expressed": True, "evidence": [0]},
        {"item": 1, "expressed": False, "evidence": []},
    ]
    assert event.time_spent_s is not None and event.time_spent_s > 0
