"""Only what the person did, on the control and item they did it on, in real Chromium (Playwright
against `prefkit annotate serve`), asserted on the store: no decision comes back by itself after
going to another page or task kind; evidence goes to the checklist item its button names; every
reason starts empty and is asked for; a cut leaves the release form empty, on the next version."""

from __future__ import annotations

import re

import pytest
from appkit import (
    SHOTS,
    item_header,
    next_item,
    open_kind,
    serve,
    served_project,
    settle,
    shot,
    sign_in,
)
from prefkit.curation.annotation import workflow

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TITLE = "Preference expressed"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    project = served_project(tmp_path_factory, "decided43", ("nav", "ev", "why"), n=4, overlap=5, alps=True)
    yield from serve(project)


def checked(page) -> list[str]:
    """The radio buttons chosen on the item: the active item and each checklist item's answer."""
    return page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stMain] input[type=radio]:checked')]"
        ".map(i => (i.closest('label') || i.parentElement).innerText.trim())"
    )


def back_to_annotate(page) -> None:
    page.get_by_role("link", name="Annotate").click()
    item_header(page, TITLE).wait_for()
    settle(page)
    page.wait_for_timeout(800)  # anything replayed has had its turn
    settle(page)


def first_item_expressed(project, browser, url: str, who: str):
    """``who``'s page on a preference_expressed item whose first checklist item was answered Expressed by
    its key, so that item 2 is the active one now; and the item."""
    page = sign_in(browser, url, who)
    open_kind(page, TITLE)
    item = workflow.current_item(project, who, "preference_expressed")
    page.wait_for_timeout(300)
    page.keyboard.press("e")
    page.get_by_role("radio", name="Item 2").wait_for(state="attached")
    settle(page)
    return page, item


def test_no_decision_comes_back_by_itself_after_another_page_or_kind(served, browser):
    project, url, _ = served
    page, item = first_item_expressed(project, browser, url, "nav")
    assert checked(page) == ["Item 2", "Expressed"]
    for where in ("My items", "Guidelines"):
        page.get_by_role("link", name=where).click()
        page.get_by_role("heading", name=re.compile(where)).first.wait_for()
        settle(page)
        back_to_annotate(page)
        assert checked(page) == ["Item 2", "Expressed"], where  # item 2 still undecided, still active
    page.get_by_role("radio", name="Preference matching", exact=True).click()  # another task kind ...
    page.get_by_role("heading", name="Preference matching", exact=True).wait_for()
    settle(page)
    page.get_by_role("radio", name=TITLE, exact=True).click()  # ... and back
    item_header(page, TITLE).wait_for()
    settle(page)
    page.wait_for_timeout(800)
    assert checked(page) == ["Item 2", "Expressed"]
    page.keyboard.press("Control+Enter")  # refused: nobody decided item 2
    page.get_by_text(re.compile("^Decide item 2")).first.wait_for()
    assert project.store.labels.event(item.event_id) is None


def test_evidence_goes_to_the_item_its_button_names_after_the_active_item_moved(served, browser):
    project, url, _ = served
    page, item = first_item_expressed(project, browser, url, "ev")
    assert checked(page)[0] == "Item 2"
    page.get_by_role("button", name="Evidence for item 1", exact=True).nth(1).click()  # turn 2, for item 1
    settle(page)
    page.get_by_role("button", name="✓ Evidence for item 1", exact=True).wait_for()  # the turn says so
    assert page.get_by_text("Expressed · evidence: turn 2").count() == 1
    assert page.get_by_text("Undecided · evidence: none picked").count() == 1  # item 2: nothing
    shot(page, "evidence_per_item_1400x900")
    page.wait_for_timeout(300)
    page.keyboard.press("n")
    settle(page)
    next_item(page, TITLE, lambda: page.keyboard.press("Control+Enter"))
    ev = project.store.labels.event(item.event_id)
    assert ev.values == {
        "items": [
            {"item": 0, "expressed": True, "evidence": [2]},
            {"item": 1, "expressed": False, "evidence": []},
        ]
    }


def test_reasons_start_empty_and_are_asked_for(served, browser):
    project, url, _ = served
    page = sign_in(browser, url, "why")
    open_kind(page, "Memory verification")
    item = workflow.current_item(project, "why", "memory_verify")
    page.locator("[data-testid=stMain] [role=radiogroup][aria-label=Decision]").first.get_by_text(
        "Reject", exact=True
    ).click()
    settle(page)
    reason = page.get_by_role("combobox", name="Reason")
    assert (reason.input_value(), reason.get_attribute("placeholder")) == ("", "Choose why")  # empty
    page.keyboard.press("a")  # accept the rest: the rejection stays, without a reason
    settle(page)
    page.get_by_role("button", name="Submit").click()
    settle(page)
    page.get_by_text(re.compile("^Choose why you reject")).first.wait_for()
    shot(page, "reason_asked_1400x900")
    assert project.store.labels.event(item.event_id) is None  # no "not_grounded" nobody chose
    page.get_by_text("Skip or report this item", exact=False).first.click()
    settle(page)
    for name, empty in (("Skip reason", "Choose why"), ("What is broken", "Choose what")):
        menu = page.get_by_role("combobox", name=name)
        assert (menu.input_value(), menu.get_attribute("placeholder")) == ("", empty)
    page.get_by_role("button", name="Flag as broken").click()
    settle(page)
    page.get_by_text(re.compile("^Not flagged: choose what is broken")).first.wait_for()
    assert project.store.labels.event(item.event_id) is None


def maya_on(browser, url: str, link: str, heading: str):
    """The maintainer signed in and on the page the sidebar's ``link`` opens, once its ``heading`` shows."""
    page = sign_in(browser, url, "maya")
    page.get_by_role("link", name=link).click()
    page.get_by_role("heading", name=heading).wait_for()
    settle(page)
    return page


def test_after_a_cut_the_release_form_is_empty_and_on_the_next_version(served, browser):
    project, url, _ = served
    page = maya_on(browser, url, "Release", "Cut a version")
    version = page.get_by_label("Version (X.Y.Z)")
    assert version.input_value() == "1.0.0"
    page.get_by_label(re.compile("^Override reason")).fill("pilot round")
    page.get_by_text("I have read the gates above").click()
    page.get_by_role("button", name="Cut release").click()
    page.get_by_text(re.compile("Released 1.0.0")).wait_for()
    settle(page)
    assert version.input_value() == "1.1.0"
    assert page.get_by_label(re.compile("^Override reason")).input_value() == ""
    assert not page.get_by_role("checkbox", name=re.compile("^I have read the gates")).is_checked()
    page.get_by_role("heading", name="Cut a version").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "release_after_cut_1400x900.png"))
    page.get_by_role("button", name="Cut release").click()  # no new confirmation: refused
    page.get_by_text("Not cut: tick the confirmation first").wait_for()
    assert not (project.releases_dir / "1.1.0").exists()


def test_a_new_study_link_uses_the_address_in_use_and_shows_where_its_form_was(served, browser):
    _, url, _ = served
    page = maya_on(browser, url, "Studies", "New study")
    base = page.get_by_label("Base URL (where participants reach this app)")
    assert base.input_value() == url  # this server's port, not a default one
    page.get_by_label("Study id (a-z, 0-9, _ and -)").fill("wave-1")
    page.get_by_label("Gold share (attention checks)").fill("0")
    page.get_by_label("Completion code").fill("DONE1")
    page.get_by_label("Screened-out code").fill("OUT1")
    page.get_by_role("button", name="Create study").click()
    opener = page.get_by_role("link", name="Open the entry URL")
    opener.wait_for()
    settle(page)
    href = opener.get_attribute("href")
    assert href.startswith(f"{url}/?study=wave-1.")
    heading = page.get_by_role("heading", name="New study").bounding_box()
    shown = page.locator("[data-testid=stCode]").first.bounding_box()
    assert shown["y"] > heading["y"]  # under the form's heading, where the maintainer is
    page.get_by_role("link", name="Open the entry URL").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "study_url_1400x900.png"))
    page.get_by_role("button", name="Create another study").click()
    page.get_by_label("Study id (a-z, 0-9, _ and -)").wait_for()  # the form again; the URL is gone
    assert page.get_by_role("link", name="Open the entry URL").count() == 0
