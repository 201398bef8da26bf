"""A declared kind with every question type, labelled by three annotators in the real browser (keys
and mouse): the form drawn from the declaration, its draft kept over a reload, and the labels giving
the decisions and agreement worked out by hand in tests/test_declared_kinds.py."""

from __future__ import annotations

import re

import pytest
from appkit import PASSWORD, draft_kept, item_now, next_item, open_kind, serve, settle, sign_in
from declaredkind import ANSWERS, DECIDED, ITEMS, NAME, declared_project, write_items
from prefkit.curation.annotation import work
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.quality.consensus import final_labels

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TITLE = "Which response follows the user better?"
BETTER = "Which response follows the user's preferences better? (keys 1, 2, 3)"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("declared") / "proj"
    project = declared_project(root, "declared")
    for who in ANSWERS:
        project.store.accounts.add_user(who, "annotator", PASSWORD)
    yield from serve(project)


def _answer(page, values: dict, keys: bool) -> None:
    """Fill the form: the first label question by its digit key or a click, the rest with the mouse."""
    if keys:
        page.keyboard.press(str(["A", "B", "tie"].index(values["better"]) + 1))
    else:
        page.get_by_role("radiogroup", name=BETTER).get_by_role("radio", name=values["better"]).click()
    settle(page)
    page.get_by_role("radiogroup", name="How clear is the difference?").get_by_role(
        "radio", name=str(values["strength"])
    ).click()
    settle(page)
    for tag in values.get("tags", []):
        page.get_by_role("toolbar", name="What applies? (optional)").get_by_role("button", name=tag).click()
        settle(page)
    order = page.get_by_role("combobox", name="Order the models — click them best first")
    for value in values["order"]:
        order.click()
        page.get_by_role("option", name=value, exact=True).click()
        settle(page)
    page.keyboard.press("Escape")
    if "why" in values:
        page.get_by_label("Why (optional)").fill(values["why"])
        page.get_by_role("heading", name=re.compile(re.escape(TITLE))).first.click()  # leaves the box
        settle(page)


def _submit(page, keys: bool):
    if keys:
        return lambda: page.keyboard.press("Control+Enter")
    return lambda: page.get_by_role("button", name=re.compile("^Submit")).click()


def _item(page) -> str:
    return re.search(r"item (i\d)", item_now(page, TITLE))[1]


def test_three_annotators_label_every_question_type_with_keys_and_mouse(served, browser):
    project, url, _ = served
    for who, keys in (("ann1", True), ("ann2", False), ("ann3", True)):
        page = sign_in(browser, url, who)
        open_kind(page, TITLE)
        body = page.inner_text("[data-testid=stMain]")
        assert "<b>question" in body and "response **" in body  # fields are text, never markup
        assert page.evaluate("window.__pwned") is None
        for _ in range(2):
            item = _item(page)
            _answer(page, ANSWERS[who][item], keys)
            if who == "ann1" and item == "i1":  # a reload keeps the half-done form
                task = project.store.labels.task_ids_by_ref(NAME, [item])[item]
                draft_kept(project, who, task, lambda s: s.get("strength") == 1 and s.get("why") == "clear")
                page.reload()
                settle(page)
                group = page.get_by_role("radiogroup", name="How clear is the difference?")
                assert group.get_by_role("radio", name="1").get_attribute("aria-checked") == "true"
            next_item(page, TITLE, _submit(page, keys))
        assert "Nothing left" in page.inner_text("body")
        page.context.close()
    labels = {
        (e.annotator, project.store.labels.task(e.task_id).item_ref): e.values
        for e in project.store.labels.effective_events(NAME)
    }
    assert labels == {(who, item): values for who, mine in ANSWERS.items() for item, values in mine.items()}
    finals = final_labels(project.store, NAME)
    assert {project.store.labels.task(t).item_ref: f.values for t, f in finals.items()} == DECIDED
    rows = {r["field"]: r["alpha"] for r in agreement_rows(project.store, kind=NAME, n_boot=50)}
    assert rows["better"] == pytest.approx(0.375) and rows["strength"] == pytest.approx(158 / 178)


def test_a_required_question_left_open_is_said_and_nothing_is_saved(served, browser):
    project, url, _ = served
    project.store.accounts.add_user("ann4", "annotator", PASSWORD)
    more = write_items(project.root / "more.jsonl", [{**ITEMS[0], "id": "i3"}])
    assert work.create(project, "t", NAME, overlap="1", items=more) == 1
    page = sign_in(browser, url, "ann4")
    open_kind(page, TITLE)
    page.keyboard.press("2")
    settle(page)
    page.keyboard.press("Control+Enter")
    settle(page)
    assert "Answer How clear is the difference?; Order the models first." in page.inner_text("body")
    assert not [e for e in project.store.labels.events(kind=NAME) if e.annotator == "ann4"]
