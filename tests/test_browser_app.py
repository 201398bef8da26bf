"""The annotation app in a real browser: Debian chromium driven by Playwright against
`prefkit annotate serve` (one server for the module; the last test kill -9s it).

Screenshots of every page go to artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest
from appkit import (
    CHROMIUM,
    HOSTILE,
    PASSWORD,
    attempt,
    label_match,
    make_hostile_project,
    next_item,
    open_kind,
    require_chromium,
    serve,
    served_project,
    settle,
    shot,
    sign_in,
    signed_in_on,
    skip_to,
)
from prefkit.curation.annotation import workflow
from prefkit.curation.project import Project

pytestmark = pytest.mark.browser
__all__ = ["CHROMIUM"]  # for modules importing it


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    annotators = ("carol", "dan", "erin")
    project = served_project(tmp_path_factory, "browser", annotators, n=3, overlap=5, alps=True, hostile=True)
    yield from serve(project)


def label_expressed(page) -> None:
    from playwright.sync_api import expect

    def act():
        page.get_by_role("button", name="Evidence for item 1", exact=True).nth(1).click()
        expect(page.get_by_text("Undecided · evidence: turn 2")).to_be_visible()  # evidence never decides
        expect(page.get_by_role("radio", name="Expressed", exact=True).first).not_to_be_checked()
        page.keyboard.press("e")
        expect(page.get_by_role("radio", name="Expressed", exact=True).first).to_be_checked()
        expect(page.get_by_role("radio", name="Item 2")).to_be_checked()
        page.keyboard.press("n")
        expect(page.get_by_role("radio", name="Not expressed", exact=True).nth(1)).to_be_checked()
        page.keyboard.press("Control+Enter")

    next_item(page, "Preference expressed", act)


def label_memory(page) -> None:
    from playwright.sync_api import expect

    def act():
        page.keyboard.press("a")
        expect(page.get_by_role("radio", name="Accept", exact=True).last).to_be_checked()
        page.keyboard.press("Control+Enter")

    next_item(page, "Memory verification", act)


def test_two_annotators_label_every_kind_in_two_browser_contexts(served, browser):
    project, url, _ = served
    pages = {who: sign_in(browser, url, who) for who in ("alice", "bob")}
    for who, page in pages.items():
        open_kind(page, "Preference matching")
        shot(page, f"match_{who}")
        label_match(page)
        open_kind(page, "Preference expressed")
        shot(page, f"expressed_{who}")
        label_expressed(page)
        open_kind(page, "Memory verification")
        shot(page, f"memory_{who}")
        label_memory(page)
    events = project.store.labels.events()
    by = {(e.annotator, e.kind) for e in events}
    assert by == {
        (w, k)
        for w in ("alice", "bob")
        for k in ("preference_match", "preference_expressed", "memory_verify")
    }
    expressed = [e for e in events if e.kind == "preference_expressed"]
    assert {e.annotator for e in expressed} == {"alice", "bob"}
    assert all(e.values["items"][0] == {"item": 0, "expressed": True, "evidence": [2]} for e in expressed)
    assert all(e.values["items"][1]["expressed"] is False for e in expressed)
    mem = [e for e in events if e.kind == "memory_verify"]
    assert {e.annotator for e in mem} == {"alice", "bob"}
    assert all({d["decision"] for d in e.values["decisions"]} == {"accept"} for e in mem)
    for page in pages.values():
        page.context.close()


def test_dialogue_html_and_scripts_are_shown_as_text_never_run(served, browser):
    skip_to(served[0], "carol", "preference_expressed", "session:sess_0000")
    _, page = signed_in_on(served, browser, "carol", "preference_expressed")
    page.get_by_text("window.__pwned = 1", exact=False).first.wait_for()
    shot(page, "hostile_dialogue")
    assert page.evaluate("window.__pwned") is None
    body = page.inner_text("body")
    assert '<script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2">' in body
    assert "**bold** $x$" in body and HOSTILE.startswith("<script>")
    assert page.locator("img[src=x]").count() == 0 and page.locator("script:text('__pwned')").count() == 0
    page.context.close()


def test_maintainer_pages_render(served, browser):
    project, url, _ = served
    item = workflow.current_item(project, "carol", "preference_match")  # disagrees with alice and bob
    workflow.submit(project, "carol", item, {"coverage": "not_covered"})
    visitor = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
    visitor.goto(url)
    visitor.get_by_label("User name").wait_for()
    assert visitor.get_by_role("link", name="Annotate").count() == 0
    shot(visitor, "sign_in")
    visitor.context.close()
    page = sign_in(browser, url, "maya")
    page.get_by_text("Progress per annotator and task kind").wait_for()  # maintainers land on the dashboard
    page.get_by_text("Agreement").first.wait_for()
    page.set_viewport_size({"width": 1440, "height": 2600})  # the whole dashboard in one picture
    settle(page)
    shot(page, "dashboard")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.get_by_role("link", name="Adjudication").click()
    page.get_by_role("heading", name="Adjudication").wait_for()
    page.get_by_text("Labels side by side").wait_for()
    settle(page)
    shot(page, "adjudication")
    page.get_by_role("link", name="My items").click()
    page.get_by_role("heading", name="My items").wait_for()
    page.context.close()
    annotator = sign_in(browser, url, "alice")
    annotator.get_by_role("button", name=re.compile("^Start annotating")).wait_for()
    shot(annotator, "guidelines_intro")
    assert annotator.get_by_role("link", name="Dashboard").count() == 0
    annotator.get_by_role("link", name="My items").click()
    annotator.get_by_role("heading", name="My items").wait_for()
    shot(annotator, "my_items")
    annotator.context.close()


def scroll_tops(page) -> dict[str, float]:
    """The page's scroll position and the dialogue box's (the bordered box that scrolls)."""
    return page.evaluate(
        "() => { const m = document.querySelector('[data-testid=stMain]');"
        " const box = document.querySelector('[class*=st-key-dialogue-]');"
        " const inner = box && [box, ...box.querySelectorAll('*')].find(e => e.scrollHeight > e.clientHeight + 5"
        " && ['auto', 'scroll'].includes(getComputedStyle(e).overflowY));"
        " return {page: Math.max(window.scrollY, m ? m.scrollTop : 0), dialogue: inner ? inner.scrollTop : -1,"
        " scrollable: inner ? inner.scrollHeight - inner.clientHeight : 0}; }"
    )


def test_evidence_never_decides_and_submit_names_the_undecided_item(served, browser):
    """Playwright's ``expect`` checks each step: evidence leaves the item undecided, the submit names it."""
    from playwright.sync_api import expect

    _, page = signed_in_on(served, browser, "dan", "preference_expressed")
    page.get_by_role("button", name="Evidence for item 1", exact=True).first.click()
    settle(page)
    expect(page.get_by_text("Undecided · evidence: turn 0").first).to_be_visible()
    expressed = page.get_by_role("radio", name="Expressed", exact=True).first
    expect(expressed).not_to_be_checked()
    choice = page.locator("[data-testid=stRadio]").filter(has_text="Did the user express").first
    choice.locator("label").filter(has_text=re.compile("^Expressed$")).click()
    settle(page)
    expect(expressed).to_be_checked()
    choice.locator("label").filter(has_text=re.compile("^Expressed$")).click()  # the chosen answer again ...
    settle(page)
    expect(expressed).to_be_checked()  # ... never turns it off
    page.get_by_role("button", name="Submit").click()
    settle(page)
    expect(
        page.get_by_text(re.compile("Decide item 2 “Does the reply avoid long paragraphs"))
    ).to_be_visible()
    shot(page, "expressed_undecided")
    page.context.close()


def test_each_item_opens_at_its_top_without_a_toast(served, browser):
    from playwright.sync_api import expect

    _, page = signed_in_on(served, browser, "dan", "memory_verify")
    top = scroll_tops(page)
    assert top["scrollable"] > 0 and top["dialogue"] == 0  # a long dialogue opens at turn 0, not its end
    expect(page.get_by_text("turn 0 · user").first).to_be_in_viewport()
    page.evaluate(
        "() => { document.querySelector('[data-testid=stMain]').scrollTo(0, 10000);"
        " document.querySelectorAll('[class*=st-key-dialogue-], [class*=st-key-dialogue-] *')"
        ".forEach(e => e.scrollTop = 10000); }"
    )
    assert scroll_tops(page)["dialogue"] > 0
    label_memory(page)
    page.wait_for_timeout(300)
    after = scroll_tops(page)
    assert after["page"] == 0 and after["dialogue"] == 0  # the next item starts at its top
    assert page.locator("[data-testid=stToast]").count() == 0  # no toast over the controls
    expect(page.get_by_text(re.compile("Saved · dialogue:")).first).to_be_visible()
    shot(page, "memory_next_item")
    page.context.close()


def test_a_tie_is_adjudicated_from_an_empty_form(served, browser):
    from prefkit.curation.annotation.task_kinds import get_kind
    from prefkit.schemas.common import utcnow
    from prefkit.schemas.curation import LabelEvent

    project, url, _ = served
    base = project.store.labels.tasks(kind="preference_expressed")[0]
    task = get_kind("preference_expressed").make_task("session:tie", base.payload, 2, "default")
    project.store.labels.add_tasks([task])
    for who, first in (("alice", True), ("bob", False)):
        values = {
            "items": [
                {"item": 0, "expressed": first, "evidence": []},
                {"item": 1, "expressed": not first, "evidence": []},
            ]
        }
        project.store.submits.record_submit(
            LabelEvent(
                event_id=f"ev_tie_{who}",
                task_id=task.task_id,
                kind=task.kind,
                annotator=who,
                values=values,
                created_at=utcnow(),
            )
        )
    page = sign_in(browser, url, "maya")
    page.get_by_role("link", name="Adjudication").click()
    page.get_by_role("heading", name="Adjudication").wait_for()
    page.get_by_role("radio", name="Preference expressed", exact=True).click()
    page.get_by_text("A tie on 2 units").wait_for()
    settle(page)
    shot(page, "adjudication_tie")
    decision = page.locator("[data-testid=stRadio]").filter(has_text="Did the user express")
    decision.first.wait_for()  # the expressed form, not the tie caption of the kind shown before
    settle(page)
    assert decision.count() == 2
    assert decision.locator("input:checked").count() == 0  # neither annotator's answer is the default
    page.get_by_role("button", name="Record decision").click()  # nothing decided yet: said, not recorded
    page.get_by_text(re.compile("^Decide item 1 .* first")).wait_for()
    assert not project.store.labels.adjudications(task.task_id)
    page.context.close()


def test_an_idle_item_goes_back_to_the_pool_and_a_late_submit_is_kept(served, browser):
    from click.testing import CliRunner
    from prefkit.cli import cli

    project, page = signed_in_on(served, browser, "erin", "preference_match")
    shown = workflow.current_item(project, "erin", "preference_match")
    out = CliRunner().invoke(
        cli, ["tasks", "release", "--idle-hours", "0", "--annotator", "erin", "--project", str(project.root)]
    )
    assert out.exit_code == 0 and out.output.startswith("released 3 items")
    assert {r.task_id for r in project.store.stale.assignment_releases("erin")} == {
        t.task_id for t in project.store.labels.tasks(kind="preference_match")
    }
    label_match(page)  # the item still on screen: its label is kept, the page moves on
    assert project.store.labels.event(shown.event_id).values == {"coverage": "fully"}
    assert workflow.progress(project, "erin")["preference_match"].done == 1
    page.context.close()


def test_a_context_handed_back_is_taken_over_as_a_browser_that_never_signed_in(served, browser):
    """The helper behind every sign-in of these tests (``appkit.reused_page``): a context a test closed
    is taken over by the next sign-in with its cookies, site storage and pages gone, so no test sees
    another's session or settings."""
    _, url, _ = served
    first = sign_in(browser, url, "carol")
    first.evaluate("() => localStorage.setItem('prefkit-test-left-behind', 'carol')")
    context = first.context
    context.close()  # handed back: its page closes as before
    assert first.is_closed()
    second = sign_in(browser, url, "dan")
    assert second.context is context and len(context.pages) == 1
    assert second.evaluate("() => localStorage.getItem('prefkit-test-left-behind')") is None
    assert second.get_by_text("signed in as dan").is_visible()
    assert not second.get_by_text("signed in as carol").count()
    sessions = [c for c in context.cookies() if c["name"].startswith("prefkit_session_")]
    assert len(sessions) == 1  # dan's only: carol's cookie went with the hand-back
    context.close()


def test_kill_9_loses_no_acknowledged_label(served, browser):
    project, url, proc = served
    page = sign_in(browser, url, "carol")
    open_kind(page, "Preference matching")
    acknowledged = []
    for _ in range(2):
        item = workflow.current_item(project, "carol", "preference_match")
        label_match(page)  # returns once the next item is on screen: the submit was acknowledged
        acknowledged.append(item.event_id)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    page.context.close()
    reopened = Project(project.root)
    stored = {e.event_id: e for e in reopened.store.labels.events(annotator="carol")}
    assert len(acknowledged) == 2 and all(stored[eid].values == {"coverage": "fully"} for eid in acknowledged)
    reopened.close()


# -- a second server: a project with a payload in every displayed field ----------------------------------
@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    require_chromium()
    project = make_hostile_project(tmp_path_factory.mktemp("hostile") / "proj")
    config = project.root / "prefkit.toml"
    config.write_text(config.read_text().replace("backoff_s = 2.0", "backoff_s = 60.0"))
    yield from serve(project)


def assert_inert(page, outside: list[str]) -> None:
    """The payload is on screen as text; nothing of it became a link, an image or a request."""
    assert "https://evil.example/p" in page.inner_text("body")
    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    assert not [h for h in links if "evil" in h or "127.0.0.9" in h or h.startswith("mailto:")]
    assert page.locator("img[src*=evil], img[src*='127.0.0.9']").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert outside == []


def test_a_payload_in_every_field_stays_text_on_every_page(hostile, browser):
    project, url, _ = hostile
    outside: list[str] = []
    page = sign_in(browser, url, "carol", outside)
    for title in ("Preference expressed", "Preference matching", "Memory verification"):
        open_kind(page, title)
        page.get_by_text("Skip or report this item").click()
        settle(page)
        assert_inert(page, outside)
        for field in (
            # (a candidate's origin is not shown to annotators: "from instances" was jargon, issue 43)
            ("turn0 ", "ref ", "wk") if title != "Preference matching" else ("item ", "candidate ")
        ):
            assert field + "<img" in page.inner_text("body")
    shot(page, "hostile_memory")
    page.context.close()
    page = sign_in(browser, url, "alice", outside)
    page.get_by_role("link", name="My items").click()
    page.get_by_role("heading", name="My items").wait_for()
    assert page.get_by_text("turn0 <img").count() >= 1  # the item named by its text, as text
    for ev in project.store.labels.effective_events():
        if ev.annotator == "alice":  # each label reopened: its form and dialogue on screen
            page.locator(f".st-key-mine-{ev.event_id}").get_by_role("button", name="Reopen").click()
            settle(page)
            assert_inert(page, outside)
    assert_inert(page, outside)
    page.context.close()
    page = sign_in(browser, url, "maya", outside)
    page.get_by_role("link", name="Dashboard").click()
    page.get_by_text("Progress per annotator and task kind").wait_for()
    settle(page)
    assert page.locator("[data-testid=stException]").count() == 0
    page.get_by_role("link", name="Adjudication").click()
    page.get_by_role("heading", name="Adjudication").wait_for()
    for title in ("Preference expressed", "Preference matching", "Memory verification"):
        page.get_by_role("radio", name=title, exact=True).click()
        page.get_by_text("Labels side by side").wait_for()
        settle(page)
        assert page.get_by_text("alice: comment <img").count() == 1
        assert_inert(page, outside)
    page.context.close()


def test_wrong_passwords_back_off_until_a_maintainer_unlocks(hostile, browser):
    from playwright.sync_api import expect

    project, url, _ = hostile
    page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()

    def logged(n: int) -> None:  # the server has handled the n-th attempt
        deadline = time.monotonic() + 30
        while len(project.store.accounts.sign_in_log("bob")) < n and time.monotonic() < deadline:
            page.wait_for_timeout(100)

    for i in range(3):
        attempt(page, url, "bob", "not-the-password")
        logged(i + 1)
        # .first: while a run replaces the message, the old and the new copy can both be on the page
        expect(page.get_by_text("unknown user name or wrong password").first).to_be_visible()
    attempt(page, url, "bob", PASSWORD)  # the right password, refused unchecked during the backoff
    logged(4)
    expect(page.get_by_text(re.compile(r"too many failed sign-ins: wait \d+ s"))).to_be_visible()
    assert [r.outcome for r in project.store.accounts.sign_in_log("bob")][:4] == [
        "throttled",
        "fail",
        "fail",
        "fail",
    ]
    shot(page, "sign_in_backoff")
    project.store.accounts.unlock_sign_in("bob")
    attempt(page, url, "bob", PASSWORD)
    page.get_by_text("signed in as bob").wait_for()
    page.context.close()
