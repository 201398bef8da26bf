"""Issue 33, item 3: the words selected as evidence are part of the item's draft, a reload brings them
back with the *Select words* switch as set, and spans stay valid (integer offsets, whole grapheme
clusters) in the library, in a draft read back, and in a label. Library and Streamlit's AppTest; the
real browser (double-click, reload): tests/test_browser_spans_and_items.py.
"""

from __future__ import annotations

import pytest
from appkit import ALICE, APP, app, project_fixtures
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.evidence_spans import EvidenceSpan, check_spans, draft_spans, grapheme_bounds
from prefkit.curation.annotation.task_kinds import LabelError
from pydantic import ValidationError
from streamlit.testing.v1 import AppTest

template, project = project_fixtures(env=True, n=3, overlap=2, alps=True)
TURNS = [{"index": 0, "role": "user", "content": "Un cafe\u0301 👍🏽 pour moi"}]


def span_of(item, turn: int, words: str) -> dict:
    text = item.task.payload["turns"][turn]["content"]
    start = text.index(words)
    return {"turn": turn, "start": start, "end": start + len(words), "text": words}


# -- the library ------------------------------------------------------------------------------------------
def test_a_span_that_splits_a_grapheme_cluster_is_refused():
    accent = "Un cafe\u0301"  # "é" as "e" and a combining accent: one character to a reader
    with pytest.raises(LabelError, match=r"items.0.spans.0: characters 3-7 of turn 0 split a character"):
        check_spans([EvidenceSpan(turn=0, start=3, end=7, text="cafe")], TURNS, "items.0")
    thumb = TURNS[0]["content"].index("👍")
    with pytest.raises(LabelError, match="split a character"):  # the thumb without its skin tone
        check_spans([EvidenceSpan(turn=0, start=thumb, end=thumb + 1, text="👍")], TURNS, "items.0")
    check_spans([EvidenceSpan(turn=0, start=3, end=len(accent), text="cafe\u0301")], TURNS, "items.0")
    assert {thumb, thumb + 2} <= grapheme_bounds(TURNS[0]["content"]) and thumb + 1 not in grapheme_bounds(
        TURNS[0]["content"]
    )


@pytest.mark.parametrize("bad", ["3", 3.0, True])
def test_span_offsets_are_integers(bad):
    with pytest.raises(ValidationError):
        EvidenceSpan.model_validate({"turn": 0, "start": bad, "end": 7, "text": "cafe"})


def test_a_draft_keeps_only_spans_that_are_still_the_turns_words():
    good = {"turn": 0, "start": 0, "end": 2, "text": "Un"}
    stale = {"turn": 0, "start": 3, "end": 7, "text": "cafe"}  # splits the accent
    assert draft_spans([good, stale, {**good, "start": "0"}, {**good, "turn": 5}], TURNS) == [good]
    assert draft_spans([2, 4], TURNS) is None and draft_spans("text", TURNS) is None  # not spans: as it was


# -- the draft, through the app ----------------------------------------------------------------------------
def test_a_reload_brings_back_the_selected_words_the_evidence_turn_and_the_switch(project):
    first = app(ALICE, "preference_expressed")
    item = workflow.current_item(project, "alice", "preference_expressed")
    p = item.event_id
    first.toggle(key="spans_on").set_value(True).run()
    assert first.query_params.get("words") in ("on", ["on"])  # the switch is in the address
    span = span_of(item, 2, "small screen")
    first.session_state[f"{p}:sp:0"] = [span]  # what the picker's callback stores for the active item
    first.session_state[f"{p}:ev:0"] = [2]
    first.run()
    kept = project.store.drafts.draft("alice", item.task.task_id)
    assert kept[0] == p and '"small screen"' in kept[1]

    reload = AppTest.from_file(APP, default_timeout=60)  # a reload: a new session, the same address
    reload.session_state["user"] = ALICE
    reload.session_state["kind"] = "preference_expressed"
    reload.session_state["intro:preference_expressed"] = True
    reload.query_params["words"] = "on"
    reload.run()
    assert reload.toggle(key="spans_on").value is True
    assert reload.session_state[f"{p}:sp:0"] == [span] and reload.session_state[f"{p}:ev:0"] == [2]
    reload.button(key=f"{p}:kE").click().run()
    reload.button(key=f"{p}:kN").click().run()
    reload.button(key=f"{p}:submit").click().run()
    assert project.store.labels.event(p).values["items"][0] == {
        "item": 0,
        "expressed": True,
        "evidence": [2],
        "spans": [span],
    }


def test_words_selected_for_a_memory_come_back_and_a_stale_span_does_not(project):
    first = app(ALICE, "memory_verify")
    item = workflow.current_item(project, "alice", "memory_verify")
    p, key = item.event_id, item.task.payload["candidates"][0]["key"]
    words = item.task.payload["turns"][0]["content"].split()[1]
    span = span_of(item, 0, words)
    first.session_state[f"{p}:sp:{key}"] = [span, {**span, "text": words.upper() + "!"}]
    first.run()
    second = app(ALICE, "memory_verify")  # a reload: a new session
    assert second.session_state[f"{p}:sp:{key}"] == [span]  # the span the turn no longer has is dropped
    assert any("your evidence: “" in m.value for m in second.markdown)


def test_the_switch_stays_as_set_after_another_page(project):
    at = app(ALICE, "preference_expressed")
    at.toggle(key="spans_on").set_value(True).run()
    at.switch_page("views/my_items.py").run()
    at.query_params.pop("words", None)  # the browser's address, as a page switch leaves it
    at.switch_page("views/annotate.py").run()
    assert at.toggle(key="spans_on").value is True
