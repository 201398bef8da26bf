"""Every page of the annotation app through Streamlit's AppTest: sign-in, the three task kinds,
skip, edit, the maintainer dashboard (gold scoring) and adjudication."""

from __future__ import annotations

import pytest
from appkit import ALICE, HOSTILE, MAYA, PASSWORD, app, project_fixtures
from conftest import ROOT
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.assignment import gold_rate_key
from streamlit.testing.v1 import AppTest

template, project = project_fixtures(env=True, n=3, overlap=2, alps=True, hostile=True)


def test_nothing_but_sign_in_before_signing_in(project):
    at = app()
    assert [t.label for t in at.text_input] == ["User name", "Password"]
    assert not [b for b in at.button if b.label in ("Submit", "Start annotating")]
    at.text_input(key="signin_user").input("alice")
    at.text_input(key="signin_password").input("not-the-password")
    at.button[0].click().run()
    assert "wrong password" in at.error[0].value and "user" not in at.session_state
    at.text_input(key="signin_password").input(PASSWORD)
    at.button[0].click().run()
    assert at.session_state["user"].username == "alice"
    assert any(b.label == "Start annotating" for b in at.button)


def test_guidelines_come_before_the_first_item(project):
    at = app(ALICE)
    assert any("guidelines" in m.value.lower() for m in at.markdown)
    at.button(key=f"start:{at.session_state['kind']}").click().run()
    assert any(b.label == "Submit" or b.label == "Fully covered" for b in at.button)


def test_guidelines_beside_the_item_on_demand(project):
    at = app(ALICE, "preference_match")
    text = project.guidelines_dir.joinpath("preference_match.md").read_text(encoding="utf-8")
    first_line = next(line for line in text.splitlines() if line.strip() and not line.startswith("#"))
    assert not [m for m in at.sidebar.markdown if first_line[:40] in m.value]  # hidden: nothing drawn
    at.sidebar.toggle(key="guidelines_beside").set_value(True).run()
    assert [m for m in at.sidebar.markdown if first_line[:40] in m.value]
    first = workflow.current_item(project, "alice", "preference_match")
    at.button(key=f"{first.event_id}:fully").click().run()  # they stay open from item to item
    assert at.sidebar.toggle(key="guidelines_beside").value
    assert [m for m in at.sidebar.markdown if first_line[:40] in m.value]


def test_the_item_top_script_is_drawn_by_a_sessions_first_two_runs_only(project):
    def scripts(at: AppTest) -> int:
        return sum("prefkit: each item starts at its top" in h.proto.body for h in at.get("html"))

    at = app()  # the sign-in page: run 1
    assert scripts(at) == 1
    at.session_state["user"] = ALICE
    at.run()  # the page after signing in (the kind's guidelines): run 2
    assert scripts(at) == 1
    at.button(key=f"start:{at.session_state['kind']}").click().run()  # the first item: none
    assert scripts(at) == 0 and any(b.label in ("Fully covered", "Submit") for b in at.button)
    kind = at.session_state["kind"]
    if kind == "preference_match":
        first = workflow.current_item(project, "alice", kind)
        at.button(key=f"{first.event_id}:fully").click().run()
        assert scripts(at) == 0


def test_annotators_cannot_reach_maintainer_pages(project):
    at = app(ALICE, "preference_match")
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("views/dashboard.py")
    direct = AppTest.from_file(str(ROOT / "annotate_app" / "views" / "dashboard.py"), default_timeout=60)
    direct.session_state["user"] = ALICE
    direct.run()
    assert "not a maintainer" in direct.error[0].value and not direct.metric


def test_match_key_labels_as_the_signed_in_user_and_moves_on(project):
    at = app(ALICE, "preference_match")
    first = workflow.current_item(project, "alice", "preference_match")
    at.button(key=f"{first.event_id}:partially").click().run()
    ev = project.store.labels.event(first.event_id)
    assert (ev.annotator, ev.values, ev.action) == ("alice", {"coverage": "partially"}, "label")
    nxt = workflow.current_item(project, "alice", "preference_match")
    assert nxt.task.task_id != first.task.task_id
    assert any(b.key == f"{nxt.event_id}:fully" for b in at.button)
    # all 3 are alice's now (not a stale pool count); done, today and the header count the same kind
    assert any("Preference matching · 2 left for you" in m.value for m in at.markdown)  # one count
    assert not any("assigned done" in m.value or "item 2 of" in m.value for m in at.markdown)


def test_expressed_items_with_evidence_clicked_on_turns(project):
    at = app(ALICE, "preference_expressed")
    item = workflow.current_item(project, "alice", "preference_expressed")
    p = item.event_id
    at.button(key=f"{p}:pick:2:0").click().run()  # evidence for item 1 ...
    assert at.radio(key=f"{p}:exp:0").value is None  # ... never decides it behind the annotator's back
    assert any("Undecided" in m.value and "evidence: turn 2" in m.value for m in at.markdown)
    at.button(key=f"{p}:kE").click().run()  # E decides the active item and moves to the next undecided
    assert at.radio(key=f"{p}:active").value == 1
    at.button(key=f"{p}:kN").click().run()
    at.button(key=f"{p}:kN").click().run()  # choosing the chosen option again never turns it off
    assert at.radio(key=f"{p}:exp:1").value == "Not expressed"
    at.button(key=f"{p}:submit").click().run()
    ev = project.store.labels.event(item.event_id)
    assert ev.values == {
        "items": [
            {"item": 0, "expressed": True, "evidence": [2]},
            {"item": 1, "expressed": False, "evidence": []},
        ]
    }


def test_incomplete_submit_warns_and_writes_nothing(project):
    at = app(ALICE, "preference_expressed")
    item = workflow.current_item(project, "alice", "preference_expressed")
    at.radio(key=f"{item.event_id}:exp:0").set_value("Expressed").run()
    at.button(key=f"{item.event_id}:submit").click().run()
    warning = at.warning[0].value  # names the undecided item by its number and its text
    assert "item 2" in warning and md_escape("Does the reply avoid long paragraphs?") in warning
    assert "item 1" not in warning
    assert project.store.labels.events() == []


def test_a_skip_or_a_flag_without_a_chosen_reason_is_refused(project):
    at = app(ALICE, "preference_expressed")
    p = workflow.current_item(project, "alice", "preference_expressed").event_id
    at.toggle(key=f"{p}:trouble").set_value(True).run()
    assert at.selectbox(key=f"{p}:skipr").value is None and at.selectbox(key=f"{p}:flagr").value is None
    at.button(key=f"{p}:flag").click().run()
    at.button(key=f"{p}:skip").click().run()
    assert project.store.labels.events() == []
    assert any("choose a skip reason first" in w.value for w in at.warning), [w.value for w in at.warning]
    at.selectbox(key=f"{p}:flagr").set_value(at.selectbox(key=f"{p}:flagr").options[0]).run()
    at.button(key=f"{p}:flag").click().run()
    [ev] = project.store.labels.events()
    assert ev.action == "flag"


def memory_on_screen(project):
    """alice on her memory verification item: the app, the item, its event id, its candidates' keys."""
    at = app(ALICE, "memory_verify")
    item = workflow.current_item(project, "alice", "memory_verify")
    return at, item, item.event_id, [c["key"] for c in item.task.payload["candidates"]]


def test_memory_accept_all_then_reject_one_with_a_reason(project):
    at, item, p, keys = memory_on_screen(project)
    at.button(key=f"{p}:acc").click().run()
    at.button_group(key=f"{p}:d:{keys[0]}").set_value("reject").run()
    at.selectbox(key=f"{p}:why:{keys[0]}").set_value("too_generic").run()
    at.button(key=f"{p}:addbtn").click().run()
    at.text_input(key=f"{p}:add0:value").input("The user owns a bike.").run()
    at.button(key=f"{p}:submit").click().run()  # no type chosen: none is made up, nothing recorded
    assert project.store.labels.event(item.event_id) is None
    assert any("Choose the type of missing memory 1" in w.value.replace("\\", "") for w in at.warning)
    at.radio(key=f"{p}:add0:type").set_value("direct").run()
    at.button(key=f"{p}:submit").click().run()
    values = project.store.labels.event(item.event_id).values
    decisions = {d["key"]: d for d in values["decisions"]}
    assert decisions[keys[0]] == {"key": keys[0], "decision": "reject", "reason": "too_generic"}
    assert all(decisions[k]["decision"] == "accept" for k in keys[1:])
    assert values["added"][0]["value"] == "The user owns a bike."


def test_memory_edit_sets_every_field_of_the_gold_memory(project):
    at, item, p, keys = memory_on_screen(project)
    at.button(key=f"{p}:acc").click().run()
    at.button_group(key=f"{p}:d:{keys[0]}").set_value("edit").run()
    e = f"{p}:e:{keys[0]}"
    at.text_input(key=f"{e}:value").input("Trains for a marathon in April").run()
    at.selectbox(key=f"{e}:label").set_value("Thoughts/Goals/Short_Term").run()
    at.radio(key=f"{e}:type").set_value("indirect").run()
    at.selectbox(key=f"{e}:scope").set_value("short_term").run()
    at.selectbox(key=f"{e}:turn").set_value(0).run()
    at.text_input(key=f"{e}:evidence").input("training for my first marathon").run()
    at.number_input(key=f"{e}:confidence").set_value(0.85).run()
    at.button(key=f"{p}:submit").click().run()
    edited = next(
        d for d in project.store.labels.event(item.event_id).values["decisions"] if d["key"] == keys[0]
    )["edited"]
    assert edited == {
        "value": "Trains for a marathon in April",
        "label": "Thoughts/Goals/Short_Term",
        "type": "indirect",
        "time_scope": "short_term",
        "evidence_turn": 0,
        "evidence_text": "training for my first marathon",
        "confidence": 0.85,
    }


def report_trouble(at, item, action: str, reason: str) -> None:
    """Open the skip-or-report switch of the item on screen, choose ``reason`` and press ``action``."""
    at.toggle(key=f"{item.event_id}:trouble").set_value(True).run()
    at.selectbox(key=f"{item.event_id}:{action}r").set_value(reason).run()
    at.button(key=f"{item.event_id}:{action}").click().run()


def test_skip_with_a_reason(project):
    at = app(ALICE, "preference_match")
    item = workflow.current_item(project, "alice", "preference_match")
    report_trouble(at, item, "skip", "cannot judge")
    ev = project.store.labels.event(item.event_id)
    assert (ev.action, ev.comment, ev.annotator) == ("skip", "cannot judge", "alice")


def test_a_match_comment_is_typed_under_the_switch_and_kept_with_the_label(project):
    at = app(ALICE, "preference_match")
    item = workflow.current_item(project, "alice", "preference_match")
    assert not [t for t in at.text_input if t.key == f"{item.event_id}:comment"]  # not drawn per item
    at.toggle(key=f"{item.event_id}:trouble").set_value(True).run()
    at.text_input(key=f"{item.event_id}:comment").input("candidate is vague").run()
    at.button(key=f"{item.event_id}:not_covered").click().run()
    ev = project.store.labels.event(item.event_id)
    assert (ev.values, ev.comment) == ({"coverage": "not_covered"}, "candidate is vague")


def test_edit_a_recent_label(project):
    item = workflow.current_item(project, "alice", "preference_match")
    workflow.submit(project, "alice", item, {"coverage": "fully"})
    at = app(ALICE)
    at.switch_page("views/my_items.py").run()
    at.button(key=f"reopen:{item.event_id}").click().run()
    p = f"edit:{item.event_id}"
    at.button_group(key=f"{p}:q:coverage").set_value("not_covered").run()
    at.button(key=f"{p}:save").click().run()
    live = [e for e in project.store.labels.effective_events("preference_match") if e.annotator == "alice"]
    assert [(e.values["coverage"], e.supersedes) for e in live] == [("not_covered", item.event_id)]


def test_dashboard_shows_progress_and_gold_accuracy(project):
    tid = project.store.labels.tasks(kind="preference_match")[0].task_id
    project.store.labels.set_gold(tid, {"coverage": "fully"})
    project.store.set_meta(gold_rate_key("preference_match"), "0.3")
    while (item := workflow.current_item(project, "alice", "preference_match")) is not None:
        workflow.submit(project, "alice", item, {"coverage": "partially"})
    at = app(MAYA)
    at.switch_page("views/dashboard.py").run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Labels"] == "3"
    tables = [d.value for d in at.dataframe]
    assert any("agrees with the others" in t.columns for t in tables)
    gold_rows = [t for t in tables if "accuracy" in t.columns]
    assert gold_rows and gold_rows[0].to_dict("records")[0]["accuracy"] == "0%"
    # the cost table is prefkit cost's: alice's minutes over the two pairs her labels decided
    per_unit = next(t for t in tables if "minutes per unit" in t.columns).set_index("verified unit")
    spent = sum(e.time_spent_s for e in project.store.labels.events(kind="preference_match")) / 60
    assert per_unit.loc["matching pairs", "verified"] == 2
    assert float(per_unit.loc["matching pairs", "annotator minutes"]) == pytest.approx(spent, abs=1e-3)


def test_adjudication_records_the_maintainers_decision(project):
    for who, coverage in (("alice", "fully"), ("bob", "not_covered")):
        item = workflow.current_item(project, who, "preference_match")
        workflow.submit(project, who, item, {"coverage": coverage})
    at = app(MAYA)
    at.switch_page("views/adjudicate.py").run()
    tid = at.session_state["adj_task"]
    table = at.dataframe[0].value
    assert list(table.columns) == ["unit", "alice", "bob", "agree"]
    at.button_group(key=f"adj:{tid}:q:coverage").set_value("partially").run()
    at.text_area(key=f"adj:{tid}:note").input("candidate misses the deadline condition").run()
    at.button(key=f"adj:{tid}:save").click().run()
    adj = project.store.labels.adjudications(tid)[0]
    assert (adj.maintainer, adj.values, adj.note) == (
        "maya",
        {"coverage": "partially"},
        "candidate misses the deadline condition",
    )


def test_dialogue_html_is_shown_as_text(project):
    at = app(ALICE, "preference_expressed")
    for _ in range(3):
        item = workflow.current_item(project, "alice", "preference_expressed")
        if item.task.payload["dialogue_id"] == "sess_0000":
            break
        workflow.skip(project, "alice", item, "cannot judge")
    at.run()
    shown = [m.value for m in at.markdown if "script" in m.value]
    assert len(shown) == 1 and shown[0].endswith("\n\n" + md_escape(HOSTILE))  # heading, then the text
    assert "<script>" not in shown[0] and "\\<script\\>" in shown[0] and "\\*\\*bold\\*\\*" in shown[0]


def test_rewrite_a_weak_user_turn_from_its_bubble(project):
    at = app(ALICE, "preference_expressed")
    item = workflow.current_item(project, "alice", "preference_expressed")
    p = item.event_id
    at.text_area(key=f"{p}:rw:2").input("Could you keep it short? I'm on my phone.").run()
    at.text_input(key=f"{p}:rwr:2").input("states the preference verbatim").run()
    at.button(key=f"{p}:rws:2").click().run()
    rev = project.store.content.revisions(item.task.payload["dialogue_id"])[0]
    assert (rev.author, rev.revised, rev.reason) == (
        "alice",
        "Could you keep it short? I'm on my phone.",
        "states the preference verbatim",
    )
    assert project.store.content.dialogue(item.task.payload["dialogue_id"]).needs_reverification
    assert any("turn 2 · user · rewritten" in m.value for m in at.markdown)


@pytest.mark.parametrize("kind", ["preference_expressed", "memory_verify"])
def test_adjudication_of_a_tie_starts_empty_and_names_units_by_their_text(project, kind):
    for who, flip in (("alice", False), ("bob", True)):
        item = workflow.current_item(project, who, kind)
        if kind == "preference_expressed":
            values = {"items": [{"item": 0, "expressed": not flip}, {"item": 1, "expressed": flip}]}
        else:
            decision = "reject" if flip else "accept"
            values = {
                "decisions": [
                    {"key": c["key"], "decision": decision, **({"reason": "too_generic"} if flip else {})}
                    for c in item.task.payload["candidates"]
                ]
            }
        workflow.submit(project, who, item, values)
    at = app(MAYA)
    at.switch_page("views/adjudicate.py").run()
    at.button_group(key="adj_kind").set_value(kind).run()
    assert not at.exception
    tid = at.session_state["adj_task"]
    task, p = project.store.labels.task(tid), f"adj:{tid}"
    units = list(at.dataframe[0].value["unit"])
    if kind == "preference_expressed":
        assert sorted(units) == ["1. " + task.payload["checklist"][0], "2. " + task.payload["checklist"][1]]
        assert [at.radio(key=f"{p}:exp:{i}").value for i in range(2)] == [None, None]  # a 1-1 tie
        for i in range(2):
            at.radio(key=f"{p}:exp:{i}").set_value("Not expressed").run()
    else:
        first = task.payload["candidates"][0]
        assert f"“{first['memory']['value']}” ({first['model']}) · decision" in units
        assert not any(c["key"] in u for u in units for c in task.payload["candidates"])
        assert all(at.button_group(key=f"{p}:d:{c['key']}").value is None for c in task.payload["candidates"])
        for c in task.payload["candidates"]:
            at.button_group(key=f"{p}:d:{c['key']}").set_value("accept").run()
    at.text_area(key=f"{p}:note").input("checked against the dialogue").run()
    at.button(key=f"{p}:save").click().run()
    assert not at.exception
    assert project.store.labels.adjudications(tid)[0].note == "checked against the dialogue"


def test_a_disabled_account_is_signed_out_on_its_next_click(project):
    at = app(ALICE, "preference_match")
    assert any(b.label == "Fully covered" for b in at.button)
    project.store.accounts.set_user_active("alice", False)
    at.run()
    assert "user" not in at.session_state
    assert [t.label for t in at.text_input] == ["User name", "Password"]


def test_a_click_after_the_account_was_disabled_records_nothing(project):
    at = app(ALICE, "preference_match")
    item = workflow.current_item(project, "alice", "preference_match")
    project.store.accounts.set_user_active("alice", False)
    at.button(key=f"{item.event_id}:fully").click().run()  # the item is still on alice's screen
    assert project.store.labels.event(item.event_id) is None
    assert "user" not in at.session_state
    assert [t.label for t in at.text_input] == ["User name", "Password"]


def test_flag_a_broken_item_for_the_maintainers(project):
    at = app(ALICE, "memory_verify")
    item = workflow.current_item(project, "alice", "memory_verify")
    report_trouble(at, item, "flag", "wrong language")
    ev = project.store.labels.event(item.event_id)
    assert (ev.action, ev.comment) == ("flag", "wrong language")
    assert workflow.current_item(project, "alice", "memory_verify").task.task_id != item.task.task_id


def test_dashboard_names_the_items_past_their_overlap(project, tmp_path):
    import json

    from prefkit.curation.annotation.labels_io import import_labels

    task = project.store.labels.tasks(kind="preference_match")[0]
    rows = []
    for who in ("ann1", "ann2", "ann3"):  # a label file gives the item of overlap 2 three labels
        project.store.accounts.add_user(who, "annotator", PASSWORD)
        rows.append(
            {
                "annotator": who,
                "task_kind": "preference_match",
                "item_id": task.item_ref,
                "timestamp": "2026-01-01T00:00:00+00:00",
                "values": {"coverage": "fully"},
            }
        )
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert import_labels(project.store, tmp_path / "labels.jsonl").written == 3
    at = app(MAYA)
    at.switch_page("views/dashboard.py").run()
    assert not at.exception
    (warning,) = [w.value for w in at.warning if "beyond overlap" in w.value]
    assert warning.startswith("1 item(s) beyond overlap")
    assert md_escape(f"{task.item_ref} (preference_match): 3 labels, overlap 2") in warning
