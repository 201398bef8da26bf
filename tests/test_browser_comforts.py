"""Issue 22, items 6-12, in Debian chromium through Playwright against ``prefkit annotate serve``: a
layout that fits 1400×900 and 800×600, the previous-item key and reopening labels, memory edits that
start from the memory, only kinds with work, the ``?`` help, the sign-in form's autocomplete, the
back-off and the client behind a trusted proxy, the maintainer's dashboard and item page, adjudication
from what was agreed, and evidence selected as words. (The library and AppTest side:
tests/test_app_comforts.py.)"""

from __future__ import annotations

import re
import time

import appkit
import pytest
from appkit import (
    attempt,
    label_match,
    open_kind,
    select_word,
    serve,
    served_project,
    settle,
    shot,
    signed_in_on,
)
from prefkit.annotate_app.forms.memory import start_fields
from prefkit.curation.annotation import workflow

pytestmark = pytest.mark.browser
#: This module's window, and "signed in as" only attached: a narrow window folds the sidebar it is in.
WINDOW = {"size": (1400, 900), "state": "attached"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    annotators = ("carol", "dan", "erin", "fay", "gus")
    project = served_project(
        tmp_path_factory, "comforts", annotators, n=4, overlap=5, alps=True, hostile=True
    )
    config = project.root / "prefkit.toml"  # the test's own address is the trusted proxy
    config.write_text(config.read_text().replace("trusted_proxies = []", 'trusted_proxies = ["127.0.0.1"]'))
    yield from serve(project)


def sign_in(browser, url: str, user: str, size=WINDOW["size"], headers: dict | None = None):
    return appkit.sign_in(browser, url, user, size=size, headers=headers, state=WINDOW["state"])


def open_picker(page) -> None:
    """Show the word picker of the item on screen (it may be open already)."""
    if page.locator(".prefkit-spans").count() == 0:
        page.get_by_text("Select words", exact=True).click()
    page.locator(".prefkit-spans").wait_for()
    settle(page)


def pane(page, key: str) -> dict:
    """Where a keyed pane (``dialogue-*`` / ``candidates-*``) is, and whether anything is wider than the
    window (a cut-off column or a line that does not wrap)."""
    return page.evaluate(
        """k => { const p = document.querySelector(`[class*="st-key-${k}-"]`); const r = p.getBoundingClientRect();
        const main = document.querySelector('[data-testid=stMain]');
        return {top: r.top, bottom: r.bottom, height: r.height, width: r.width, window: innerHeight,
                overflow: Math.max(document.documentElement.scrollWidth, main.scrollWidth) - innerWidth}; }""",
        key,
    )


def sidebar_width(page) -> float:
    return page.evaluate(
        "() => document.querySelector('[data-testid=stSidebar]').getBoundingClientRect().width"
    )


# -- 6: the layout fits the window ----------------------------------------------------------------------
@pytest.mark.parametrize("size", [(1400, 900), (800, 600)])
def test_the_panes_fit_the_window_and_a_narrow_one_folds_the_sidebar(served, browser, size):
    project, url, _ = served
    page = sign_in(browser, url, "carol", size)
    if size[0] < 1000:
        page.wait_for_function(
            "() => document.querySelector('[data-testid=stSidebar]').getBoundingClientRect().width < 50"
        )
        page.locator("[data-testid=stExpandSidebarButton]").click()  # the annotator opens it again
        page.get_by_role("radio", name="Memory verification", exact=True).wait_for()
    open_kind(page, "Memory verification")
    page.wait_for_timeout(300)
    dialogue, candidates = pane(page, "dialogue"), pane(page, "candidates")
    assert dialogue["overflow"] <= 1 and candidates["overflow"] <= 1  # nothing wider than the window
    if size[0] < 900:  # stacked, the dialogue above the candidates, the page scrolls (issue 33, item 4)
        assert dialogue["bottom"] <= candidates["top"] + 1
    else:  # sized to the window, not 720 px
        assert dialogue["height"] != 720 and dialogue["height"] <= size[1] - 150
    if size[0] >= 1000:  # side by side, both within the window's height, Submit too
        assert dialogue["bottom"] <= size[1] + 1 and candidates["bottom"] <= size[1] + 1
        submit = page.get_by_role("button", name="Submit").bounding_box()
        assert submit["y"] + submit["height"] <= size[1]
    shot(page, f"memory_{size[0]}x{size[1]}")
    page.context.close()


# -- 7: the previous item, and every label reopened ------------------------------------------------------
def test_p_reopens_the_last_label_in_place_and_esc_returns(served, browser):
    project, page = signed_in_on(served, browser, "dan", "preference_match", **WINDOW)
    first = workflow.current_item(project, "dan", "preference_match")
    label_match(page)  # "1": fully covered
    second = workflow.current_item(project, "dan", "preference_match")
    page.keyboard.press("p")
    page.get_by_text("your label 1 back").wait_for()
    settle(page)
    page.get_by_role("radio", name="Not covered", exact=True).click()
    settle(page)
    page.get_by_role("button", name="Save edit").click()
    page.get_by_text(re.compile("Edit saved")).wait_for()
    settle(page)
    live = project.store.labels.live_event("dan", first.task.task_id)
    assert live.values == {"coverage": "not_covered"} and live.supersedes == first.event_id
    page.keyboard.press("p")
    page.get_by_text("your label 1 back").wait_for()
    settle(page)
    page.keyboard.press("Escape")
    page.get_by_role("heading", name=re.compile("^Preference matching · \\d+ left for you")).wait_for()
    assert workflow.current_item(project, "dan", "preference_match").event_id == second.event_id
    page.get_by_role("link", name="My items").click()
    page.get_by_role("heading", name="My items").wait_for()
    settle(page)
    assert page.get_by_text(first.task.payload["checklist_item"][:30]).count() >= 1  # the item's text
    assert page.get_by_text("Not covered").count() >= 1  # the answer in words
    page.locator(f".st-key-mine-{live.event_id}").get_by_role("button", name="Reopen").click()
    page.get_by_role("button", name="Save edit").wait_for()
    shot(page, "my_labels_reopened")
    page.context.close()


# -- 8, 9: the memory edit, the kinds offered -------------------------------------------------------------
def test_a_memory_edit_opens_with_the_memorys_fields_and_only_kinds_with_work_are_offered(served, browser):
    from playwright.sync_api import expect

    project, url, _ = served
    page = sign_in(browser, url, "erin")
    assert page.get_by_role("radio", name="Generated task check", exact=True).count() == 0  # no such tasks
    page.get_by_text("Nothing waiting for you in: Generated task check").wait_for()
    open_kind(page, "Memory verification")
    item = workflow.current_item(project, "erin", "memory_verify")
    cand = sorted(item.task.payload["candidates"], key=lambda c: c.get("group", 0))[0]  # first on screen
    want = start_fields(cand["memory"], item.task.payload["turns"])
    page.get_by_role("radio", name="Edit", exact=True).first.click()
    settle(page)
    expect(page.get_by_label("Value", exact=True).first).to_have_value(want["value"])
    expect(page.get_by_label("Evidence text (quoted from that turn)").first).to_have_value(
        want["evidence_text"]
    )
    assert want["evidence_turn"] is not None  # the turn the quote is in, chosen:
    expect(page.get_by_label("Evidence turn").first).to_have_value(f"turn {want['evidence_turn']}")
    expect(page.get_by_label("Time scope").first).to_have_value(want["time_scope"])
    shot(page, "memory_edit_prefilled")
    page.context.close()


# -- 10: help, sign-in form, back-off, the client behind a proxy ---------------------------------------
def test_question_mark_lists_every_shortcut_and_keys_wait_while_it_is_open(served, browser):
    project, page = signed_in_on(served, browser, "fay", "preference_match", **WINDOW)
    item = workflow.current_item(project, "fay", "preference_match")
    page.keyboard.press("?")
    help_ = page.get_by_role("dialog", name="Keyboard shortcuts")
    help_.wait_for()
    text = help_.inner_text()
    for line in (
        "Fully covered",
        "Previous item",
        "Accept every candidate",
        "Ctrl+Enter",
        "Start annotating",
    ):
        assert line in text
    shot(page, "keyboard_help")
    page.keyboard.press("1")  # behind the list: nothing is labelled
    page.wait_for_timeout(500)
    assert project.store.labels.event(item.event_id) is None
    page.keyboard.press("Escape")
    assert page.get_by_role("dialog", name="Keyboard shortcuts").count() == 0
    label_match(page)
    assert project.store.labels.event(item.event_id).values == {"coverage": "fully"}
    page.context.close()


def test_sign_in_form_for_password_managers_and_a_backoff_that_says_how_long(served, browser):
    project, url, _ = served
    proxy = appkit.ForwardingProxy(int(url.rsplit(":", 1)[1]), "203.0.113.7")
    url = f"http://127.0.0.1:{proxy.port}"  # the browser reaches the app through the proxy only
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.goto(url)
    page.get_by_label("User name").wait_for()
    assert page.get_by_label("User name").get_attribute("autocomplete") == "username"
    assert page.get_by_label("Password", exact=True).get_attribute("autocomplete") == "current-password"
    assert page.get_by_label("User name").get_attribute("name") == "username"
    assert page.get_by_label("Password", exact=True).get_attribute("name") == "password"
    for n in range(1, 4):
        attempt(page, url, "gus", "not-the-password")
        deadline = time.monotonic() + 30  # the server has handled the n-th attempt before the next one
        while len(project.store.accounts.sign_in_log("gus")) < n and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        settle(page)
    page.get_by_text(
        re.compile(r"wait 2 s before the next try \(the next try is checked from \d\d:\d\d:\d\d UTC\)")
    ).wait_for()
    # the proxy (127.0.0.1, trusted in prefkit.toml) forwarded for 203.0.113.7: that is the client
    assert {r.client for r in project.store.accounts.sign_in_log("gus")} == {"203.0.113.7"}
    shot(page, "sign_in_backoff_wait")
    page.context.close()
    proxy.close()


# -- 11: maintainers -------------------------------------------------------------------------------------
def test_a_maintainer_lands_on_readable_tables_and_a_flag_opens_its_item(served, browser):
    project, url, _ = served
    item = workflow.current_item(project, "carol", "preference_expressed")
    workflow.flag(project, "carol", item, "checklist does not fit the preference")
    page = sign_in(browser, url, "maya")
    page.get_by_role("heading", name="Dashboard").wait_for()  # the landing page
    page.get_by_text("Flagged items (1)").wait_for()
    settle(page)
    assert "None" not in page.inner_text("[data-testid=stMain]")
    grid = page.locator(".st-key-flag_table [data-testid=stDataFrame]")
    grid.scroll_into_view_if_needed()
    settle(page)
    box = grid.bounding_box()
    for dy in (52, 56, 48, 60):  # the first row's selection box, under the header row
        page.mouse.click(box["x"] + 18, box["y"] + dy)
        try:
            page.wait_for_url(re.compile("task="), timeout=4000)
            break
        except Exception:  # noqa: BLE001 - missed the box by a few pixels: the next offset
            continue
    page.get_by_role("heading", name="Preference expressed").wait_for()
    settle(page)
    assert f"task={item.task.task_id}" in page.url
    assert page.get_by_text(item.task.payload["preference"][:40]).count() >= 1
    shot(page, "item_page")
    page.context.close()


# -- 12: evidence as words --------------------------------------------------------------------------------
def test_words_selected_in_a_turn_become_evidence_with_their_offsets(served, browser):
    from playwright.sync_api import expect

    project, page = signed_in_on(served, browser, "gus", "preference_expressed", **WINDOW)
    item = workflow.current_item(project, "gus", "preference_expressed")
    open_picker(page)
    select_word(page, 2, "screen")
    page.locator(".prefkit-spans mark").wait_for()
    settle(page)
    expect(page.get_by_text(re.compile("Undecided · evidence: turn 2 · “screen”"))).to_be_visible()
    shot(page, "evidence_words")
    page.keyboard.press("e")
    settle(page)
    page.keyboard.press("n")
    settle(page)
    page.keyboard.press("Control+Enter")
    page.get_by_text(re.compile("Saved · session:")).wait_for()
    first = project.store.labels.event(item.event_id).values["items"][0]
    text = item.task.payload["turns"][2]["content"]
    start = text.index("screen")
    assert first == {
        "item": 0,
        "expressed": True,
        "evidence": [2],
        "spans": [{"turn": 2, "start": start, "end": start + 6, "text": "screen"}],
    }
    page.context.close()


def test_the_picker_shows_hostile_dialogue_text_as_text(served, browser):
    appkit.skip_to(served[0], "erin", "preference_expressed", "session:sess_0000")
    _, page = signed_in_on(served, browser, "erin", "preference_expressed", **WINDOW)
    open_picker(page)
    picker = page.locator(".prefkit-spans").inner_text()
    assert '<script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2">' in picker
    assert page.locator(".prefkit-spans img, .prefkit-spans script, .prefkit-spans a").count() == 0
    select_word(page, 0, "bold")
    page.locator(".prefkit-spans mark").wait_for()
    assert page.evaluate("window.__pwned") is None
    page.context.close()


def test_words_selected_for_a_memory_are_kept_with_it(served, browser):
    project, page = signed_in_on(served, browser, "fay", "memory_verify", **WINDOW)
    item = workflow.current_item(project, "fay", "memory_verify")
    open_picker(page)
    first = item.task.payload["candidates"][0]
    word = (
        "Lisbon"
        if "Lisbon" in item.task.payload["turns"][0]["content"]
        else item.task.payload["turns"][0]["content"].split()[1]
    )
    select_word(page, 0, word)
    page.get_by_text(re.compile("your evidence: “")).first.wait_for()
    settle(page)
    page.keyboard.press("a")
    settle(page)
    page.keyboard.press("Control+Enter")
    page.get_by_text(re.compile("Saved · dialogue:")).wait_for()
    decision = next(
        d for d in project.store.labels.event(item.event_id).values["decisions"] if d["key"] == first["key"]
    )
    [span] = decision["spans"]
    assert (
        span["turn"] == 0
        and item.task.payload["turns"][0]["content"][span["start"] : span["end"]] == span["text"]
    )
    page.context.close()
