"""The maintainer's console pages (People, Work, Release) in a real browser: Debian chromium driven by
Playwright against `prefkit annotate serve` (one server for the module). Each page's write path and
one of its refusals, in the window sizes docs/annotation.md shows (1400×900 and 800×600: nothing wider
than the window), and an annotator's direct URL to each page.

Screenshots go to artifacts/screenshots/ (git-ignored); docs/img/ holds the ones docs/annotation.md shows.
"""

from __future__ import annotations

import pytest
from appkit import (
    SHOTS,
    attempt,
    axe_violations,
    serve,
    served_project,
    settle,
    sign_in,
    unnamed_controls,
)
from prefkit.exports.release_integrity import load_manifest

pytestmark = pytest.mark.browser
SIZES = ((1400, 900), (800, 600))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    project = served_project(tmp_path_factory, "console", n=3, overlap=2)
    yield from serve(project)


def open_page(page, url: str, path: str, heading: str) -> None:
    """Go to a console page by its address (a reload keeps the sign-in: the session cookie)."""
    page.goto(f"{url}/{path}")
    page.get_by_role("heading", name=heading, exact=True).wait_for()
    settle(page)


def fits(page) -> None:
    """Nothing is wider than the window, and every table lies inside it (its own scrollbar, if any,
    reaches the columns it cannot show at once)."""
    page.locator("[data-testid=stDataFrame]").first.wait_for()  # the grid is drawn after the run
    box = page.evaluate(
        """() => { const main = document.querySelector('[data-testid=stMain]');
        const grids = [...document.querySelectorAll('[data-testid=stDataFrame]')].map(e => e.getBoundingClientRect());
        return {overflow: Math.max(document.documentElement.scrollWidth, main.scrollWidth) - innerWidth,
                right: Math.max(0, ...grids.map(r => r.right)), left: Math.min(innerWidth, ...grids.map(r => r.left)),
                tables: grids.length, width: innerWidth}; }"""
    )
    assert box["tables"] and box["overflow"] <= 1
    assert box["left"] >= 0 and box["right"] <= box["width"] + 1


def shoot(page, name: str, size: tuple[int, int]) -> None:
    """A picture of the window as the reader of docs/annotation.md sees it."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / f"{name}_{size[0]}x{size[1]}.png"))


def confirm(page) -> None:
    """Tick the cut's confirmation (a refused cut leaves it as it was)."""
    box = page.get_by_role("checkbox", name="I have read the gates above and want to cut this version now")
    if not box.is_checked():
        page.get_by_text("I have read the gates above").click()
    assert box.is_checked()


def maintainer_on(served, browser, size, path: str, heading: str):
    """The project, its address and maya's page on the console page ``path`` in a window of ``size``,
    which it fits (its screenshot taken)."""
    project, url, _ = served
    page = sign_in(browser, url, "maya", size=size, state="attached")
    open_page(page, url, path, heading)
    fits(page)
    shoot(page, path, size)
    return project, url, page


def message(page, text: str):
    return page.get_by_text(text, exact=False).first


@pytest.mark.parametrize("size", SIZES)
def test_people_page_adds_a_user_and_refuses_to_disable_the_last_maintainer(served, browser, size):
    project, url, page = maintainer_on(served, browser, size, "people", "People")
    who = f"nina{size[0]}"
    page.get_by_label("New user name", exact=True).fill(who)
    page.get_by_role("button", name="Add user").click()
    message(page, "shown only this once").wait_for()
    settle(page)
    password = page.locator("[data-testid=stCode] code").first.inner_text().strip()
    assert project.store.accounts.authenticate(who, password).temporary
    if size == SIZES[0]:  # the person signs in once with it, to choose their own
        door = browser.new_context(viewport={"width": size[0], "height": size[1]}).new_page()
        attempt(door, url, who, password)
        door.get_by_role("heading", name="Choose your own password").wait_for()
        door.get_by_label("The password you were given").fill(password)
        door.get_by_label("Your new password (8 characters or more)").fill("own-pass-123")
        door.get_by_label("Your new password again").fill("own-pass-123")
        door.get_by_role("button", name="Set my password and sign in").click()
        door.get_by_text(f"signed in as {who}").wait_for()
        door.context.close()
    page.get_by_text("Disable or enable", exact=True).click()
    settle(page)
    page.get_by_label("Account to disable or enable").click()
    page.get_by_role("option", name="maya", exact=True).click()
    settle(page)
    page.get_by_role("button", name="Disable", exact=True).click()
    message(page, "maya is the last active maintainer").wait_for()
    assert project.store.accounts.user("maya").active
    page.context.close()


@pytest.mark.parametrize("size", SIZES)
def test_work_page_refuses_a_bad_overlap_and_closes_a_batch(served, browser, size):
    project, url, page = maintainer_on(served, browser, size, "work", "Work")
    page.get_by_label("Overlap (3, or 2..4 adaptive)").fill("0")
    page.get_by_role("button", name="Create tasks").click()
    message(page, "Not done: overlap '0': at least 1 annotator per item").wait_for()
    page.get_by_text("Batches", exact=True).click()
    settle(page)
    page.get_by_role("button", name="Close batch").click()
    message(page, "Batch default is closed").wait_for()
    assert {b.batch_id: b.status for b in project.store.labels.batches()}["default"] == "closed"
    page.get_by_role("button", name="Open batch").click()
    message(page, "Batch default is open").wait_for()
    page.context.close()


def test_release_page_refuses_a_failing_cut_then_cuts_with_an_override(served, browser):
    project, url, _ = served
    for size in SIZES:  # the gates at both sizes; the cut once
        page = sign_in(browser, url, "maya", size=size, state="attached")
        open_page(page, url, "release", "Release")
        message(page, "failing").wait_for()
        fits(page)
        shoot(page, "release", size)
        if size != SIZES[-1]:
            page.context.close()
    confirm(page)
    page.get_by_role("button", name="Cut release").click()
    message(page, "Not cut: gates failed").wait_for()
    assert not (project.releases_dir / "1.0.0").exists()
    page.get_by_label("Override reason").fill("pilot round, gates reviewed")
    confirm(page)
    page.get_by_role("button", name="Cut release").click()
    message(page, "Released 1.0.0").wait_for(timeout=120_000)
    message(page, "Verify 1.0.0: intact").wait_for()  # the table's cells are drawn on a canvas
    message(page, "files match the manifest").wait_for(state="attached")  # ... and kept for screen readers
    settle(page)
    fits(page)
    shoot(page, "release_cut", SIZES[-1])
    assert load_manifest(project.releases_dir / "1.0.0").override_reason == "pilot round, gates reviewed"
    assert project.store.audit.events(action="release")[0].actor == "maya"
    page.get_by_role("link", name="Adjudicate the disagreements").click()  # alpha fails: where to fix it
    page.get_by_role("heading", name="Adjudication", exact=True).wait_for()
    page.context.close()


def test_an_annotator_can_neither_see_nor_reach_the_console_pages(served, browser):
    _, url, _ = served
    page = sign_in(browser, url, "alice")
    for title in ("People", "Work", "Release", "Dashboard"):
        assert page.get_by_role("link", name=title, exact=True).count() == 0
    for path, heading, control in (
        ("people", "People", "Add user"),
        ("work", "Work", "Create tasks"),
        ("release", "Release", "Cut release"),
    ):
        page.goto(f"{url}/{path}")
        page.get_by_text("signed in as alice").wait_for()
        settle(page)
        assert page.get_by_role("heading", name=heading, exact=True).count() == 0
        assert page.get_by_role("button", name=control).count() == 0
    page.context.close()


def test_axe_finds_nothing_serious_on_the_console_pages_and_every_control_is_named(served, browser):
    _, url, _ = served
    page = sign_in(browser, url, "maya", size=SIZES[0])
    for path, heading in (("people", "People"), ("work", "Work"), ("release", "Release")):
        open_page(page, url, path, heading)
        page.locator("[data-testid=stDataFrame]").first.wait_for()
        assert axe_violations(page) == [], path
        assert unnamed_controls(page) == [], path
    page.context.close()
