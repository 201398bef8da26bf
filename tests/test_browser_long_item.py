"""A long declared item (tests/memoryqa.py: 4 sessions of 5 turns, a question, an answer, three
candidates) in the real browser at both window sizes: at 1400x900 the questions and Submit stay in the
window however far the history is scrolled, the history is drawn once (sessions as headers, never
turns) and the item is labelled there; at 800x600 the short fields and the questions come first and
the history after them."""

from __future__ import annotations

import json
import re

import pytest
from appkit import PASSWORD, item_header, next_item, open_kind, select_word, serve, settle, sign_in
from memoryqa import NAME, TOML, item
from prefkit.curation.annotation import work
from prefkit.curation.project import Project

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TITLE = "Does the answer remember the user?"
QUESTIONS = (
    "Mark the words of the history that answer the question (optional)",
    "Is the model's answer right? (keys 1, 2, 3)",
    "Rank the candidates — click them best first",
    "Anything else (optional)",
)
#: Where each part of the item is on the page, and whether it is inside the window.
BOXES = """() => { const top = (el) => el ? el.getBoundingClientRect() : null;
  const label = (t) => [...document.querySelectorAll('[data-testid=stMain] label, [data-testid=stMain] p')]
    .find(e => e.innerText.trim() === t);
  const inside = (r) => !!r && r.top >= 0 && r.bottom <= innerHeight && r.height > 0;
  const q = QUESTIONS.map(t => top(label(t)));
  const submit = top([...document.querySelectorAll('button')].find(b => b.innerText.includes('Submit')));
  return {questions: q.map(inside), submit: inside(submit), qy: q.map(r => r && r.top),
          field: top([...document.querySelectorAll('strong')].find(e => e.innerText === 'The question')).top, history: top(document.querySelector('.pk-session')).top,
          sessions: [...document.querySelectorAll('.pk-session')].map(e => e.textContent),
          turns: [...document.querySelectorAll('.pk-head')].map(e => e.textContent),
          rtl: getComputedStyle(document.querySelector('.pk-text')).direction,
          dir: document.querySelector('.pk-text').dir}; }""".replace("QUESTIONS", json.dumps(QUESTIONS))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("long") / "proj"
    Project.init(root, name="long").close()
    (root / "kinds").mkdir(exist_ok=True)
    (root / "kinds" / f"{NAME}.toml").write_text(TOML, encoding="utf-8")
    project = Project(root)
    items = root / "items.jsonl"
    items.write_text("".join(json.dumps(item(n, sessions=4, turns=5)) + "\n" for n in range(1, 4)))
    work.create(project, "qa", NAME, items=items)
    for who in ("ann1", "ann2"):
        project.store.accounts.add_user(who, "annotator", PASSWORD)
    yield from serve(project)


def _scroll_to_end(page) -> None:
    page.evaluate(
        "() => { document.querySelectorAll('[data-testid=stMain], [data-testid=stAppScrollToBottomContainer]')"
        ".forEach(e => e.scrollTo(0, e.scrollHeight)); window.scrollTo(0, document.body.scrollHeight); }"
    )
    page.wait_for_timeout(200)


def test_at_1400x900_the_questions_and_submit_stay_in_view_beside_the_history(served, browser):
    project, url, _ = served
    page = sign_in(browser, url, "ann1", size=(1400, 900))
    open_kind(page, TITLE)
    page.locator(".prefkit-spans .pk-session").first.wait_for()
    page.get_by_label(QUESTIONS[3]).wait_for()
    seen = page.evaluate(BOXES)
    assert seen["sessions"] == [f"Session {n} · 2024-01-{3 + 7 * (n - 1):02d}" for n in (1, 2, 3, 4)]
    assert seen["turns"] == [f"turn {n} · {'user' if n % 5 % 2 == 0 else 'assistant'}" for n in range(20)]
    assert (seen["dir"], seen["rtl"]) == ("auto", "ltr")  # a turn's direction is its own text's
    assert page.locator(".prefkit-spans").count() == 1  # the history once, words marked in it
    for where in ("top", "end"):
        if where == "end":
            _scroll_to_end(page)
            seen = page.evaluate(BOXES)
            assert seen["history"] < 0  # the history did scroll
        assert all(seen["questions"]) and seen["submit"], (where, seen)
    page.locator('.pk-text[data-turn="1"]').scroll_into_view_if_needed()
    select_word(page, 1, "Porto")
    page.locator(".prefkit-spans mark").wait_for()
    settle(page)
    page.keyboard.press("1")  # correct
    settle(page)
    order = page.get_by_role("combobox", name=QUESTIONS[2])
    for title in ("Candidate B", "Candidate A", "Candidate C"):
        order.click()
        page.get_by_role("option", name=title, exact=True).click()
        settle(page)
    page.keyboard.press("Escape")
    assert "1 · Candidate B — In Porto: they moved there last spring." in page.inner_text(
        "[data-testid=stMain]"
    )
    next_item(page, TITLE, lambda: page.keyboard.press("Control+Enter"))
    (ev,) = [e for e in project.store.labels.events(kind=NAME) if e.annotator == "ann1"]
    assert ev.values == {
        "evidence": [{"turn": 1, "start": 11, "end": 16, "label": "evidence"}],  # "Porto"
        "verdict": "correct",
        "best": ["candidate_b", "candidate_a", "candidate_c"],
    }
    page.context.close()


def test_at_800x600_the_short_fields_and_questions_come_before_the_history(served, browser):
    _, url, _ = served
    page = sign_in(browser, url, "ann2", size=(800, 600), state="attached")
    page.get_by_role("button", name=re.compile("^Start annotating")).click()  # its one kind (sidebar folded)
    item_header(page, TITLE).wait_for()
    page.locator(".prefkit-spans .pk-session").first.wait_for()
    page.get_by_label(QUESTIONS[3]).wait_for()
    seen = page.evaluate(BOXES)
    assert seen["field"] < seen["qy"][0] < seen["qy"][1] < seen["qy"][2] < seen["qy"][3] < seen["history"]
    assert seen["submit"]  # the action bar stays at the window's bottom
    _scroll_to_end(page)
    assert page.evaluate(BOXES)["submit"]
    page.context.close()
