"""Issue 33, items 4 and 6, in Debian chromium through Playwright against ``prefkit annotate serve``:
the decision and Submit are in the window without scrolling at 1400×900 and 800×600 on every task
kind, Skip beside Submit (the item's action bar, kept at the window's bottom); memory verification
stacks in a narrow window with the page its one scroll region; one control per decision; one counter
of what is left that never restarts per chunk. axe-core (from npm: ``.ci/axe.sh``) finds no serious or
critical violation on sign-in, each kind, guidelines, my items, dashboard, adjudication and the item
page, in the light and the dark theme; controls are named in words; the theme follows
``prefers-color-scheme`` and the sidebar's switch pins it for the browser.

One served app for the module; each page load is checked for several things at once."""

from __future__ import annotations

import re

import pytest
from appkit import (
    axe_violations,
    item_now,
    next_item,
    open_kind,
    qc_task,
    serve,
    served_project,
    settle,
    shot,
    sign_in,
    unnamed_controls,
)
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_kinds import get_kind

pytestmark = [pytest.mark.browser, pytest.mark.slow]
USERS = ("wide", "narrow", "counter", "night", "themer")
KINDS = ("preference_expressed", "preference_match", "memory_verify", "task_qc")
#: What decides an item of each kind, by role and name: each must be in the window with Submit.
DECISION = {
    "preference_expressed": [
        ("button", "Item 1: Expressed"),
        ("button", "Item 1: Not expressed"),
        ("button", "Submit"),
    ],
    "preference_match": [
        ("button", "Fully covered"),
        ("button", "Partially covered"),
        ("button", "Not covered"),
    ],
    "memory_verify": [("button", "Accept all undecided"), ("button", "Submit")],
    "task_qc": [
        ("radio", "No leakage"),
        ("radio", "Leaks the memory"),
        ("radio", "Gold answer correct"),
        ("radio", "Gold answer incorrect"),
        ("button", "Submit"),
    ],
}
SKIP = re.compile("^Skip or report this item")
#: Elements inside the main area that scroll on their own (their content taller than they are).
SCROLLERS = """() => [...document.querySelectorAll('[data-testid=stMain] *')].filter(e => {
  const o = getComputedStyle(e).overflowY; return (o === 'auto' || o === 'scroll') && e.scrollHeight > e.clientHeight + 2;
}).map(e => [...e.classList].find(c => c.startsWith('st-key-')) || e.getAttribute('data-testid') || e.tagName)"""
#: Whether the app is drawn dark: its background's mean channel under the middle grey; false while no
#: app is drawn (a page reloading in a chosen theme), so a wait waits through the reload instead of
#: failing on the page in between. LIGHT: an app is drawn, and light.
DARK = """() => { const app = document.querySelector('[data-testid=stApp]'); if (!app) return false;
  const [r, g, b] = getComputedStyle(app).backgroundColor.match(/\\d+/g).map(Number);
  return (r + g + b) / 3 < 128; }"""
LIGHT = f"() => !!document.querySelector('[data-testid=stApp]') && !({DARK})()"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    project = served_project(tmp_path_factory, "layout", USERS, n=4, overlap=8, alps=True)
    project.store.labels.add_tasks([qc_task(i) for i in range(3)])
    config = project.root / "prefkit.toml"  # chunks of two: the counter must not restart per chunk
    text = config.read_text()
    if re.search(r"(?m)^queue_chunk\s*=", text):
        text = re.sub(r"(?m)^queue_chunk\s*=.*$", "queue_chunk = 2", text)
    else:
        text = text.replace("[annotation]\n", "[annotation]\nqueue_chunk = 2\n", 1)
    config.write_text(text)
    for who, coverage in (("alice", "fully"), ("bob", "not_covered")):  # a disagreement to adjudicate
        workflow.submit(
            project, who, workflow.current_item(project, who, "preference_match"), {"coverage": coverage}
        )
    yield from serve(project)


def box(page, role: str, name) -> dict:
    return page.get_by_role(role, name=name, exact=isinstance(name, str)).first.bounding_box()


def in_window(b: dict | None, size: tuple[int, int]) -> bool:
    return (
        b is not None
        and b["y"] >= 0
        and b["y"] + b["height"] <= size[1] + 0.5
        and b["x"] >= 0
        and b["x"] + b["width"] <= size[0] + 0.5
    )


def pane(page, key: str) -> dict:
    return page.evaluate(
        'k => { const r = document.querySelector(`[class*="st-key-${k}-"]`).getBoundingClientRect();'
        " return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }",
        key,
    )


def clean(page, what: str) -> None:
    """axe-core finds nothing serious or critical and no heading out of order, and every control is
    named in words."""
    found = axe_violations(page)
    assert found == [], f"{what}: {found}"
    order = [v for v in axe_violations(page, impacts=("moderate",)) if v["id"] == "heading-order"]
    assert order == [], f"{what}: headings out of order: {order}"
    assert unnamed_controls(page) == [], what


@pytest.mark.parametrize("size", [(1400, 900), (800, 600)], ids=["1400x900", "800x600"])
def test_the_decision_and_submit_are_in_the_window_on_every_kind_with_skip_beside_submit(
    served, browser, size
):
    project, url, _ = served
    user = "wide" if size[0] >= 1000 else "narrow"
    page = sign_in(browser, url, user, size=size, state="attached")
    if size[0] < 1000:  # the narrow window folded the sidebar; the annotator opens it to pick a kind
        page.wait_for_function(
            "() => document.querySelector('[data-testid=stSidebar]').getBoundingClientRect().width < 50"
        )
        page.locator("[data-testid=stExpandSidebarButton]").click()
    for kind in KINDS:
        title = get_kind(kind).title
        open_kind(page, title)
        page.wait_for_timeout(300)  # the layout script has run
        for role, name in DECISION[kind]:
            assert in_window(box(page, role, name), size), (kind, name)
        last = box(page, *DECISION[kind][-1])
        skip = box(page, "switch", SKIP)
        assert in_window(skip, size) and abs(skip["y"] - last["y"]) < 90, (kind, skip, last)  # beside it
        # one counter, of what is left for this annotator: no "item n of m" beside other counts
        header = item_now(page, title)
        assert re.match(rf"{re.escape(title)} · \d+ left for you\s+batch ", header) and not re.search(
            r"\d+ of \d+", header
        ), header
        if kind == "memory_verify":
            dialogue, candidates = pane(page, "dialogue"), pane(page, "candidates")
            if size[0] >= 900:  # side by side, each its own scrolling pane
                assert (
                    dialogue["right"] <= candidates["left"] and abs(dialogue["top"] - candidates["top"]) < 250
                )
            else:  # stacked, and the page the one scroll region: no box scrolls inside it
                assert dialogue["bottom"] <= candidates["top"] + 1
                assert page.evaluate(SCROLLERS) == []
        if kind == "task_qc":  # one control per decision: two groups of two, no second set of buttons
            assert page.get_by_role("radiogroup", name=re.compile("^(Leakage|Answer) ")).count() == 2
            for _, name in DECISION[kind][:4]:
                assert page.get_by_role("button", name=name, exact=True).count() == 0
                assert page.locator("[data-testid=stMain] button:visible", has_text=name).count() == 1
        shot(page, f"layout_{kind}_{size[0]}x{size[1]}")
        if size[0] >= 1000:
            clean(page, kind)
    # the last item's skip panel opens in the bar, in the window: its reason, Skip, Flag
    page.get_by_text("Skip or report this item", exact=True).click()
    page.get_by_role("button", name="Skip", exact=True).wait_for()
    settle(page)
    for role, name in (
        ("combobox", re.compile("^Skip reason")),
        ("button", "Skip"),
        ("button", "Flag as broken"),
    ):
        assert in_window(box(page, role, name), size), name
    shot(page, f"layout_skip_{size[0]}x{size[1]}")
    page.context.close()


def test_the_counter_falls_by_one_per_item_across_chunks(served, browser):
    project, url, _ = served
    page = sign_in(browser, url, "counter")
    open_kind(page, "Preference matching")
    seen = []
    for _ in range(4):  # chunks of two: the old "item n of m" restarted at the third
        seen.append(int(re.search(r"· (\d+) left for you", item_now(page, "Preference matching")).group(1)))
        if seen[-1] == 1:
            break
        next_item(page, "Preference matching", lambda: page.keyboard.press("1"))
    assert seen == [4, 3, 2, 1]  # every match pair is for this annotator (overlap 8); no restart
    assert (
        page.get_by_text(re.compile("Saved · ")).first.is_visible() and unnamed_controls(page) == []
    )  # its icon unread
    page.context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_serious_on_any_page_in_either_theme(served, browser, scheme):
    project, url, _ = served
    visitor = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme=scheme).new_page()
    visitor.goto(url)
    visitor.get_by_label("User name").wait_for()
    settle(visitor)
    assert visitor.evaluate(DARK) == (scheme == "dark")  # the system's scheme, followed
    clean(visitor, "sign-in")
    visitor.context.close()

    page = sign_in(browser, url, "night", color_scheme=scheme)
    page.get_by_role("link", name="Guidelines").click()
    page.get_by_role("tab").first.wait_for()
    settle(page)
    clean(page, "guidelines")
    page.get_by_role("link", name=re.compile("^My (items|recent labels)$")).click()
    page.get_by_role("heading", name=re.compile("^My (items|recent labels)$")).wait_for()
    settle(page)
    clean(page, "my items")
    if scheme == "dark":  # the kinds in the light theme: the layout test above
        page.get_by_role("link", name="Annotate").click()
        for kind in KINDS:
            open_kind(page, get_kind(kind).title)
            assert page.evaluate(DARK)
            clean(page, f"{kind} (dark)")
            if kind == "preference_expressed":  # the word picker too
                page.get_by_text("Select words", exact=True).click()
                page.locator(".prefkit-spans .pk-turn").first.wait_for()
                settle(page)
                clean(page, "word picker (dark)")
    shot(page, f"a11y_{scheme}_annotator")
    page.context.close()

    # the item alice and bob disagree on (the module's fixture)
    task_id = next(
        ev.task_id for ev in project.store.labels.events(annotator="alice") if ev.kind == "preference_match"
    )
    page = sign_in(browser, url, "maya", color_scheme=scheme)
    page.get_by_role("heading", name="Dashboard", exact=True).wait_for()
    settle(page)
    page.wait_for_timeout(500)  # the charts have drawn
    clean(page, "dashboard")
    page.get_by_role("link", name="Adjudication", exact=True).click()
    page.get_by_role("heading", name="Labels side by side").wait_for()
    settle(page)
    clean(page, "adjudication")
    page.goto(f"{url}/item?task={task_id}")
    page.get_by_role("heading", name="Preference matching", exact=True).wait_for()
    settle(page)
    assert page.evaluate(DARK) == (scheme == "dark")
    clean(page, "item page")
    shot(page, f"a11y_{scheme}_item")
    page.context.close()


def theme_option(page, name: str):
    return page.get_by_role("radiogroup", name="Theme").get_by_role("radio", name=name, exact=True)


def test_the_theme_follows_the_system_and_the_switch_keeps_a_choice_in_this_browser(served, browser):
    _, url, _ = served
    page = sign_in(browser, url, "themer", color_scheme="dark")
    assert page.evaluate(DARK)  # the system's dark scheme
    assert theme_option(page, "System").get_attribute("aria-checked") == "true"
    theme_option(page, "Light").click()  # the page reloads in the chosen theme, still signed in
    page.wait_for_function(LIGHT)
    page.get_by_text("signed in as themer").wait_for()
    settle(page)
    assert theme_option(page, "Light").get_attribute("aria-checked") == "true"
    page.get_by_role("link", name="Guidelines").click()  # another page of the app
    page.get_by_role("tab").first.wait_for()
    settle(page)
    assert not page.evaluate(DARK)
    again = page.context.new_page()  # a new tab of the same browser
    again.goto(url)
    again.get_by_text("signed in as themer").wait_for()
    settle(again)
    assert not again.evaluate(DARK)
    other = sign_in(browser, url, "themer", color_scheme="dark")  # another browser: the system's theme
    assert other.evaluate(DARK)
    other.context.close()
    theme_option(again, "System").click()  # back to following the system
    again.wait_for_function(DARK)
    page.context.close()
