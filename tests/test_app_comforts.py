"""What annotators and maintainers who used Label Studio expect (issue 22, items 7-11), through the
library and Streamlit's AppTest: every label reopened, the previous item, memory edits that start
from the memory, only kinds with work, flag reasons per kind, the sign-in back-off and the client
behind a proxy, readable dashboard tables, fast annotators, adjudication from what was agreed.

The same in Chromium: tests/test_browser_comforts.py."""

from __future__ import annotations

import pytest
from appkit import ALICE, MAYA, PASSWORD, app, project_fixtures
from conftest import label_event
from prefkit.annotate_app.forms import memory as memory_form
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.my_items import my_items
from prefkit.curation.annotation.signin import client_address
from prefkit.curation.annotation.task_kinds import LabelError
from prefkit.curation.quality import consensus, dashboard
from prefkit.curation.quality.agreement import annotator_stats
from prefkit.schemas.config import ConfigError, ProjectConfig

template, project = project_fixtures(env=True, n=12, overlap=2, alps=True)


def label_n(project, who: str, kind: str, n: int, values) -> list[workflow.ShownItem]:
    done = []
    for _ in range(n):
        item = workflow.current_item(project, who, kind)
        workflow.submit(project, who, item, values(item) if callable(values) else values)
        done.append(item)
    return done


# -- 7: every label of one's own reopened (the My items page: tests/test_my_items.py) -------------------
def test_the_oldest_label_reopens_and_its_edit_is_a_new_event(project):
    items = label_n(project, "alice", "preference_match", 12, {"coverage": "fully"})
    oldest = items[0].event_id  # far beyond the last undo_depth (10) labels
    new = workflow.edit_label(project, "alice", oldest, {"coverage": "not_covered"}, "misread it")
    assert new.supersedes == oldest and project.store.labels.event(oldest).values == {"coverage": "fully"}
    with pytest.raises(workflow.WorkflowError, match="changed since you opened it"):
        workflow.edit_label(project, "alice", oldest, {"coverage": "partially"})  # no longer the live one
    with pytest.raises(workflow.WorkflowError, match="not one of your labels"):
        workflow.edit_label(project, "bob", new.event_id, {"coverage": "partially"})
    assert my_items(project, "alice", statuses=["done"]).total == 12  # still one live label per item


def test_the_previous_item_key_reopens_the_last_label_in_place(project):
    at = app(ALICE, "preference_match")
    first = workflow.current_item(project, "alice", "preference_match")
    assert not [b for b in at.button if b.key == "prev:preference_match"]  # nothing to go back to
    at.button(key=f"{first.event_id}:fully").click().run()
    second = workflow.current_item(project, "alice", "preference_match")
    at.button(key="prev:preference_match").click().run()  # P
    assert any("your label 1 back" in m.value for m in at.markdown)
    p = f"edit:{first.event_id}"
    assert at.button_group(key=f"{p}:q:coverage").value == "fully"  # the form starts from the label
    at.button_group(key=f"{p}:q:coverage").set_value("not_covered").run()
    at.button(key=f"{p}:save").click().run()
    assert project.store.labels.live_event("alice", first.task.task_id).values == {"coverage": "not_covered"}
    assert any(b.key == f"{second.event_id}:fully" for b in at.button)  # back on the item it left
    assert workflow.current_item(project, "alice", "preference_match").event_id == second.event_id
    at.button(key="prev:preference_match").click().run()
    at.button(key="cur:preference_match").click().run()  # Esc: back without a change
    assert any(b.key == f"{second.event_id}:fully" for b in at.button)
    assert len(project.store.labels.events(annotator="alice")) == 2  # one label, one edit


# -- 8: a memory edit starts from the memory -------------------------------------------------------------
def test_a_memory_edit_starts_from_what_the_memory_says():
    turns = [
        {"index": 0, "role": "user", "content": "I moved to Lisbon last month."},
        {"index": 1, "role": "assistant", "content": "Welcome!"},
        {"index": 2, "role": "user", "content": "Please give me distances in kilometres, never miles."},
    ]
    extracted = {
        "type": "indirect",
        "label": "Preferences / Communication_Format",
        "value": "Uses km",
        "confidence": 0.7,
        "evidence_text": "distances in KILOMETRES ... miles",
    }
    start = memory_form.start_fields(extracted, turns)
    assert start == {
        "value": "Uses km",
        "label": "Preferences/Communication_Format",
        "type": "indirect",
        "time_scope": "unknown",
        "evidence_turn": 2,
        "evidence_text": "distances in KILOMETRES ... miles",
        "confidence": 0.7,
    }
    gold = {
        "type": "direct",
        "label": "Plans/Relocation/City",
        "value": "Lives in Lisbon",
        "time_scope": "recent",
        "evidence": {"utterance_index": [0, 2], "text": "moved to Lisbon"},
    }
    start = memory_form.start_fields(gold, turns)
    assert (start["label"], start["time_scope"], start["evidence_turn"]) == (
        "Plans/Relocation/City",
        "recent",
        0,
    )
    assert memory_form.start_fields({"value": "x", "label": "no label!"}, turns)["label"] == "UNMAPPED"


def test_the_edit_form_of_a_candidate_is_prefilled_field_by_field(project):
    at = app(ALICE, "memory_verify")
    item = workflow.current_item(project, "alice", "memory_verify")
    cand = next(c for c in item.task.payload["candidates"] if c.get("valid", True))
    at.button_group(key=f"{item.event_id}:d:{cand['key']}").set_value("edit").run()
    e = f"{item.event_id}:e:{cand['key']}"
    want = memory_form.start_fields(cand["memory"], item.task.payload["turns"])
    assert want["evidence_turn"] is not None  # the quote was found in the dialogue
    assert at.text_input(key=f"{e}:value").value == cand["memory"]["value"]
    assert at.selectbox(key=f"{e}:label").value == cand["memory"]["label"]
    assert at.selectbox(key=f"{e}:turn").value == want["evidence_turn"]
    assert at.text_input(key=f"{e}:evidence").value == cand["memory"]["evidence_text"]
    assert at.number_input(key=f"{e}:confidence").value == cand["memory"]["confidence"]


# -- 9: only kinds with work -----------------------------------------------------------------------------
def test_kinds_with_nothing_for_the_annotator_are_not_offered(project):
    assert set(workflow.kinds_with_work(project, "alice")) == {
        "preference_expressed",
        "preference_match",
        "memory_verify",
    }  # no task_qc tasks
    label_n(project, "alice", "preference_match", 12, {"coverage": "fully"})
    assert "preference_match" not in workflow.kinds_with_work(project, "alice")
    at = app(ALICE)
    kinds = at.sidebar.button_group(key="kind")
    assert kinds.options == ["Preference expressed", "Memory verification"]
    assert any(
        "Nothing waiting for you in: Preference matching, Generated task check" in c.value
        for c in at.sidebar.caption
    )


def test_with_nothing_anywhere_the_page_says_so_before_any_guidelines(project):
    for kind in ("preference_expressed", "preference_match", "memory_verify"):
        while (item := workflow.current_item(project, "alice", kind)) is not None:
            workflow.skip(project, "alice", item, "cannot judge")
    at = app(ALICE)
    assert at.title[0].value == "Nothing to annotate"
    assert not [b for b in at.button if b.label == "Start annotating"]


# -- 10: flag reasons, the back-off, the client behind a proxy ------------------------------------------
def test_flag_reasons_fit_the_kind(project):
    at = app(ALICE, "preference_match")
    item = workflow.current_item(project, "alice", "preference_match")
    at.toggle(key=f"{item.event_id}:trouble").set_value(True).run()
    reasons = at.selectbox(key=f"{item.event_id}:flagr").options
    assert "candidate is not a preference" in reasons and "empty or truncated dialogue" not in reasons
    at = app(ALICE, "memory_verify")
    item = workflow.current_item(project, "alice", "memory_verify")
    at.toggle(key=f"{item.event_id}:trouble").set_value(True).run()
    assert "no candidate memories" in at.selectbox(key=f"{item.event_id}:flagr").options


def test_a_failed_sign_in_that_starts_a_backoff_says_how_long_to_wait(project):
    for i in range(3):
        with pytest.raises(workflow.AuthError) as err:
            workflow.sign_in(project, "bob", "wrong", client="10.0.0.5")
        assert err.value.retry_after_s == (0 if i < 2 else 2.0)
    assert str(err.value).endswith("; wait 2 s before the next try")
    with pytest.raises(workflow.AuthError, match=r"wait \d s before trying again") as err:
        workflow.sign_in(project, "bob", PASSWORD, client="10.0.0.5")
    assert 0 < err.value.retry_after_s <= 2.0


def test_the_sign_in_page_shows_when_the_next_try_is_checked(project):
    at = app()
    for _ in range(3):
        at.text_input(key="signin_user").input("bob")
        at.text_input(key="signin_password").input("wrong")
        at.button[0].click().run()
    assert "wait 2 s before the next try (the next try is checked from" in at.error[0].value


def test_only_a_trusted_proxy_names_the_client():
    proxies = ["127.0.0.1", "10.1.0.0/16"]
    assert client_address("127.0.0.1", "203.0.113.7", proxies) == "203.0.113.7"
    # a browser that writes its own header: the proxy appends the real address, the right-most wins
    assert client_address("127.0.0.1", "198.51.100.1, 203.0.113.7", proxies) == "203.0.113.7"
    assert client_address("127.0.0.1", "203.0.113.7, 10.1.2.3", proxies) == "203.0.113.7"  # two proxies
    assert client_address("192.0.2.9", "203.0.113.7", proxies) == "192.0.2.9"  # not a proxy: ignored
    assert client_address("127.0.0.1", "203.0.113.7", []) == "127.0.0.1"  # none configured
    assert client_address(None, None, proxies) == "unknown address"


def test_trusted_proxies_must_be_addresses():
    assert ProjectConfig.parse({"annotation": {"sign_in": {"trusted_proxies": ["10.0.0.0/8", "::1"]}}})
    with pytest.raises(ConfigError, match=r"annotation.sign_in.trusted_proxies.*'nginx' is not an IP"):
        ProjectConfig.parse({"annotation": {"sign_in": {"trusted_proxies": ["nginx"]}}})


# -- 11: maintainers -------------------------------------------------------------------------------------
def test_a_maintainer_lands_on_the_dashboard(project):
    at = app(MAYA)
    assert at.title[0].value == "Dashboard"


def test_a_fast_annotator_is_an_outlier_even_in_a_team_of_two(project):
    for who, secs in (("alice", 0.7), ("bob", 9.0)):
        for task in project.store.labels.tasks(kind="preference_match")[:6]:
            ev = label_event(
                task, who, {"coverage": "fully"}, event_id=f"ev_{who}_{task.task_id}", time_spent_s=secs
            )
            project.store.labels.append_event(ev)
    stats = {s["annotator"]: s for s in annotator_stats(project.store, fast_s=2.0)}
    assert (
        stats["alice"]["outlier"]
        and "0.7s per item is under the 2s floor" in stats["alice"]["outlier_reason"]
    )
    assert not stats["bob"]["outlier"]
    table = dashboard.quality_table(dashboard.annotator_quality(project.store, fast_s=2.0))
    assert table[0]["annotator"] == "alice" and table[0]["outlier"] == "outlier"  # outliers first
    assert table[0]["task kind"] == "Preference matching" and "None" not in str(table)


def test_the_agreement_table_is_readable(project):
    label_n(project, "alice", "preference_match", 3, {"coverage": "fully"})
    rows = dashboard.agreement(project.store, ProjectConfig().release, n_boot=20)
    table = dashboard.agreement_table(rows)
    assert list(table[0]) == [
        "task kind",
        "field",
        "compared",
        "alpha",
        "95% interval",
        "needed",
        "units",
        "labels",
        "raters",
        "AC1",
        "agreement",
    ]
    assert table[0]["task kind"] == "Preference matching" and table[0]["alpha"] == "–"  # one rater: undefined
    assert "None" not in str(table)


def test_flagged_items_open_the_item_page(project):
    item = workflow.current_item(project, "alice", "memory_verify")
    workflow.flag(project, "alice", item, "wrong language")
    at = app(MAYA)
    flagged = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert (
        flagged.iloc[0]["reason"] == "wrong language"
        and flagged.iloc[0]["task kind"] == "Memory verification"
    )
    at.query_params["task"] = item.task.task_id
    at.switch_page("views/item.py").run()
    assert not at.exception
    answers = at.dataframe[0].value
    assert answers.iloc[0]["action"] == "flag" and answers.iloc[0]["comment"] == "wrong language"


def test_a_tie_is_adjudicated_from_what_the_annotators_agreed_on(project):
    for who, second in (("alice", True), ("bob", False)):
        item = workflow.current_item(project, who, "preference_expressed")
        workflow.submit(
            project,
            who,
            item,
            {"items": [{"item": 0, "expressed": True, "evidence": [2]}, {"item": 1, "expressed": second}]},
        )
    tid = item.task.task_id
    labels = consensus.live_labels(project.store, "preference_expressed")[tid]
    assert consensus.decided_part("preference_expressed", labels) == {
        "items": [{"item": 0, "expressed": True, "evidence": [2]}]
    }
    at = app(MAYA)
    at.switch_page("views/adjudicate.py").run()
    at.button_group(key="adj_kind").set_value("preference_expressed").run()
    p = f"adj:{tid}"
    assert [at.radio(key=f"{p}:exp:{i}").value for i in range(2)] == ["Expressed", None]
    table = at.dataframe[0].value.set_index("unit")
    assert table.loc["1. " + item.task.payload["checklist"][0], "alice"] == "Expressed · turn 2"
    assert table.loc["2. " + item.task.payload["checklist"][1], "bob"] == "Not expressed"
    picker = at.selectbox(key="adj_task")
    assert picker.format_func(tid).startswith(
        f"{item.task.item_ref} · {item.task.payload['preference'][:40]}"
    )


# -- 12: evidence as spans ---------------------------------------------------------------------------------
def marked(span: dict) -> dict:
    """Checklist item 0 expressed in turn 2 with ``span`` as its words, item 1 not expressed."""
    return {
        "items": [
            {"item": 0, "expressed": True, "evidence": [2], "spans": [span]},
            {"item": 1, "expressed": False},
        ]
    }


def test_evidence_spans_are_checked_against_the_turn_and_released_in_the_final_label(project):
    items = {}
    for who in ("alice", "bob"):
        items[who] = item = workflow.current_item(project, who, "preference_expressed")
        text = item.task.payload["turns"][2]["content"]  # a user turn
        start = text.index("small screen")
        span = {"turn": 2, "start": start, "end": start + 12, "text": "small screen"}
        bad = {**span, "text": "SMALL screen"}
        with pytest.raises(LabelError, match=r"items.0.spans.0: turn 2 does not have 'SMALL screen' at char"):
            workflow.submit(project, who, item, marked(bad))
        with pytest.raises(
            LabelError, match=r"items.0.spans: turn\(s\) \[2\] are not among the item's evidence"
        ):
            workflow.submit(
                project,
                who,
                item,
                {"items": [{"item": 0, "expressed": True, "spans": [span]}, {"item": 1, "expressed": False}]},
            )
        workflow.submit(project, who, item, marked(span))
    final = consensus.final_labels(project.store, "preference_expressed")[items["alice"].task.task_id]
    assert final.values["items"][0]["spans"] == [span]  # the agreeing annotators' words, once
    assert "spans" not in final.values["items"][1]


def test_a_memory_span_belongs_to_a_kept_memory_in_a_real_turn(project):
    item = workflow.current_item(project, "alice", "memory_verify")
    turns, keys = item.task.payload["turns"], [c["key"] for c in item.task.payload["candidates"]]
    words = turns[0]["content"][:12]
    span = {"turn": 0, "start": 0, "end": 12, "text": words}
    rest = [{"key": k, "decision": "accept"} for k in keys[1:]]
    with pytest.raises(LabelError, match="evidence spans belong to a memory that is kept"):
        workflow.submit(
            project,
            "alice",
            item,
            {
                "decisions": [
                    {"key": keys[0], "decision": "reject", "reason": "other", "spans": [span]},
                    *rest,
                ]
            },
        )
    with pytest.raises(LabelError, match=r"added.0.spans.0: the dialogue has no turn 99"):
        workflow.submit(
            project,
            "alice",
            item,
            {
                "decisions": [{"key": keys[0], "decision": "accept"}, *rest],
                "added": [
                    {
                        "value": "x",
                        "label": "UNMAPPED",
                        "type": "direct",
                        "time_scope": "unknown",
                        "spans": [{**span, "turn": 99}],
                    }
                ],
            },
        )
    workflow.submit(
        project,
        "alice",
        item,
        {"decisions": [{"key": keys[0], "decision": "accept", "spans": [span]}, *rest]},
    )
    assert project.store.labels.event(item.event_id).values["decisions"][0]["spans"] == [span]


def test_selected_words_go_into_the_label_from_the_form(project):
    at = app(ALICE, "preference_expressed")
    item = workflow.current_item(project, "alice", "preference_expressed")
    p, text = item.event_id, item.task.payload["turns"][2]["content"]
    span = {"turn": 2, "start": 0, "end": 4, "text": text[:4]}
    at.session_state[f"{p}:sp:0"] = [span]  # what the picker's callback stores for the active item
    at.session_state[f"{p}:ev:0"] = [2]
    at.run()
    assert any("evidence: turn 2 · “" + md_escape(text[:4]) + "”" in m.value for m in at.markdown)
    at.button(key=f"{p}:kE").click().run()
    at.button(key=f"{p}:kN").click().run()
    at.button(key=f"{p}:submit").click().run()
    assert project.store.labels.event(item.event_id).values["items"][0]["spans"] == [span]


def test_a_link_to_a_kind_never_started_opens_its_guidelines_first(project):
    """A browser signed in from its cookie on ``?kind=...`` of a kind the annotator has not started:
    the guidelines, not its first item; the address names the kind already."""
    from appkit import APP
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["user"] = ALICE
    at.session_state["_session_resumed"] = True  # as session.resume() leaves it
    at.query_params["kind"] = "preference_match"
    at.run()
    assert [t.value for t in at.title] == ["Preference matching"]  # the guidelines page's title
    assert any(b.label == "Start annotating" for b in at.button)
    assert at.query_params["kind"] == "preference_match"


def test_maintainer_views_keep_their_state_in_the_address(project):
    at = app(MAYA)
    at.switch_page("views/work.py").run()
    at.button_group(key="work_action").set_value("Gold items").run()
    assert at.query_params["change"] == "Gold items"
    shared = app(MAYA)  # a shared link: another browser opens the same view
    shared.query_params["change"] = "Gold items"
    shared.switch_page("views/work.py").run()
    assert shared.button_group(key="work_action").value == "Gold items"
    for who in ("alice", "bob"):  # a disagreement, to open by its address
        item = workflow.current_item(project, who, "preference_match")
        workflow.submit(project, who, item, {"coverage": "fully" if who == "alice" else "not_covered"})
    adj = app(MAYA)
    adj.query_params["kind"] = "preference_match"
    adj.switch_page("views/adjudicate.py").run()
    assert adj.query_params["task"] == item.task.task_id and adj.query_params["kind"] == "preference_match"


def test_the_key_list_names_every_way_to_act_without_a_mouse():
    from prefkit.annotate_app import page_script

    listed = {key: what for _, keys in page_script.sections() for key, what in keys}
    assert "Tab / Shift+Tab" in listed and "Skip" in listed["Space or Enter"]
    said = " ".join(listed.values())
    for act in ("evidence", "Flag as broken", "active checklist item", "task kind"):
        assert act in said, act


def test_the_dashboard_reads_at_a_glance_and_forecasts_only_from_enough_history(project):
    for who in ("alice", "bob"):  # a few minutes of work: no pace to forecast from
        item = workflow.current_item(project, who, "preference_match")
        workflow.submit(project, who, item, {"coverage": "fully"})
    at = app(MAYA)
    assert not at.exception
    tables = [d.value for d in at.dataframe]
    cost = next(t for t in tables if "verified unit" in t.columns)
    assert {"US$ per unit", "annotator minutes"} <= set(cost.columns)
    raw = {"usd_per_unit", "cost_usd", "minutes_per_unit", "median_s", "labels_per_day", "batch_id"}
    assert not raw & {c for t in tables for c in t.columns}, [
        (i, sorted(raw & set(t.columns))) for i, t in enumerate(tables) if raw & set(t.columns)
    ]
    assert not any(v is None or v == "None" for t in tables for c in t.columns for v in t[c].tolist())
    said = " ".join(c.value for c in at.caption)
    assert "No forecast yet: a pace needs at least 20 finished items over 1 day of labelling" in said
    assert not any("labels per day" in t.columns for t in tables)
