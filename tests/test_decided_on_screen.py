"""What the annotator decided, on every path (Streamlit AppTest; the browser side is
tests/test_browser_decided.py): a suggestion pre-selected in a toggle control stays selected when it
is clicked "to confirm" (the controls are ``required``: only another value changes it) and the submit
records it as the annotator's choice; a click on a showing that is not the one on screen is refused."""

from __future__ import annotations

import pytest
from appkit import ALICE, add_qc_task, app, project_fixtures, with_share
from prefkit.curation.annotation import workflow
from prefkit.curation.store import Suggestion, SuggestionRun

template, project = project_fixtures(env=True, n=3, overlap=2, alps=True)

QC = {"leakage": "leaks", "answer": "correct"}


def qc_item(project):
    """One task_qc task with a stored suggestion (leaks, answer correct), alice on the assisted arm."""
    with_share(project, 0.0)
    task = add_qc_task(project)
    run = SuggestionRun("sugg-qc", "task_qc", "judge-x", "offline", True, "h", 0, {})
    project.store.suggestions.add(
        run, [Suggestion("sg_qc", run.run_id, task.task_id, "task_qc", QC, {"failed": []})]
    )
    return app(ALICE, "task_qc"), workflow.current_item(project, "alice", "task_qc")


def test_clicking_the_suggested_verdict_keeps_it_and_submit_records_it(project):
    at, item = qc_item(project)
    for field, value in QC.items():
        control = at.button_group(key=f"{item.event_id}:q:{field}")
        assert control.proto.required  # the browser keeps a clicked selected value selected
        assert control.value == value
        control.set_value(value).run()  # the click "to confirm": the value it already had
        assert at.button_group(key=f"{item.event_id}:q:{field}").value == value
    at.button(key=f"{item.event_id}:submit").click().run()
    ev = project.store.labels.event(item.event_id)
    assert ev is not None and ev.action == "label"
    assert (ev.values, ev.assist_arm, ev.suggestion_id) == (QC, "assisted", "sg_qc")
    assert not [w for w in at.warning if "Choose a verdict" in w.value]


def test_clicking_another_verdict_changes_it(project):
    at, item = qc_item(project)
    at.button_group(key=f"{item.event_id}:q:leakage").set_value("none").run()
    at.button(key=f"{item.event_id}:submit").click().run()
    ev = project.store.labels.event(item.event_id)
    assert ev.values == {"leakage": "none", "answer": "correct"} and ev.assist_arm == "assisted"


def test_clicking_a_suggested_memory_decision_keeps_it(project):
    with_share(project, 0.0, "memory_verify")
    at = app(ALICE, "memory_verify")
    item = workflow.current_item(project, "alice", "memory_verify")
    sugg = project.store.suggestions.for_task(item.task.task_id)
    suggested = {d["key"]: d["decision"] for d in sugg.values["decisions"]}
    for key, decision in suggested.items():
        control = at.button_group(key=f"{item.event_id}:d:{key}")
        assert control.proto.required and control.value == decision
        control.set_value(decision).run()
    at.button(key=f"{item.event_id}:submit").click().run()
    ev = project.store.labels.event(item.event_id)
    assert ev is not None and ev.assist_arm == "assisted" and ev.suggestion_id == sugg.suggestion_id
    assert {d["key"]: d["decision"] for d in ev.values["decisions"]} == suggested


def test_a_click_on_a_showing_not_on_screen_is_refused(project):
    """The server side of "a key acts only on what was on screen": a submit names the showing it was
    drawn for (its button's key and callback), and one that is not the showing this tab has on screen
    records nothing, even while the store still has it open."""
    at, item = qc_item(project)
    shown = dict(at.session_state["_on_screen"])
    assert shown["task_qc"][0] == item.event_id
    at.session_state["_on_screen"] = {**shown, "task_qc": ("another-showing", "other item")}
    at.button(key=f"{item.event_id}:submit").click().run()
    assert project.store.labels.event(item.event_id) is None  # nothing recorded
    assert workflow.current_item(project, "alice", "task_qc").event_id == item.event_id  # still open
    assert any("no longer on your screen" in w.value for w in at.warning)


@pytest.mark.parametrize("kind", ["task_qc", "memory_verify"])
def test_the_forms_toggle_controls_are_required(project, kind):
    """Every single-choice toggle an annotator decides with: a click on the chosen value never clears it."""
    with_share(project, 1.0)  # the control arm too: nothing pre-selected, still required once chosen
    if kind == "task_qc":
        at, item = qc_item(project)
        with_share(project, 1.0)
        at = app(ALICE, kind)
        groups = [g for g in at.button_group if str(g.key).startswith(item.event_id)]
    else:
        at = app(ALICE, kind)
        item = workflow.current_item(project, "alice", kind)
        groups = [g for g in at.button_group if str(g.key).startswith(f"{item.event_id}:d:")]
    assert groups and all(g.proto.required for g in groups)


def test_every_fragment_counts_its_runs_for_the_key_guard():
    """A click inside a fragment starts a run of the fragment alone; the key guard knows it has
    arrived by the run mark (``ui.run_mark``) and otherwise holds the next click or key for
    ``keys.CAP_MS``: so every fragment draws the mark first."""
    import ast

    from conftest import ROOT

    fragments = []
    for path in sorted((ROOT / "annotate_app").rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(fn, ast.FunctionDef) and any(
                ast.unparse(d) == "st.fragment" for d in fn.decorator_list
            ):
                body = [
                    s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                ]
                fragments.append((f"{path.name}:{fn.name}", ast.unparse(body[0])))
    assert len(fragments) >= 3, fragments  # the item panel, the study entry, the release check
    assert [f for f, first in fragments if first != "ui.run_mark()"] == []
