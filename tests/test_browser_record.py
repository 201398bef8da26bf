"""What an editor records is what was on the screen, in the real browser (Debian chromium): a table of
editors (Annotate, the *previous item* key, My items, adjudication) by question types (label,
multi_label, rating, ranking, text, span) drives one test. In each editor every type's answer is
changed, saved once by a click and once by Ctrl+Enter (the text typed last, its box still focused),
and the event read back is compared with what the screen showed at the moment of saving."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from appkit import PASSWORD, open_kind, serve, settle, sign_in, skip_to
from declaredkind import declared_project
from prefkit.curation.annotation import workflow

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAME, TITLE = "memory_qa", "Memory QA"
TOML = f"""name = "{NAME}"
title = "{TITLE}"
[[fields]]
name = "history"
type = "chat"
[[fields]]
name = "answer"
type = "text"
title = "The model's answer"
[[questions]]
name = "verdict"
type = "label"
labels = ["correct", "wrong", "unsure"]
title = "Is the answer right?"
[[questions]]
name = "issues"
type = "multi_label"
labels = ["vague", "off_topic"]
title = "What is wrong with it?"
required = false
[[questions]]
name = "confidence"
type = "rating"
values = [1, 2, 3]
title = "How sure are you?"
[[questions]]
name = "order"
type = "ranking"
values = ["c1", "c2", "c3"]
title = "Order the candidates"
[[questions]]
name = "evidence"
type = "span"
field = "answer"
labels = ["supported", "made_up"]
title = "Mark the answer's words"
required = false
[[questions]]
name = "note"
type = "text"
title = "Anything else?"
required = false
"""
ANSWER = "Paris is the capital and Lyon is not"
ITEMS = [
    {"id": f"q{n}", "history": [{"role": "user", "content": f"question {n}"}], "answer": ANSWER}
    for n in range(4)
]
#: What the earlier label said (the editors open with it), then what each save records.
SEED = {"verdict": "correct", "issues": ["off_topic"], "confidence": 1, "order": ["c1", "c2", "c3"]}
ROUNDS = (
    {
        "verdict": "wrong",
        "issues": ["vague"],
        "confidence": 2,
        "order": ["c3", "c1", "c2"],
        "evidence": [("Paris", "supported")],
        "note": "first text",
    },
    {
        "verdict": "unsure",
        "issues": ["off_topic"],
        "confidence": 3,
        "order": ["c2", "c3", "c1"],
        "evidence": [("Lyon", "made_up")],
        "note": "second text",
    },
)


# -- the question types: how a person sets an answer, and what the screen shows ---------------------------
def _group(page, role: str, title: str):
    return page.get_by_role(role, name=re.compile("^" + re.escape(title)))


def _set_choice(title: str) -> Callable[[Any, Any], None]:
    def put(page, value) -> None:
        radio = _group(page, "radiogroup", title).get_by_role("radio", name=str(value), exact=True)
        if radio.get_attribute("aria-checked") != "true":
            radio.click()
            settle(page)

    return put


def _shown_choice(title: str, cast=str) -> Callable[[Any], Any]:
    def shown(page) -> Any:
        checked = _group(page, "radiogroup", title).locator("[role=radio][aria-checked=true]")
        return cast(checked.inner_text().strip()) if checked.count() else None

    return shown


def _toggles(page):
    return _group(page, "toolbar", "What is wrong with it?").get_by_role("button")


def _set_toggles(page, value) -> None:
    for n in range(_toggles(page).count()):
        button = _toggles(page).nth(n)
        if (button.get_attribute("aria-pressed") == "true") != (button.inner_text().strip() in value):
            button.click()
            settle(page)


def _shown_toggles(page) -> list[str]:
    return [b.inner_text().strip() for b in _toggles(page).all() if b.get_attribute("aria-pressed") == "true"]


def _order_box(page):
    return page.get_by_role("combobox", name=re.compile("^Order the candidates"))


def _set_order(page, value) -> None:
    from playwright.sync_api import expect

    box, tags = _order_box(page), _order_tags(page)
    while placed := _shown_order(page):  # the earlier order goes, one value at a time
        page.get_by_role("button", name=f"Remove {placed[0]}", exact=True).click()
        expect(tags).to_have_count(len(placed) - 1)
        settle(page)
    for n, v in enumerate(value, 1):
        option = page.get_by_role("option", name=v, exact=True)
        if not option.is_visible():  # the menu opens on a click (a click on an open one closes it)
            box.click()
        option.click()
        expect(tags).to_have_count(n)
        settle(page)
    assert page.get_by_role("option", name=re.compile("Select all")).count() == 0  # only chosen values
    page.keyboard.press("Escape")  # closes the menu, and nothing else
    settle(page)


def _order_tags(page):
    return page.locator("[data-testid=stMultiSelect]").filter(has=_order_box(page)).locator("[data-tag]")


def _shown_order(page) -> list[str]:
    return [t.inner_text().strip() for t in _order_tags(page).locator("span[title]").all()]


def _picker(page):
    return page.locator(".prefkit-spans").first


def _set_spans(page, value) -> None:
    while _picker(page).locator("mark").count():
        before = _picker(page).locator("mark").count()
        _picker(page).locator("mark").first.click()
        page.wait_for_function(
            "n => document.querySelector('.prefkit-spans').querySelectorAll('mark').length < n", arg=before
        )
        settle(page)
    for word, label in value:
        _set_choice("Mark the answer's words")(page, label)
        _picker(page).scroll_into_view_if_needed()
        box = page.evaluate(
            """w => { const el = document.querySelector('.prefkit-spans .pk-text');
            const node = [...el.childNodes].find(n => n.nodeType === 3 && n.textContent.includes(w));
            const r = document.createRange(); const at = node.textContent.indexOf(w);
            r.setStart(node, at + 1); r.setEnd(node, at + 2); const b = r.getBoundingClientRect();
            return {x: b.x + b.width / 2, y: b.y + b.height / 2}; }""",
            word,
        )
        page.mouse.dblclick(box["x"], box["y"])
        _picker(page).locator("mark", has_text=word).wait_for()
        settle(page)


def _shown_spans(page) -> list[tuple[str, str]]:
    return [(m.inner_text(), m.get_attribute("data-label")) for m in _picker(page).locator("mark").all()]


def _note_box(page):
    return page.get_by_label(re.compile(r"^Anything else\?")).and_(page.locator("textarea"))


def _set_note(page, value) -> None:
    _note_box(page).fill(value)  # left focused: the save comes straight after the typing


#: ``(question, set on screen, read from the screen, the recorded value as the screen shows it)``,
#: the text last: it is typed and saved without leaving its box.
TYPES = (
    ("verdict", _set_choice("Is the answer right?"), _shown_choice("Is the answer right?"), None),
    ("issues", _set_toggles, _shown_toggles, None),
    ("confidence", _set_choice("How sure are you?"), _shown_choice("How sure are you?", int), None),
    ("order", _set_order, _shown_order, None),
    (
        "evidence",
        _set_spans,
        _shown_spans,
        lambda v: [(ANSWER[s["start"] : s["end"]], s["label"]) for s in v],
    ),
    ("note", _set_note, lambda page: _note_box(page).input_value(), None),
)


# -- the editors: how each is opened, saved, and read back ----------------------------------------------------
@dataclass
class Editor:
    name: str
    user: str
    #: ``(project, page, url, state, first)`` -> reads the record back; ``state`` is kept between rounds
    open: Callable[..., Callable[[], dict | None]]
    save: str  # the button's name


def _at_annotate(page, url: str) -> None:
    page.goto(url)
    settle(page)
    open_kind(page, TITLE)


def _annotate(project, page, url, state, first):
    item = workflow.current_item(project, "ann", NAME)
    if first:
        _at_annotate(page, url)
    return lambda: getattr(project.store.labels.event(item.event_id), "values", None)


def _labelled(project, state) -> str:
    """The task of the label the editor changes: one given just now (with the library)."""
    if "task" not in state:
        item = workflow.current_item(project, "ann", NAME)
        workflow.submit(project, "ann", item, SEED)
        state["task"] = item.task.task_id
    return state["task"]


def _previous(project, page, url, state, first):
    task_id = _labelled(project, state)
    if first:
        _at_annotate(page, url)
    page.keyboard.press("p")  # from the item on screen
    page.get_by_text("your label 1 back").wait_for()
    settle(page)
    return lambda: project.store.labels.live_event("ann", task_id).values


def _my_items(project, page, url, state, first):
    task_id = _labelled(project, state)
    if first:  # the editor stays open after a saved edit, on the new label
        page.goto(url + "/my_items")
        settle(page)
        ref = project.store.labels.task(task_id).item_ref
        row = page.locator("[class*=st-key-mine-]").filter(has_text=f"· {ref} ·")
        row.get_by_role("button", name="Reopen").click()
        page.get_by_role("button", name="Save edit").wait_for()
        settle(page)
    return lambda: project.store.labels.live_event("ann", task_id).values


def _adjudicate(project, page, url, state, first):
    task_id = project.store.labels.task_ids_by_ref(NAME, ["q3"])["q3"]
    if first:
        for who, verdict in (("ann2", "correct"), ("ann3", "wrong")):
            skip_to(project, who, NAME, "q3")
            workflow.submit(
                project, who, workflow.current_item(project, who, NAME), {**SEED, "verdict": verdict}
            )
    page.goto(f"{url}/adjudicate?kind={NAME}&task={task_id}")  # decided after the first round: still shown
    page.get_by_role("heading", name="Final decision").wait_for()
    settle(page)
    done = project.store.labels.adjudications
    return lambda: done(task_id)[-1].values if len(done(task_id)) > (not first) else None


EDITORS = (
    Editor("annotate", "ann", _annotate, "Submit"),
    Editor("previous_item", "ann", _previous, "Save edit"),
    Editor("my_items", "ann", _my_items, "Save edit"),
    Editor("adjudication", "maya", _adjudicate, "Record decision"),
)


def _recorded(read: Callable[[], dict | None], want: dict, timeout: float = 15) -> dict | None:
    """The record once it says ``want`` (or what it says when the time is up): a save's run may still be
    writing when the page looks idle."""
    deadline = time.monotonic() + timeout
    while (values := read()) is None or _as_shown(values) != want:
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return values


def _as_shown(values: dict) -> dict:
    return {name: (as_shown or (lambda v: v))(values.get(name)) for name, _p, _s, as_shown in TYPES}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("record") / "proj"
    project = declared_project(root, "record", overlap="3", toml=TOML, name=NAME, items=ITEMS)
    for who in ("ann", "ann2", "ann3"):
        project.store.accounts.add_user(who, "annotator", PASSWORD)
    project.store.accounts.add_user("maya", "maintainer", PASSWORD)
    yield from serve(project)


@pytest.fixture(scope="module")
def pages(served, browser):
    """One signed-in page per person, shared by the editors they use."""
    _, url, _ = served
    held: dict[str, Any] = {}
    yield lambda user: held.get(user) or held.setdefault(user, sign_in(browser, url, user))
    for page in held.values():
        page.context.close()


@pytest.mark.parametrize("editor", EDITORS, ids=[e.name for e in EDITORS])
def test_each_type_is_recorded_as_the_screen_showed_it_by_click_and_by_key(served, pages, editor):
    project, url, _ = served
    page, state = pages(editor.user), {}
    for by_key, want in zip((False, True), ROUNDS, strict=True):
        recorded = editor.open(project, page, url, state, first=not by_key)
        for name, put, _shown, _as in TYPES:
            put(page, want[name])
        screen = {name: shown(page) for name, _put, shown, _as in TYPES}
        if by_key:
            page.keyboard.press("Control+Enter")
        else:
            page.get_by_role("button", name=re.compile("^" + re.escape(editor.save))).click()
        settle(page)
        values = _recorded(recorded, want)
        assert values is not None, f"{editor.name}: nothing recorded"
        assert _as_shown(values) == screen == want
