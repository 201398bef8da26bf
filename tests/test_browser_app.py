"""The annotation app in a real browser: Debian chromium driven by Playwright against
`prefkit annotate serve` (one server for the module; the last test kill -9s it).

Screenshots of every page go to artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from appkit import HOSTILE, PASSWORD, make_project
from conftest import ROOT, require

from curation import workflow
from curation.project import Project

pytestmark = [pytest.mark.browser, pytest.mark.shared_data]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]  # fmt: skip
SHOTS = ROOT / "artifacts" / "screenshots"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("server did not become healthy")


@pytest.fixture(scope="module")
def served(tmp_path_factory, alps_packets):
    require(os.path.exists(CHROMIUM), "Debian chromium is not installed (apt-get install chromium)")
    proj = make_project(
        tmp_path_factory.mktemp("browser") / "proj", n=3, overlap=3, alps=alps_packets, hostile=True
    )
    proj.store.add_user("carol", "annotator", PASSWORD)
    port = free_port()
    env = {**os.environ, "PREFKIT_PROJECT": str(proj.root)}
    cmd = [str(Path(sys.executable).parent / "prefkit"), "annotate", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc)
    yield proj, url, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    proj.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def sign_in(browser, url: str, user: str):
    page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
    page.goto(url)
    page.get_by_label("User name").fill(user)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text(f"signed in as {user}").wait_for()
    settle(page)
    return page


def settle(page) -> None:
    """Wait until the script run the last interaction started has finished rendering."""
    page.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=stApp]');"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'; }"
    )


def open_kind(page, title: str) -> None:
    page.get_by_role("radio", name=title, exact=True).click()
    page.get_by_role("heading", name=title, exact=True).wait_for()  # the intro of *this* kind
    settle(page)
    page.get_by_role("button", name=re.compile("^Start annotating")).click()
    page.get_by_text(f"{title} · item").first.wait_for()
    settle(page)


def next_item(page, title: str, action) -> None:
    """Do ``action`` and wait until the server has stored it and rendered the next item (or the end)."""
    before = page.get_by_text(f"{title} · item").first.inner_text()
    action()
    page.wait_for_function(
        "([t, b]) => { const h = [...document.querySelectorAll('h4')].map(e => e.innerText);"
        " return document.body.innerText.includes('Nothing left') || (h.some(x => x.includes(t)) && !h.includes(b)); }",
        arg=[title, before],
    )
    settle(page)


def label_match(page) -> None:
    next_item(page, "Preference matching", lambda: page.keyboard.press("1"))


def label_expressed(page) -> None:
    from playwright.sync_api import expect

    def act():
        page.get_by_role("button", name=re.compile("^Use as evidence for item 1")).nth(1).click()
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
    proj, url, _ = served
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
    events = proj.store.events()
    by = {(e.annotator, e.kind) for e in events}
    assert by == {
        (w, k)
        for w in ("alice", "bob")
        for k in ("preference_match", "preference_expressed", "memory_verify")
    }
    expressed = [e for e in events if e.kind == "preference_expressed"]
    assert all(e.values["items"][0] == {"item": 0, "expressed": True, "evidence": [2]} for e in expressed)
    assert all(e.values["items"][1]["expressed"] is False for e in expressed)
    mem = [e for e in events if e.kind == "memory_verify"]
    assert all({d["decision"] for d in e.values["decisions"]} == {"accept"} for e in mem)
    for page in pages.values():
        page.context.close()


def test_dialogue_html_and_scripts_are_shown_as_text_never_run(served, browser):
    proj, url, _ = served
    while (
        item := workflow.current_item(proj, "carol", "preference_expressed")
    ).task.item_ref != "session:sess_0000":
        workflow.skip(proj, "carol", item, "cannot judge")
    page = sign_in(browser, url, "carol")
    open_kind(page, "Preference expressed")
    page.get_by_text("window.__pwned = 1", exact=False).first.wait_for()
    shot(page, "hostile_dialogue")
    assert page.evaluate("window.__pwned") is None
    body = page.inner_text("body")
    assert '<script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2">' in body
    assert "**bold** $x$" in body and HOSTILE.startswith("<script>")
    assert page.locator("img[src=x]").count() == 0 and page.locator("script:text('__pwned')").count() == 0
    page.context.close()


def test_maintainer_pages_render(served, browser):
    proj, url, _ = served
    item = workflow.current_item(proj, "carol", "preference_match")  # disagrees with alice and bob
    workflow.submit(proj, "carol", item, {"coverage": "not_covered"})
    visitor = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
    visitor.goto(url)
    visitor.get_by_label("User name").wait_for()
    assert visitor.get_by_role("link", name="Annotate").count() == 0
    shot(visitor, "sign_in")
    visitor.context.close()
    page = sign_in(browser, url, "maya")
    page.get_by_role("button", name=re.compile("^Start annotating")).wait_for()
    shot(page, "guidelines_intro")
    page.get_by_role("link", name="Dashboard").click()
    page.get_by_text("Progress per annotator and task kind").wait_for()
    page.get_by_text("Agreement").first.wait_for()
    shot(page, "dashboard")
    page.get_by_role("link", name="Adjudication").click()
    page.get_by_role("heading", name="Adjudication").wait_for()
    page.get_by_text("Labels side by side").wait_for()
    settle(page)
    shot(page, "adjudication")
    page.get_by_role("link", name="My recent labels").click()
    page.get_by_role("heading", name="My recent labels").wait_for()
    page.context.close()
    annotator = sign_in(browser, url, "alice")
    assert annotator.get_by_role("link", name="Dashboard").count() == 0
    annotator.get_by_role("link", name="My recent labels").click()
    annotator.get_by_role("heading", name="My recent labels").wait_for()
    shot(annotator, "my_labels")
    annotator.context.close()


def test_kill_9_loses_no_acknowledged_label(served, browser):
    proj, url, proc = served
    page = sign_in(browser, url, "carol")
    open_kind(page, "Preference matching")
    acknowledged = []
    for _ in range(2):
        item = workflow.current_item(proj, "carol", "preference_match")
        label_match(page)  # returns once the next item is on screen: the submit was acknowledged
        acknowledged.append(item.event_id)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    page.context.close()
    reopened = Project(proj.root)
    stored = {e.event_id: e for e in reopened.store.events(annotator="carol")}
    assert all(stored[eid].values == {"coverage": "fully"} for eid in acknowledged)
    reopened.close()
