"""A span question declared from scratch and answered in the real browser (Debian chromium through
Playwright against ``prefkit annotate serve``): the annotator chooses a label, double-clicks words in
the text field and in a chat turn, submits with Ctrl+Enter, and the label holds exactly those words."""

from __future__ import annotations

import pytest
from appkit import PASSWORD, axe_violations, open_kind, require_chromium, serve, settle, sign_in
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import workflow
from prefkit.curation.project import Project
from spankind import NAME, TOML, write_items

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TITLE = "Mark the words"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require_chromium()
    root = tmp_path_factory.mktemp("spans") / "proj"
    Project.init(root, name="spans").close()
    (root / "kinds" / f"{NAME}.toml").write_text(TOML, encoding="utf-8")  # declared from scratch
    for args in (
        ["kinds", "check"],
        ["tasks", "import", "--kind", NAME, str(write_items(root / "i.jsonl")), "--overlap", "2"],
    ):
        result = CliRunner().invoke(cli, [*args, "-p", str(root)])
        assert result.exit_code == 0, result.output
    project = Project(root)
    for who in ("ann1", "ann2"):
        project.store.accounts.add_user(who, "annotator", PASSWORD)
    yield from serve(project)


def _word(page, picker: int, turn: int, word: str) -> None:
    """Double-click ``word`` in ``turn`` of the ``picker``-th word picker, and wait for its highlight."""
    point = page.evaluate(
        """([n, turn, word]) => { const el = document.querySelectorAll('.prefkit-spans')[n]
          .querySelector(`.pk-text[data-turn="${turn}"]`);
        const node = [...el.childNodes].find(x => x.nodeType === 3 && new RegExp(`\\\\b${word}\\\\b`).test(x.textContent));
        const at = node.textContent.search(new RegExp(`\\\\b${word}\\\\b`));
        const r = document.createRange(); r.setStart(node, at + 1); r.setEnd(node, at + 2);
        const b = r.getBoundingClientRect(); return {x: b.x + b.width / 2, y: b.y + b.height / 2}; }""",
        [picker, turn, word],
    )
    page.mouse.dblclick(point["x"], point["y"])
    page.locator(".prefkit-spans").nth(picker).locator("mark", has_text=word).wait_for()
    settle(page)


def test_an_annotator_marks_words_and_the_label_is_exactly_those_words(served, browser):
    project, url, _ = served
    page = sign_in(browser, url, "ann1")
    open_kind(page, TITLE)
    item = workflow.current_item(project, "ann1", NAME)
    marks = page.get_by_role("radiogroup", name="Mark what follows a preference, and what breaks one")
    marks.get_by_role("radio", name="bad", exact=True).click()
    settle(page)
    _word(page, 0, 0, "ride")
    marks.get_by_role("radio", name="pref", exact=True).click()
    settle(page)
    _word(page, 0, 0, "bike")
    _word(page, 0, 0, "lane")
    _word(page, 1, 0, "short")
    assert page.locator(".prefkit-spans").nth(0).locator("mark[data-label=bad]").inner_text() == "ride"
    page.keyboard.press("Control+Enter")
    page.wait_for_function(f"() => !document.querySelector('[class*=\"st-key-{item.event_id}-submit\"]')")
    settle(page)
    assert project.store.labels.event(item.event_id).values == {
        "marks": [
            {"start": 0, "end": 4, "label": "bad"},
            {"start": 9, "end": 13, "label": "pref"},
            {"start": 14, "end": 18, "label": "pref"},
        ],
        "said": [{"turn": 0, "start": 7, "end": 12, "label": "pref"}],
    }
    page.context.close()


def test_words_are_marked_and_unmarked_from_the_keyboard(served, browser):
    project, url, _ = served
    page = sign_in(browser, url, "ann2")
    open_kind(page, TITLE)
    item = workflow.current_item(project, "ann2", NAME)
    assert axe_violations(page) == []  # the pickers and the label choosers are named, in reach of Tab
    words = page.locator(".prefkit-spans").nth(0).locator(".pk-text")
    words.focus()
    for key in ("ArrowRight", "ArrowRight", "ArrowRight", "Shift+ArrowRight", "Enter"):  # bike lane
        page.keyboard.press(key)
    page.locator(".prefkit-spans").nth(0).locator("mark", has_text="bike lane").wait_for()
    settle(page)
    assert page.evaluate("() => document.activeElement.classList.contains('pk-text')")  # still in the text
    for key in ("ArrowLeft", "ArrowLeft", "Enter"):  # the first word, ride, as well
        page.keyboard.press(key)
    page.locator(".prefkit-spans").nth(0).locator("mark", has_text="ride").wait_for()
    settle(page)
    for key in ("ArrowRight", "ArrowRight", "Enter"):  # on the marked words: unmarked
        page.keyboard.press(key)
    page.wait_for_function(
        "() => document.querySelectorAll('.prefkit-spans')[0].querySelectorAll('mark').length === 1"
    )
    settle(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_function(f"() => !document.querySelector('[class*=\"st-key-{item.event_id}-submit\"]')")
    settle(page)
    assert project.store.labels.event(item.event_id).values == {
        "marks": [{"start": 0, "end": 4, "label": "pref"}]
    }
    page.context.close()
