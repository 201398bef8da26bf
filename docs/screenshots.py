"""The screenshots in docs/annotation.md and docs/kinds.md: every page of the annotation app at 1400×900
and 800×600, and a long declared item (tests/memoryqa.py: a chat history in sessions, a question, the
model's answer and three candidates to rank).

Builds its own project (``prefkit.demo.build_demo``: offline sessions, the bundled AlpsBench example
packets, preference pairs, the demo accounts and tasks of all three kinds), gives it a few labels (two
annotators who disagree, a flag), serves it with ``prefkit annotate serve`` and drives Debian chromium
through Playwright. Writes ``docs/img/<page>_<width>x<height>.png``.

Usage: python docs/screenshots.py [--out docs/img] [--chromium /usr/bin/chromium] [--only long_item]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from prefkit.curation.annotation import work, workflow
from prefkit.curation.annotation.declared import use_project_kinds
from prefkit.demo import DEMO_PASSWORD, build_demo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import memoryqa  # noqa: E402 - the long item's declaration and items, shared with its tests

ARGS = "--no-sandbox --disable-gpu --disable-background-networking --disable-component-update --disable-sync --no-first-run".split()
SIZES = ((1400, 900), (800, 600))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def label_some(root: Path) -> None:
    """Two annotators who disagree on an item of each kind, and a flag: work for every page."""
    from prefkit.curation.project import Project

    project = Project(root)
    for who, coverage in (("alice", "fully"), ("bob", "not_covered")):
        item = workflow.current_item(project, who, "preference_match")
        workflow.submit(
            project, who, item, {"coverage": coverage}, "the candidate is vague" if who == "bob" else None
        )
    for who, second in (("alice", True), ("bob", False)):
        item = workflow.current_item(project, who, "preference_expressed")
        n = len(item.task.payload["checklist"])
        user_turn = next(t["index"] for t in item.task.payload["turns"] if t["role"] == "user")
        items = [{"item": 0, "expressed": True, "evidence": [user_turn]}]
        items += [{"item": i, "expressed": second if i == 1 else False} for i in range(1, n)]
        workflow.submit(project, who, item, {"items": items})
    item = workflow.current_item(project, "carol", "memory_verify")
    workflow.flag(project, "carol", item, "wrong language")
    (root / "kinds").mkdir(exist_ok=True)
    (root / "kinds" / f"{memoryqa.NAME}.toml").write_text(memoryqa.TOML, encoding="utf-8")
    items = root / "memory_qa.jsonl"
    items.write_text("".join(json.dumps(memoryqa.item(n, sessions=4, turns=5)) + "\n" for n in range(3)))
    use_project_kinds(root, project.store)
    work.create(project, "qa", memoryqa.NAME, items=items)
    project.close()


def settle(page) -> None:
    page.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=stApp]');"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'; }"
    )
    page.wait_for_timeout(400)


def sign_in(browser, url: str, user: str, size: tuple[int, int]):
    page = browser.new_context(viewport={"width": size[0], "height": size[1]}).new_page()
    page.goto(url)
    page.get_by_label("User name").fill(user)
    page.get_by_label("Password", exact=True).fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text(f"signed in as {user}").wait_for(state="attached")
    settle(page)
    return page


def sidebar(page, size: tuple[int, int], open_: bool) -> None:
    """Open the sidebar (folded in a narrow window) to use it, or fold it again for the picture."""
    if size[0] >= 1000:
        return
    button = page.locator(
        "[data-testid=stExpandSidebarButton]" if open_ else "[data-testid=stSidebarCollapseButton] button"
    )
    if button.count():
        button.first.click()
        settle(page)


def kind(page, size, title: str) -> None:
    sidebar(page, size, True)
    page.get_by_role("radio", name=title, exact=True).click()
    settle(page)
    sidebar(page, size, False)


def shoot(page, out: Path, name: str, size: tuple[int, int]) -> None:
    settle(page)
    page.screenshot(path=str(out / f"{name}_{size[0]}x{size[1]}.png"))
    print(f"wrote {name}_{size[0]}x{size[1]}.png", flush=True)


def long_item(browser, url: str, out: Path, size: tuple[int, int]) -> None:
    """The long declared item: two panes at 1400×900, one column (fields, questions, history) at 800×600."""
    page = sign_in(browser, url, "carol", size)
    kind(page, size, "Does the answer remember the user?")
    page.get_by_role("button", name=re.compile("^Start annotating")).click()
    page.locator(".prefkit-spans .pk-session").first.wait_for()
    shoot(page, out, "long_item", size)
    page.context.close()


def pages(browser, url: str, out: Path, size: tuple[int, int]) -> None:
    visitor = browser.new_context(viewport={"width": size[0], "height": size[1]}).new_page()
    visitor.goto(url)
    visitor.get_by_label("User name").wait_for()
    shoot(visitor, out, "sign_in", size)
    visitor.context.close()

    page = sign_in(browser, url, "carol", size)
    kind(page, size, "Preference matching")
    page.get_by_role("button", name=re.compile("^Start annotating")).wait_for()
    shoot(page, out, "guidelines_intro", size)
    page.get_by_role("button", name=re.compile("^Start annotating")).click()
    header = page.get_by_text(re.compile(r"^Preference matching · \d+ left for you")).first
    header.wait_for()
    before = header.inner_text()
    shoot(page, out, "match", size)
    page.keyboard.press("1")
    page.wait_for_function(
        "b => [...document.querySelectorAll('h2')].some(e => e.innerText.startsWith('Preference matching · ') && e.innerText !== b)",
        arg=before,
    )
    # a key within 250 ms of the last is that key's burst, dropped on the new item (annotate_app/keys.py)
    page.wait_for_function("() => !window.__prefkitKeysReady || window.__prefkitKeysReady()")
    page.keyboard.press("p")
    page.get_by_text("your label 1 back").wait_for()
    shoot(page, out, "previous_item", size)
    page.keyboard.press("Escape")
    page.get_by_text(re.compile(r"^Preference matching · \d+ left for you")).first.wait_for()
    page.keyboard.press("?")
    page.get_by_role("dialog", name="Keyboard shortcuts").wait_for()
    shoot(page, out, "keyboard_help", size)
    page.keyboard.press("Escape")
    for title, name in (("Preference expressed", "expressed"), ("Memory verification", "memory")):
        kind(page, size, title)
        page.get_by_role("button", name=re.compile("^Start annotating")).click()
        page.get_by_text(re.compile(rf"^{title} · \d+ left for you")).first.wait_for()
        shoot(page, out, name, size)
        page.get_by_text("Select words", exact=True).click()
        page.locator(".prefkit-spans").wait_for()
        first = page.locator(".prefkit-spans .pk-on .pk-text").first
        first.scroll_into_view_if_needed()
        box = first.bounding_box()
        page.mouse.dblclick(box["x"] + 30, box["y"] + 10)  # a word selected as evidence
        page.locator(".prefkit-spans mark").first.wait_for()
        shoot(page, out, f"{name}_words", size)
        page.get_by_text("Select words", exact=True).click()
        settle(page)
    sidebar(page, size, True)
    page.get_by_role("link", name="My items").click()
    page.get_by_role("heading", name="My items").wait_for()
    sidebar(page, size, False)
    page.get_by_role("button", name="Done", exact=True).click()  # the answered items (open ones come first)
    settle(page)
    page.get_by_role("button", name="Reopen").first.click()
    page.get_by_role("button", name="Save edit").wait_for()
    shoot(page, out, "my_items", size)
    page.context.close()

    page = sign_in(browser, url, "maintainer", size)
    page.get_by_text("Progress per annotator and task kind").wait_for()
    shoot(page, out, "dashboard", size)
    sidebar(page, size, True)
    page.get_by_role("link", name="Adjudication").click()
    page.get_by_role("heading", name="Adjudication").wait_for()
    sidebar(page, size, False)
    page.get_by_role("radio", name="Preference expressed", exact=True).click()
    page.get_by_text("Labels side by side").wait_for()
    shoot(page, out, "adjudication", size)
    page.get_by_role("link", name="Open the item page").click()
    page.get_by_text("Decided by").wait_for()
    shoot(page, out, "item", size)
    page.context.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).with_name("img")))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--only", choices=["long_item"], help="Only these screenshots.")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        project = build_demo(Path(tmp) / "demo", personas=2, seed=0, log=lambda m: None)
        root = project.root
        project.close()
        label_some(root)
        port = free_port()
        env = {**os.environ, "PREFKIT_PROJECT": str(root)}
        prefkit = str(Path(sys.executable).parent / "prefkit")
        proc = subprocess.Popen(
            [prefkit, "annotate", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                        break
                except OSError:
                    time.sleep(0.3)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
                for size in SIZES:
                    if not args.only:
                        pages(browser, url, out, size)
                    long_item(browser, url, out, size)
                browser.close()
        finally:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
