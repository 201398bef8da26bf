"""What an annotator decides is what is recorded, in a real browser (Debian chromium, Playwright,
`prefkit annotate serve`): mouse then keyboard in every task kind, two tabs on one account, errors
where the eye is, contradictions pointed out before saving, a reload mid-item.

One server for the module; each test signs in with its own annotator, so queues do not interfere.
"""

from __future__ import annotations

import re
import time

import pytest
from appkit import (
    choose,
    draft_kept,
    item_now,
    lagging,
    next_item,
    open_kind,
    qc_task,
    serve,
    served_project,
    settle,
    shot,
    sign_in,
    signed_in_on,
)
from prefkit.curation.annotation import workflow

pytestmark = pytest.mark.browser
ANNOTATORS = [f"ann{i}" for i in range(1, 15)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    project = served_project(tmp_path_factory, "fidelity", ANNOTATORS, n=3, overlap=6, alps=True)
    project.store.labels.add_tasks([qc_task(i) for i in range(3)])
    yield from serve(project)


def events(project, who: str, kind: str):
    return [e for e in project.store.labels.events(annotator=who) if e.kind == kind]


def stored(project, who: str, kind: str, n: int, timeout: float = 30):
    """``who``'s events of ``kind`` once the store holds ``n`` of them (fails when it never does, or
    holds more). The screen moving on is not taken as proof the last submit was committed: in one CI
    run under load the check ran before the second of two submits was (both were stored, as chosen)."""
    deadline = time.monotonic() + timeout
    found = events(project, who, kind)
    while len(found) < n and time.monotonic() < deadline:
        time.sleep(0.1)
        found = events(project, who, kind)
    assert len(found) == n, f"{len(found)} events of {kind} by {who}, expected {n}"
    return found


def decided(project, page, who: str, act) -> list[dict]:
    """The checklist decisions ``who`` saved when ``act`` finished the preference_expressed item shown."""
    next_item(page, "Preference expressed", act)
    [ev] = events(project, who, "preference_expressed")
    return ev.values["items"]


def checklist(*decisions: tuple[bool, list[int]]) -> list[dict]:
    """Checklist decisions, ``(expressed, evidence turns)`` per item."""
    return [{"item": i, "expressed": e, "evidence": ev} for i, (e, ev) in enumerate(decisions)]


def press_settled(page, *keys: str) -> None:
    """Each key pressed once the app has settled from what came before."""
    for key in keys:
        settle(page)
        page.keyboard.press(key)


def segment(page, name: str, nth: int = 0):
    """A segmented-control choice (a pill with the radio role) by its text."""
    return page.get_by_role("radio", name=name, exact=True).nth(nth)


# -- 1. mouse, then keyboard -----------------------------------------------------------------------
def test_memory_a_clicked_reject_survives_the_a_key_and_ctrl_enter(served, browser):
    project, page = signed_in_on(served, browser, "ann1", "memory_verify")
    shown = workflow.current_item(project, "ann1", "memory_verify")
    first = shown.task.payload["candidates"][0]["key"]

    def act():
        segment(page, "Reject").click()  # the mouse: focus stays on the pill
        settle(page)
        choose(page, "Reason", "too generic")  # asked for: no reason is chosen for the annotator
        settle(page)  # the reason's rerun is drawn before the next key (a loaded CI machine lagged here)
        page.keyboard.press("a")  # accepts the others, not the rejected one
        settle(page)
        page.keyboard.press("Control+Enter")

    next_item(page, "Memory verification", act)
    [ev] = events(project, "ann1", "memory_verify")
    assert ev.event_id == shown.event_id
    decisions = {d["key"]: d["decision"] for d in ev.values["decisions"]}
    assert decisions.pop(first) == "reject" and set(decisions.values()) == {"accept"}
    page.context.close()


def test_expressed_a_clicked_evidence_pill_survives_e_n_and_ctrl_enter(served, browser):
    project, page = signed_in_on(served, browser, "ann2", "preference_expressed")

    def act():
        pills = page.locator("[data-testid=stButtonGroup]").filter(has_text="turn 2").first
        pills.get_by_role("button", name="turn 2", exact=True).click()
        press_settled(page, "e", "n", "Control+Enter")

    assert decided(project, page, "ann2", act) == checklist((True, [2]), (False, []))
    page.context.close()


def test_expressed_answers_clicked_then_keys_never_undo_the_click(served, browser):
    project, page = signed_in_on(served, browser, "ann3", "preference_expressed")

    def act():  # item 1 by the mouse, then N: it decides item 2, the next undecided one
        answers = page.locator("[data-testid=stRadio]").filter(has_text="Did the user express")
        answers.first.locator("label").filter(has_text=re.compile("^Expressed$")).click()
        settle(page)
        page.keyboard.press("n")
        settle(page)
        page.keyboard.press("Control+Enter")

    next_item(page, "Preference expressed", act)

    def mouse_only():  # both answers by the mouse, then Ctrl+Enter
        answers = page.locator("[data-testid=stRadio]").filter(has_text="Did the user express")
        answers.nth(0).locator("label").filter(has_text=re.compile("^Not expressed$")).click()
        settle(page)
        answers.nth(1).locator("label").filter(has_text=re.compile("^Expressed$")).click()
        settle(page)
        page.keyboard.press("Control+Enter")

    next_item(page, "Preference expressed", mouse_only)
    first, second = stored(project, "ann3", "preference_expressed", 2)
    assert [it["expressed"] for it in first.values["items"]] == [True, False]
    assert [it["expressed"] for it in second.values["items"]] == [False, True]
    page.context.close()


def test_keys_pressed_faster_than_the_server_keep_their_order(served, browser):
    project, page = signed_in_on(served, browser, "ann6", "preference_expressed")

    def act():  # no wait between the keys: each one waits in the page for the run before it
        page.keyboard.press("n")
        page.keyboard.press("e")
        page.keyboard.press("Control+Enter")

    next_item(page, "Preference expressed", act)
    [ev] = events(project, "ann6", "preference_expressed")
    assert [it["expressed"] for it in ev.values["items"]] == [False, True]
    page.context.close()


def test_a_key_pressed_twice_labels_only_the_item_it_was_pressed_on(served, browser):
    project, page = signed_in_on(served, browser, "ann7", "preference_match")
    first = workflow.current_item(project, "ann7", "preference_match")
    next_item(page, "Preference matching", lambda: (page.keyboard.press("2"), page.keyboard.press("2")))
    page.wait_for_timeout(1500)  # time for a second submit to arrive, if one was sent
    settle(page)
    [ev] = events(project, "ann7", "preference_match")  # the second press was on item 1 too
    assert ev.event_id == first.event_id and ev.values == {"coverage": "partially"}
    assert page.get_by_role("heading", name="Preference matching · 2 left for you").count() == 1
    page.context.close()


def test_a_comment_typed_then_ctrl_enter_is_kept(served, browser):
    project, page = signed_in_on(served, browser, "ann8", "memory_verify")

    def act():
        page.keyboard.press("a")
        settle(page)
        page.get_by_label("Comment (optional)").fill("two candidates say the same")
        page.keyboard.press("Control+Enter")  # from inside the comment box

    next_item(page, "Memory verification", act)
    [ev] = events(project, "ann8", "memory_verify")
    assert ev.comment == "two candidates say the same"
    page.context.close()


def test_matching_a_click_then_a_key(served, browser):
    project, page = signed_in_on(served, browser, "ann4", "preference_match")
    next_item(
        page, "Preference matching", lambda: page.get_by_role("button", name="Partially covered").click()
    )
    next_item(page, "Preference matching", lambda: page.keyboard.press("3"))
    assert [e.values["coverage"] for e in events(project, "ann4", "preference_match")] == [
        "partially",
        "not_covered",
    ]
    page.context.close()


def test_matching_through_the_generic_form_labels_the_item_seen_with_the_value_chosen(served, browser):
    """preference_match is a declaration: the generic form draws it (its titles, its keys), and a
    click or a key records a label for the item on screen only, with the value chosen."""
    from prefkit.annotate_app.forms import form_for

    assert type(form_for("preference_match")).__name__ == "DeclaredForm"
    project, page = signed_in_on(served, browser, "ann14", "preference_match")
    first = workflow.current_item(project, "ann14", "preference_match")
    assert first.task.payload["candidate"] in page.inner_text("[data-testid=stMain]")
    next_item(
        page,
        "Preference matching",
        lambda: page.get_by_role("button", name="Not covered", exact=True).click(),
    )
    second = workflow.current_item(project, "ann14", "preference_match")
    assert second.task.payload["candidate"] in page.inner_text("[data-testid=stMain]")
    next_item(page, "Preference matching", lambda: page.keyboard.press("1"))
    assert [(e.task_id, e.values) for e in stored(project, "ann14", "preference_match", 2)] == [
        (first.task.task_id, {"coverage": "not_covered"}),
        (second.task.task_id, {"coverage": "fully"}),
    ]
    page.context.close()


def test_task_check_verdicts_clicked_then_ctrl_enter_and_keys(served, browser):
    project, page = signed_in_on(served, browser, "ann5", "task_qc")

    def mouse_then_submit():
        segment(page, "No leakage").click()
        settle(page)
        segment(page, "Gold answer correct").click()
        settle(page)
        page.keyboard.press("Control+Enter")

    next_item(page, "Generated task check", mouse_then_submit)

    def keys():  # the keys the hint names: 2 leaks, 4 incorrect, after a click on the first verdict
        segment(page, "No leakage").click()
        press_settled(page, "2", "4", "Control+Enter")

    next_item(page, "Generated task check", keys)
    assert [e.values for e in events(project, "ann5", "task_qc")] == [
        {"leakage": "none", "answer": "correct"},
        {"leakage": "leaks", "answer": "incorrect"},
    ]
    shot(page, "task_qc_keys")
    page.context.close()


# -- 2. two tabs on one account --------------------------------------------------------------------
def second_tab(page, url: str, user: str):
    """Another tab of the same browser: signed in as ``user`` by the session cookie alone."""
    tab = page.context.new_page()
    tab.goto(url)
    tab.get_by_text(f"signed in as {user}").wait_for()
    settle(tab)
    assert tab.get_by_label("User name").count() == 0
    return tab


def test_a_stale_tab_says_so_shows_the_current_item_and_records_nothing(served, browser):
    from playwright.sync_api import expect

    project, url, _ = served
    first = sign_in(browser, url, "ann9")
    second = second_tab(first, url, "ann9")
    for page in (first, second):
        open_kind(page, "Preference expressed")
    x = workflow.current_item(project, "ann9", "preference_expressed")
    second.bring_to_front()
    keys = ("e", "n", "Control+Enter")
    next_item(second, "Preference expressed", lambda: [second.keyboard.press(k) for k in keys])
    y = workflow.current_item(project, "ann9", "preference_expressed")
    first.bring_to_front()
    next_item(first, "Preference expressed", lambda: first.keyboard.press("e"))  # still showed x
    expect(first.get_by_text("is no longer open for you here")).to_be_visible()
    expect(first.get_by_text(f"item {y.task.item_ref}").first).to_be_visible()
    shot(first, "stale_tab")
    [ev] = events(project, "ann9", "preference_expressed")
    assert ev.task_id == x.task.task_id and [i["expressed"] for i in ev.values["items"]] == [True, False]

    for page in (first, second):
        open_kind(page, "Preference matching")
    pair = workflow.current_item(project, "ann9", "preference_match")
    second.bring_to_front()
    next_item(second, "Preference matching", lambda: second.keyboard.press("1"))
    first.bring_to_front()
    next_item(first, "Preference matching", lambda: first.keyboard.press("3"))
    expect(first.get_by_text(re.compile("Not recorded|no longer open for you here")).first).to_be_visible()
    assert [(e.task_id, e.values) for e in events(project, "ann9", "preference_match")] == [
        (pair.task.task_id, {"coverage": "fully"})
    ]
    first.context.close()


# -- 3. errors where the eye is; 4. contradictions before saving ----------------------------------------
def test_an_empty_missing_memory_is_said_where_the_eye_is_and_the_item_stays(served, browser):
    from playwright.sync_api import expect

    project, page = signed_in_on(served, browser, "ann10", "memory_verify")
    before = item_now(page, "Memory verification")
    page.get_by_role("button", name="Add a missing memory").click()
    settle(page)
    page.keyboard.press("a")
    settle(page)
    page.keyboard.press("Control+Enter")
    top = page.get_by_text(re.compile("^Missing memory 1 is empty: type the memory the models missed"))
    top.wait_for()
    settle(page)
    expect(top).to_be_in_viewport()  # at the top of the item, in view
    expect(page.get_by_text(re.compile("^Empty: type the memory the models missed"))).to_be_in_viewport()
    assert page.get_by_text("added.0.value").count() == 0  # words, not a field path
    assert item_now(page, "Memory verification") == before  # the item stays
    assert events(project, "ann10", "memory_verify") == []
    shot(page, "hidden_error")
    page.context.close()


def test_on_a_server_heard_late_clicks_and_keys_keep_their_order_and_values(served, browser):
    """The page hears every run 3.5 s late (longer than any fixed wait in the page): an answer clicked,
    an evidence pill clicked, E, Ctrl+Enter at a quick person's pace. Each waits for the run before it,
    so none sends values older than the server's: the submit sees exactly what was chosen (here a
    contradiction, pointed out), then the fix is stored as chosen."""
    from playwright.sync_api import expect

    project, page = signed_in_on(served, browser, "ann13", "preference_expressed", lag=True)
    answers = page.locator("[data-testid=stRadio]").filter(has_text="Did the user express")
    pills = page.locator("[data-testid=stButtonGroup]").filter(has_text="turn 2").first
    lagging(page, 3500)
    answers.first.locator("label").filter(has_text=re.compile("^Not expressed$")).click()
    page.wait_for_timeout(300)
    pills.get_by_role("button", name="turn 2", exact=True).click()
    page.wait_for_timeout(300)
    page.keyboard.press("e")  # item 2: the click moved the active item on
    page.wait_for_timeout(300)
    page.keyboard.press("Control+Enter")
    said = page.get_by_text(re.compile("Item 1 is Not expressed but has evidence \\(turn 2\\)")).first
    said.wait_for(timeout=60_000)
    assert events(project, "ann13", "preference_expressed") == []
    expect(page.locator("#prefkit-dropped")).to_have_count(0)  # nothing was dropped: all on this item

    def fix():  # then, before the next item is heard of, a click on this one's pill: it is not sent
        answers.first.locator("label").filter(has_text=re.compile("^Expressed$")).click()
        page.wait_for_timeout(300)
        page.keyboard.press("Control+Enter")
        page.wait_for_timeout(300)
        pills.get_by_role("button", name="turn 0", exact=True).click()

    # the notice shows for 6 s, which a loaded machine may spend before the next item is drawn: what it
    # said is kept as it appears
    page.evaluate(
        "() => { window.__noticesSeen = []; new MutationObserver(() => {"
        " const n = document.getElementById('prefkit-dropped');"
        " if (n && !window.__noticesSeen.includes(n.textContent)) window.__noticesSeen.push(n.textContent); })"
        ".observe(document.body, {subtree: true, childList: true, characterData: true}); }"
    )
    next_item(page, "Preference expressed", fix)
    [ev] = stored(project, "ann13", "preference_expressed", 1)
    assert ev.values["items"] == [
        {"item": 0, "expressed": True, "evidence": [2]},
        {"item": 1, "expressed": True, "evidence": []},
    ]
    assert page.evaluate("() => window.__noticesSeen") == [
        "A click made before this item appeared was ignored: read it, then click again."
    ]
    settle(page)
    assert pills.get_by_role("button", name="turn 0", exact=True).get_attribute("aria-pressed") == "false"
    page.wait_for_timeout(1000)
    assert len(events(project, "ann13", "preference_expressed")) == 1
    page.context.close()


def test_a_contradiction_is_pointed_out_before_saving(served, browser):
    from playwright.sync_api import expect

    project, page = signed_in_on(served, browser, "ann11", "preference_expressed")
    answers = page.locator("[data-testid=stRadio]").filter(has_text="Did the user express")
    answers.first.locator("label").filter(has_text=re.compile("^Not expressed$")).click()
    settle(page)
    pills = page.locator("[data-testid=stButtonGroup]").filter(has_text="turn 2").first
    pills.get_by_role("button", name="turn 2", exact=True).click()  # evidence for a Not expressed item
    settle(page)
    page.keyboard.press("e")  # item 2
    settle(page)
    page.keyboard.press("Control+Enter")
    said = page.get_by_text(re.compile("Item 1 is Not expressed but has evidence \\(turn 2\\)")).first
    said.wait_for()
    settle(page)
    expect(said).to_be_in_viewport()
    assert events(project, "ann11", "preference_expressed") == []
    shot(page, "contradiction")

    def fix():  # the annotator meant Expressed
        answers.first.locator("label").filter(has_text=re.compile("^Expressed$")).click()
        settle(page)
        page.keyboard.press("Control+Enter")

    assert decided(project, page, "ann11", fix) == checklist((True, [2]), (True, []))
    page.context.close()


# -- 5. a reload keeps you signed in, on the same item, with the half-done form ---------------------------
def session_cookie(page) -> dict:
    [cookie] = [c for c in page.context.cookies() if c["name"].startswith("prefkit_session_")]
    return cookie


def test_a_reload_mid_item_keeps_the_sign_in_the_item_and_the_half_done_form(served, browser):
    from playwright.sync_api import expect

    project, page = signed_in_on(served, browser, "ann12", "memory_verify")
    shown = workflow.current_item(project, "ann12", "memory_verify")
    segment(page, "Reject").click()
    settle(page)
    choose(page, "Reason", "too generic")
    page.get_by_role("button", name="Add a missing memory").click()
    settle(page)
    page.get_by_label("Value").last.fill("Travels to Porto in June")
    page.get_by_role("radiogroup", name="Type").last.get_by_text("indirect", exact=True).click()
    settle(page)
    page.get_by_label("Comment (optional)").fill("one candidate is about the assistant")
    page.get_by_label("Comment (optional)").press("Tab")  # the comment and the value reach the server
    # ... in the run the Tab starts, which may not have begun yet: reload once the draft has them
    draft_kept(
        project,
        "ann12",
        shown.task.task_id,
        lambda s: s.get("comment") == "one candidate is about the assistant",
    )
    settle(page)
    cookie = session_cookie(page)
    assert cookie["sameSite"] == "Strict" and cookie["expires"] > time.time() + 11 * 3600

    page.reload()  # a new browser session: no sign-in form, the same item, the form as it was
    page.get_by_text("signed in as ann12").wait_for()
    page.get_by_text(f"item {shown.task.item_ref}").first.wait_for()
    settle(page)
    assert page.get_by_label("User name").count() == 0
    expect(segment(page, "Reject")).to_be_checked()
    expect(page.get_by_label("Value").last).to_have_value("Travels to Porto in June")
    expect(page.get_by_label("Comment (optional)")).to_have_value("one candidate is about the assistant")
    shot(page, "reload_restored")
    assert events(project, "ann12", "memory_verify") == []  # a draft is no label

    def finish():
        page.keyboard.press("a")
        settle(page)
        page.keyboard.press("Control+Enter")

    next_item(page, "Memory verification", finish)
    [ev] = events(project, "ann12", "memory_verify")
    assert ev.event_id == shown.event_id and ev.comment == "one candidate is about the assistant"
    assert ev.values["decisions"][0] == {
        "key": ev.values["decisions"][0]["key"],
        "decision": "reject",
        "reason": "too_generic",
    }
    assert [(m["value"], m["type"]) for m in ev.values["added"]] == [("Travels to Porto in June", "indirect")]
    assert project.store.drafts.draft("ann12", shown.task.task_id) is None

    page.get_by_role("button", name="Sign out").click()  # revoked: the old cookie signs nobody in
    page.get_by_label("User name").wait_for()
    page.context.add_cookies([cookie])
    page.reload()
    page.get_by_label("User name").wait_for()
    settle(page)
    assert page.get_by_text("signed in as").count() == 0
    page.context.close()


def test_a_cookie_altered_to_another_user_signs_nobody_in(served, browser):
    import base64

    project, url, _ = served
    page = sign_in(browser, url, "ann12")
    cookie = session_cookie(page)
    parts = cookie["value"].split(".")
    parts[2] = base64.urlsafe_b64encode(b"maya").decode().rstrip("=")  # the maintainer
    page.context.clear_cookies()
    page.context.add_cookies([{**cookie, "value": ".".join(parts)}])
    page.reload()
    page.get_by_label("User name").wait_for()
    settle(page)
    assert page.get_by_text("signed in as").count() == 0
    page.context.close()
