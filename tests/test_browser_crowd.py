"""A crowd study in Debian chromium: participants arrive through the study's entry URL with their
Prolific ids (no sign-in form), label, one fails the attention checks and is stopped with the
screened-out code, one completes and sees the completion code; forged and malformed entry URLs get
one clear page and record nothing."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from appkit import serve, served_project, settle, shot
from conftest import crowd_study
from prefkit.curation.annotation import studies, workflow

pytestmark = [pytest.mark.browser, pytest.mark.slow]
KIND = "preference_match"
TITLE = "Preference matching"
CREATED: dict[str, studies.CreatedStudy] = {}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    project = served_project(tmp_path_factory, "crowd", n=8, overlap=2)
    for tid in [t.task_id for t in project.store.labels.tasks(kind=KIND)][:2]:
        project.store.labels.set_gold(tid, {"coverage": "fully"})
    for study_id in ("pilot", "other"):
        CREATED[study_id] = crowd_study(
            project, study_id, gold=0, screen_below=0.75, completion_code="DONE7", screened_out_code="OUT7"
        )
    yield from serve(project)


def token(study_id: str) -> str:
    return parse_qs(urlsplit(CREATED[study_id].entry_url).query)["study"][0]


def entry(url: str, pid: str | None, study: str | None = None, session: str = "se-1") -> str:
    """The entry URL as Prolific fills it in for ``pid`` (raw: already percent-encoded by the caller)."""
    query = f"study={study or token('pilot')}&STUDY_ID=st-1&SESSION_ID={session}"
    return f"{url}/?{query}" + ("" if pid is None else f"&PROLIFIC_PID={pid}")


def arrive(browser, url: str, pid: str):
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(entry(url, pid, session="se-" + pid))
    page.get_by_role("button", name=re.compile("^Start")).wait_for()
    settle(page)
    shot(page, f"crowd_arrived_{pid}")
    assert "User name" not in page.inner_text("body")
    page.get_by_role("button", name=re.compile("^Start")).click()
    page.get_by_text(f"{TITLE} · item 1 of 4").wait_for()
    settle(page)
    shot(page, f"crowd_item_{pid}")
    return page


def open_item(project, pid: str):
    return workflow.current_item(project, studies.username_for("pilot", pid), KIND)


def press(page, key: str, then: str) -> None:
    """Press ``key`` (a label's shortcut) and wait until ``then`` is on the page."""
    page.keyboard.press(key)
    page.get_by_text(then).first.wait_for(timeout=60_000)
    settle(page)


def test_a_participant_labels_every_item_and_gets_the_completion_code(served, browser):
    project, url, _ = served
    page = arrive(browser, url, "pOne")
    for n in range(1, 5):
        key = "1" if open_item(project, "pOne").task.is_gold else "2"  # gold right, the rest "partially"
        press(page, key, f"{TITLE} · item {n + 1} of 4" if n < 4 else "Your completion code")
    shot(page, "crowd_completed")
    body = page.inner_text("body")
    assert "Thank you! You have finished this study" in body and "DONE7" in body
    link = page.get_by_role("link", name=re.compile("Back to Prolific"))
    assert link.get_attribute("href") == "https://app.prolific.com/submissions/complete?cc=DONE7"
    who = studies.username_for("pilot", "pOne")
    assert project.store.studies.participant("pilot", "pOne").status == "completed"
    assert len(project.store.labels.live_events_of(who, KIND)[0]) == 4
    # coming back with the same id resumes where they are: done
    page.goto(entry(url, "pOne", session="se-pOne"))
    page.get_by_text("Your completion code").wait_for()


def test_a_participant_failing_the_attention_check_sees_the_screened_out_code_and_is_stopped(served, browser):
    project, url, _ = served
    page = arrive(browser, url, "pTwo")
    n = 1
    while not open_item(project, "pTwo").task.is_gold:
        n += 1
        press(page, "2", f"{TITLE} · item {n} of 4")
    press(page, "3", "Your code: OUT7")  # the gold item answered wrong: 0.5 at best, below 0.75
    shot(page, "crowd_screened_out")
    body = page.inner_text("body")
    assert "This study has ended for you" in body and "OUT7" in body
    assert page.get_by_role("button", name=re.compile("covered")).count() == 0
    link = page.get_by_role("link", name=re.compile("Back to Prolific"))
    assert link.get_attribute("href") == "https://app.prolific.com/submissions/complete?cc=OUT7"
    events = [(e.platform_id, e.event) for e in project.store.studies.events("pilot")]
    assert ("pTwo", "screened_out") in events
    # stopped: the unfinished items went back to the pool, nothing is open for them
    assert project.store.assignments.open_item(studies.username_for("pilot", "pTwo"), KIND) is None


@pytest.mark.parametrize(
    "case",
    ["missing id", "another study's secret", "1,000-character id", "control characters", "forged secret"],
)
def test_a_forged_or_malformed_entry_url_gets_one_clear_page_and_records_nothing(served, browser, case):
    project, url, _ = served
    target = {
        "missing id": entry(url, None),
        "another study's secret": entry(url, "pThree", study="pilot." + token("other").split(".", 1)[1]),
        "1,000-character id": entry(url, "a" * 1000),
        "control characters": entry(url, quote("p\x07\n\x00x")),
        "forged secret": entry(url, "pFour", study="pilot." + "A" * 32),
    }[case]
    before = project.store.studies.counts()
    page = browser.new_context().new_page()
    page.goto(target)
    page.get_by_role("heading", name="This study link cannot be opened").wait_for()
    settle(page)
    if case == "forged secret":
        shot(page, "crowd_refused")
    body = page.inner_text("body")
    assert body.count("cannot be opened") == 1 and "Nothing was recorded" in body
    assert "User name" not in body and "Traceback" not in body
    assert project.store.studies.counts() == before
    page.context.close()
