"""A declared kind's span questions in the app (Streamlit AppTest): the label chooser above the word
picker, words picked kept as the label's spans, a draft brought back after a reload, an earlier label's
spans changed under My items, and the adjudication page starting from the decided spans."""

from __future__ import annotations

import pytest
from appkit import APP, PASSWORD, app
from declaredkind import app_project
from prefkit.curation.annotation import workflow
from prefkit.curation.store import Account
from spankind import ANSWERS, DECIDED, NAME, declared_project
from streamlit.testing.v1 import AppTest

ALICE = Account("alice", "annotator", None, True, "2026-01-01T00:00:00Z")


@pytest.fixture
def project(tmp_path, monkeypatch):
    yield from app_project(declared_project(tmp_path / "proj", None, overlap="2"), monkeypatch)


def _picked(turn: int, start: int, end: int, text: str, label: str) -> dict:
    """A span as the picker's callback keeps it in the form (its words too)."""
    return {"turn": turn, "start": start, "end": end, "text": text, "label": label}


def test_words_picked_with_a_label_are_the_labels_spans_and_a_draft_comes_back(project):
    at = app(ALICE, NAME)
    assert not at.exception
    item = workflow.current_item(project, "alice", NAME)
    p = item.event_id
    assert at.button_group(key=f"{p}:q:marks:label").options == ["pref", "bad"]
    assert at.button_group(key=f"{p}:q:marks:label").value == "pref"
    at.button(key=f"{p}:submit").click().run()
    assert "Answer Mark what follows a preference" in " ".join(
        str(e.value) for e in [*at.error, *at.warning, *at.markdown, *at.caption]
    )
    assert project.store.labels.events(kind=NAME) == []
    at.session_state[f"{p}:q:marks"] = [_picked(0, 9, 18, "bike lane", "pref")]
    at.session_state[f"{p}:q:said"] = [_picked(1, 0, 2, "ok", "pref"), _picked(0, 7, 12, "short", "pref")]
    at.run()
    assert project.store.drafts.draft("alice", item.task.task_id)[0] == p
    reload = AppTest.from_file(APP, default_timeout=60)  # a new session: the draft is put back
    reload.session_state["user"] = ALICE
    reload.session_state["kind"] = NAME
    reload.session_state[f"intro:{NAME}"] = True
    reload.run()
    assert reload.session_state[f"{p}:q:marks"] == [_picked(0, 9, 18, "bike lane", "pref")]
    reload.button(key=f"{p}:submit").click().run()
    assert not reload.exception
    assert project.store.labels.event(p).values == {
        "marks": [{"start": 9, "end": 18, "label": "pref"}],
        "said": [
            {"turn": 0, "start": 7, "end": 12, "label": "pref"},
            {"turn": 1, "start": 0, "end": 2, "label": "pref"},
        ],
    }


def test_an_earlier_labels_spans_are_changed_under_my_items(project):
    item = workflow.current_item(project, "alice", NAME)
    workflow.submit(project, "alice", item, ANSWERS["ann1"])
    at = app(project.store.accounts.user("alice"))
    at.switch_page("views/my_items.py").run()
    at.button(key=f"reopen:{item.event_id}").click().run()
    p = f"edit:{item.event_id}"
    assert at.session_state[f"{p}:q:marks"] == [_picked(0, 9, 18, "bike lane", "pref")]
    at.session_state[f"{p}:q:marks"] = [_picked(0, 0, 4, "ride", "bad")]
    at.run()
    at.button(key=f"{p}:save").click().run()
    assert not at.exception
    live = [e for e in project.store.labels.effective_events(NAME) if e.annotator == "alice"]
    assert [(e.values["marks"], e.supersedes) for e in live] == [
        ([{"start": 0, "end": 4, "label": "bad"}], item.event_id)
    ]


def test_the_adjudication_page_starts_from_the_decided_spans_and_shows_each_word(project):
    project.store.accounts.add_user("carl", "annotator", PASSWORD)
    for who, answer in zip(("alice", "bob"), ("ann1", "ann2"), strict=True):
        workflow.submit(project, who, workflow.current_item(project, who, NAME), ANSWERS[answer])
    at = app(project.store.accounts.user("maya"))
    at.switch_page("views/adjudicate.py").run()  # opens on the kind with a disagreement waiting
    assert not at.exception and at.session_state["adj_kind"] == NAME
    tid = at.session_state["adj_task"]
    rows = [m.value for m in at.markdown if "span F1" in m.value]
    # marks: alice bike+lane (pref), bob ride (bad) + lane (pref): 2·1/(2+2); said: short+answers, short: 2·1/3
    assert rows[0].startswith("**alice** · span F1 (over the words marked) with bob 0.50")
    assert "ride the :orange-background[bike lane :small[pref]]" in rows[0]
    assert rows[3].startswith("**bob** · span F1 (over the words marked) with alice 0.67")
    assert "turn 0 · user]] I like :orange-background[short]\xa0answers please" in rows[3] and len(rows) == 4
    assert not at.dataframe  # the word units wait behind the toggle
    at.toggle(key="adj_words").set_value(True).run()
    units = list(at.dataframe[0].value["unit"])
    assert "Mark what follows a preference, and what breaks one: pref · “lane”" in units
    # two answers: lane (both pref) is kept, bike and ride (one each) are not; short kept, answers not
    assert at.session_state[f"adj:{tid}:q:marks"] == [_picked(0, 14, 18, "lane", "pref")]
    at.button(key=f"adj:{tid}:save").click().run()
    assert not at.exception
    (adj,) = project.store.labels.adjudications(tid)
    assert adj.values == {"marks": [{"start": 14, "end": 18, "label": "pref"}], "said": DECIDED["said"]}
