"""Repeats in a real browser (Debian chromium, Playwright): an annotator meets an item they labelled
on an earlier day, unmarked; a reload keeps it; their key press is stored as a repeat, never a label."""

from __future__ import annotations

import json

import pytest
from appkit import item_now, label_match, serve, served_project, settle, signed_in_on
from prefkit.curation.annotation.labels_io import import_labels

pytestmark = pytest.mark.browser
KIND, TITLE = "preference_match", "Preference matching"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    project = served_project(tmp_path_factory, "repeats", n=6, overlap=2)
    toml = project.root / "prefkit.toml"
    toml.write_text(toml.read_text().replace("repeat_share = 0.05", "repeat_share = 0.5"))
    refs = sorted(t.item_ref for t in project.store.labels.tasks(kind=KIND))[-2:]
    rows = [
        {
            "annotator": "alice",
            "task_kind": KIND,
            "item_id": ref,
            "values": {"coverage": "not_covered"},
            "timestamp": "2026-11-01T10:00:00Z",
        }
        for ref in refs
    ]
    path = project.root.parent / "earlier.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_labels(project.store, path)  # alice labelled two items on an earlier day: one is due now
    yield from serve(project)


def test_an_annotator_meets_a_repeat_unmarked_and_its_answer_is_stored_as_one(served, browser):
    project, page = signed_in_on(served, browser, "alice", KIND)
    shown = item_now(page, TITLE)
    [repeated] = [t for t in project.store.labels.tasks(kind=KIND) if f"item {t.item_ref}" in shown]
    assert project.store.labels.events(annotator="alice", task_id=repeated.task_id)  # she labelled it before
    assert "repeat" not in page.inner_text("body").lower()  # nothing tells it apart
    page.reload()
    page.get_by_text("signed in as alice").wait_for()
    settle(page)
    assert item_now(page, TITLE) == shown  # a reload shows the same item
    label_match(page)  # key 1: fully covered
    [again] = project.store.repeats.events()
    assert (again.annotator, again.task_id, again.action, again.values) == (
        "alice",
        repeated.task_id,
        "repeat",
        {"coverage": "fully"},
    )
    firsts = project.store.labels.events(annotator="alice")
    assert [e.values for e in firsts] == [{"coverage": "not_covered"}] * 2  # no label, no edit, no vote
    assert f"item {repeated.item_ref}" not in item_now(page, TITLE)  # the next item is another one
    page.context.close()
