"""What the annotator decided, on every path, in real Chromium (Playwright against `prefkit annotate
serve`), asserted on the store's label events: keys pressed before an item was drawn never decide it
(Enter, Enter from the guidelines into an assisted item; a stale tab's key burst), keys pressed at
human speed once it is visible do; a click on a pre-selected suggestion keeps it (and it is recorded
as the annotator's), and the selected option is plainly marked (contrast, a ✓, ``aria-checked``)."""

from __future__ import annotations

import re
import time

import pytest
from appkit import (
    ITEM_NOW,
    item_header,
    item_now,
    open_kind,
    serve,
    served_project,
    set_control_share,
    settle,
    sign_in,
    unnamed_controls,
)
from prefkit.curation.annotation import workflow
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.suggestions import suggest

pytestmark = [pytest.mark.browser, pytest.mark.slow]
USERS = ("enter", "burst", "clicker")
DROPPED = "Keys pressed before this item appeared were ignored"
HUMAN_MS = 300  # a person who reads the item before answering: keys this far apart act


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    project = served_project(tmp_path_factory, "decided", USERS, n=4, overlap=5, alps=True)
    set_control_share(project.root, 0.0)  # everyone on the assisted arm
    with LLMLayer(project.store, backend="offline", progress=False) as layer:
        for kind in ("preference_match", "memory_verify"):
            assert suggest(project.store, layer, kind).suggested
    yield from serve(project)


KEYS = {"e": ("e", "KeyE", 69, "e"), "Enter": ("Enter", "Enter", 13, "\r")}


def burst(page, keys: list[str], gap_ms: int = 40) -> None:
    """``keys`` typed ``gap_ms`` apart as a keyboard types them: each event stamped with the time it
    was pressed (CDP ``timestamp``), whenever the busy page gets to it. Playwright's own ``press``
    waits for the page to take each key first, so on a loaded machine its "burst" is spread out by
    the very run the first key started; a real keyboard's is not. ``Control+`` adds Ctrl."""
    cdp = page.context.new_cdp_session(page)
    start = time.time()
    for i, name in enumerate(keys):
        ctrl = name.startswith("Control+")
        key, code, vk, text = KEYS[name.removeprefix("Control+")]
        at = start + i * gap_ms / 1000
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": 2 if ctrl else 0}
        down = {**base, "type": "keyDown" if ctrl else "keyDown", "timestamp": at}
        if not ctrl:
            down["text"] = text
        cdp.send("Input.dispatchKeyEvent", down)
        cdp.send("Input.dispatchKeyEvent", {**base, "type": "keyUp", "timestamp": at + 0.01})
    cdp.detach()


def header(page, title: str) -> str:
    return item_now(page, title)


def wait_new_item(page, title: str, before: str) -> None:
    page.wait_for_function(
        f"([t, b]) => {{ const now = ({ITEM_NOW})(t); return now !== '' && now !== b; }}", arg=[title, before]
    )
    settle(page)


def all_expressed_at_human_speed(page, title: str, n: int) -> None:
    """After a person's pause, ``n`` checklist items answered Expressed by key and the item submitted, each
    key ``HUMAN_MS`` apart; returns once the next item shows."""
    page.wait_for_timeout(HUMAN_MS)
    before = header(page, title)
    for _ in range(n):
        page.keyboard.press("e")
        page.wait_for_timeout(HUMAN_MS)
    page.keyboard.press("Control+Enter")
    wait_new_item(page, title, before)


def dropped_count(page) -> int:
    return page.evaluate("() => window.__prefkitDropped || 0")


def test_enter_enter_from_the_guidelines_starts_but_never_confirms_the_first_suggestion(served, browser):
    project, url, _ = served
    kind, title = "preference_match", "Preference matching"
    page = sign_in(browser, url, "enter")
    page.get_by_role("radio", name=title, exact=True).click()
    page.get_by_role("heading", name=title, exact=True).wait_for()
    settle(page)
    first = workflow.current_item(project, "enter", kind)
    burst(page, ["Enter", "Enter"], gap_ms=120)  # the second: "the first did not seem to take"
    item_header(page, title).wait_for()
    settle(page)
    page.wait_for_timeout(1500)  # anything still queued has had its turn
    assert project.store.labels.event(first.event_id) is None  # nothing recorded for an unseen item
    assert workflow.current_item(project, "enter", kind).event_id == first.event_id
    assert page.get_by_role("button", name=re.compile("^Suggested:")).is_visible()
    assert unnamed_controls(page) == []  # "Suggested: … · confirm", not "smart_toy Suggested: …"
    # On a loaded machine both keys can reach the guidelines screen before it is replaced (the second
    # then acts on nothing there); when the second reached the new item, it was dropped and said so.
    if dropped_count(page) >= 1:
        page.get_by_text(DROPPED).wait_for()  # the annotator is told
    # at human speed, on the item now visible, Enter confirms its suggestion
    page.wait_for_timeout(HUMAN_MS)
    before = header(page, title)
    page.keyboard.press("Enter")
    wait_new_item(page, title, before)
    ev = project.store.labels.event(first.event_id)
    sugg = project.store.suggestions.for_task(first.task.task_id)
    assert ev is not None and ev.action == "label"
    assert (ev.values, ev.assist_arm, ev.suggestion_id) == (sugg.values, "assisted", sugg.suggestion_id)


def test_a_stale_tabs_key_burst_never_decides_the_item_that_replaced_it(served, browser):
    project, url, _ = served
    kind, title = "preference_expressed", "Preference expressed"
    one = sign_in(browser, url, "burst")
    two = one.context.new_page()  # another tab of the same browser, signed in by the session cookie
    two.goto(url)
    two.get_by_text("signed in as burst").wait_for()
    settle(two)
    for page in (one, two):
        open_kind(page, title)
    a = workflow.current_item(project, "burst", kind)
    assert header(one, title) == header(two, title)  # both tabs show the same item
    n = len(a.task.payload["checklist"])
    # tab 2 finishes it at human speed: keys 300 ms apart act
    two.bring_to_front()
    all_expressed_at_human_speed(two, title, n)
    ev = project.store.labels.event(a.event_id)
    assert ev is not None and ev.action == "label"
    assert [d["expressed"] for d in ev.values["items"]] == [True] * n
    b = workflow.current_item(project, "burst", kind)
    assert b.event_id != a.event_id
    # back in tab 1 (still showing the finished item), a quick burst
    one.bring_to_front()
    burst(one, ["e"] * 4 + ["Control+Enter"], gap_ms=40)
    one.get_by_text("no longer open for you here").wait_for()  # the stale-tab notice, b below it
    settle(one)
    one.wait_for_timeout(1500)  # every queued key has had its turn
    assert project.store.labels.event(b.event_id) is None  # nothing recorded for b
    assert workflow.current_item(project, "burst", kind).event_id == b.event_id
    assert dropped_count(one) >= 1 and one.get_by_text(DROPPED).is_visible()
    checked = one.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stMain] input[type=radio]:checked')]"
        ".map(i => (i.closest('label') || i.parentElement).innerText.trim())"
    )
    assert not {"Expressed", "Not expressed"} & set(checked), checked  # no checklist item of b decided
    # at human speed, after b is visible, the keys act
    all_expressed_at_human_speed(one, title, len(b.task.payload["checklist"]))
    ev = project.store.labels.event(b.event_id)
    assert ev is not None and ev.action == "label"


def _rgb(css: str) -> tuple[float, float, float, float]:
    parts = [float(x) for x in re.findall(r"[\d.]+", css)]
    return (*parts[:3], parts[3] if len(parts) > 3 else 1.0)  # type: ignore[return-value]


def _luminance(rgb) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: str, bg: str) -> float:
    f, b = _rgb(fg), _rgb(bg)
    b = tuple(b[i] * b[3] + 255 * (1 - b[3]) for i in range(3))  # over the white page
    f = tuple(f[i] * f[3] + b[i] * (1 - f[3]) for i in range(3))
    hi, lo = sorted((_luminance(f), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


SELECTED = """() => [...document.querySelectorAll('[data-testid=stMain] [role=radiogroup][aria-label=Decision]')]
  .map(g => { const b = g.querySelector('button[aria-checked=true]'); if (!b) return null;
    const p = b.querySelector('p'); const s = getComputedStyle(b);
    return {text: b.innerText, checked: b.getAttribute('aria-checked'), fg: getComputedStyle(p).color,
            bg: s.backgroundColor, mark: getComputedStyle(p, '::before').content}; })"""


def test_clicking_a_preselected_suggestion_keeps_it_and_it_is_plainly_selected(served, browser):
    project, url, _ = served
    kind, title = "memory_verify", "Memory verification"
    page = sign_in(browser, url, "clicker")
    open_kind(page, title)
    item = workflow.current_item(project, "clicker", kind)
    sugg = project.store.suggestions.for_task(item.task.task_id)
    suggested = [d["decision"] for d in sugg.values["decisions"]]
    selected = page.evaluate(SELECTED)
    assert [s and s["text"].replace("\u2713", "").strip().lower() for s in selected] == suggested
    for s in selected:
        assert s["checked"] == "true"
        assert contrast(s["fg"], s["bg"]) >= 4.5, s
        assert "\u2713" in s["mark"], s  # a mark beside colour
    # click every pre-selected value "to confirm": each stays selected
    groups = page.locator("[data-testid=stMain] [role=radiogroup][aria-label=Decision]")
    for i in range(groups.count()):
        groups.nth(i).locator("button[aria-checked=true]").click()
        settle(page)
        page.wait_for_timeout(200)
    assert [
        s and s["text"].replace("\u2713", "").strip().lower() for s in page.evaluate(SELECTED)
    ] == suggested
    before = header(page, title)
    page.get_by_role("button", name="Submit").click()
    wait_new_item(page, title, before)
    ev = project.store.labels.event(item.event_id)
    assert ev is not None and ev.action == "label"  # not refused ("Decide every candidate first")
    assert [d["decision"] for d in ev.values["decisions"]] == suggested
    assert (ev.assist_arm, ev.suggestion_id) == ("assisted", sugg.suggestion_id)
