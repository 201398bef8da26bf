"""The suggestion in the app (Streamlit AppTest): shown and confirmed with one key on the assisted arm,
never shown on the control arm, and the label event records the arm and the suggestion."""

from __future__ import annotations

from appkit import ALICE, MAYA, add_qc_task, app, project_fixtures, with_share
from prefkit.curation.annotation import workflow
from streamlit.testing.v1 import AppTest

KIND = "preference_match"

template, project = project_fixtures(env=True, n=3, overlap=2)


def marked(at: AppTest) -> list:
    return [b for b in at.button if "smart_toy" in str(b.proto.icon) or "Suggested" in b.label]


def test_an_assisted_item_shows_its_suggestion_and_enter_confirms_it(project):
    with_share(project, 0.0, KIND)
    at = app(ALICE, KIND)
    item = workflow.current_item(project, "alice", KIND)
    sugg = project.store.suggestions.for_task(item.task.task_id)
    confirm = at.button(key=f"{item.event_id}:confirm")
    assert confirm.label.startswith("Suggested: ") and confirm.proto.shortcut.lower() == "enter"
    assert len(marked(at)) == 2  # the confirm button and the suggested value's own button
    confirm.click().run()
    ev = project.store.labels.event(item.event_id)
    assert (ev.values, ev.assist_arm, ev.suggestion_id) == (sugg.values, "assisted", sugg.suggestion_id)
    nxt = workflow.current_item(project, "alice", KIND)
    assert nxt.task.task_id != item.task.task_id and at.button(key=f"{nxt.event_id}:confirm")


def test_a_control_item_never_shows_its_suggestion(project):
    with_share(project, 1.0, KIND)
    at = app(ALICE, KIND)
    for _ in range(3):
        item = workflow.current_item(project, "alice", KIND)
        if item is None:
            break
        assert marked(at) == [] and not any(b.key.endswith(":confirm") for b in at.button)
        assert not any("Suggest" in m.value for m in at.markdown)
        at.button(key=f"{item.event_id}:partially").click().run()
        ev = project.store.labels.event(item.event_id)
        assert ev.assist_arm == "control"
        assert ev.suggestion_id == project.store.suggestions.for_task(item.task.task_id).suggestion_id


def test_an_item_without_a_suggestion_records_no_arm(project):
    with_share(project, 0.0)
    at = app(ALICE, KIND)
    item = workflow.current_item(project, "alice", KIND)
    assert marked(at) == []
    at.button(key=f"{item.event_id}:fully").click().run()
    ev = project.store.labels.event(item.event_id)
    assert (ev.assist_arm, ev.suggestion_id) == (None, None)


def test_the_dashboard_shows_both_arms(project):
    from prefkit.curation.annotation.suggestions import exposure_for

    with_share(project, 0.5, KIND)
    tid = project.store.labels.tasks(kind=KIND)[0].task_id
    project.store.labels.set_gold(tid, {"coverage": "fully"})
    arms = set()
    for who in ("alice", "bob"):
        while (item := workflow.current_item(project, who, KIND)) is not None:
            shown = exposure_for(project, who, item.task)
            arms.add(shown.arm)
            workflow.submit(project, who, item, {"coverage": "partially"}, assist=shown)
    at = app(MAYA)
    at.switch_page("views/dashboard.py").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "anchoring_rate" in d.value.columns)
    rows = table.to_dict("records")
    assert {r["arm"] for r in rows} == {"assisted", "control"} and len(arms) == 2
    assert sum(r["labels"] for r in rows) == len(project.store.labels.events()) >= 4


def qc_item(project, share: float):
    """One task_qc task with a stored suggestion (leaks, answer correct); alice's arm from ``share``."""
    from prefkit.curation.store import Suggestion, SuggestionRun

    with_share(project, share)
    task = add_qc_task(project)
    run = SuggestionRun("sugg-qc", "task_qc", "judge-x", "offline", True, "h", 0, {})
    sugg = Suggestion(
        "sg_qc",
        run.run_id,
        task.task_id,
        "task_qc",
        {"leakage": "leaks", "answer": "correct"},
        {"failed": ["leakage (programmatic)"]},
    )
    project.store.suggestions.add(run, [sugg])
    return app(ALICE, "task_qc"), workflow.current_item(project, "alice", "task_qc")


def test_task_qc_prefills_the_suggestion_with_its_failed_checks_and_submit_confirms(project):
    at, item = qc_item(project, 0.0)
    assert any(
        "Suggestion by judge\\-x" in m.value and "leakage \\(programmatic\\)" in m.value for m in at.markdown
    )
    assert at.segmented_control(key=f"{item.event_id}:q:leakage").value == "leaks"
    at.button(key=f"{item.event_id}:submit").click().run()
    ev = project.store.labels.event(item.event_id)
    assert (ev.values, ev.assist_arm, ev.suggestion_id) == (
        {"leakage": "leaks", "answer": "correct"},
        "assisted",
        "sg_qc",
    )


def test_task_qc_control_item_shows_no_suggestion_and_nothing_prefilled(project):
    at, item = qc_item(project, 1.0)
    assert not any("Suggestion" in m.value for m in at.markdown)
    assert at.segmented_control(key=f"{item.event_id}:q:leakage").value is None
    at.button(key=f"{item.event_id}:submit").click().run()
    assert project.store.labels.event(item.event_id) is None  # nothing chosen: nothing written


def _suggested(project, share, *decisions):
    """Alice's preference_expressed item with the control share at ``share``, a stored suggestion of
    ``decisions`` (``(expressed, evidence)`` per checklist item) for it; the app on it, the item and the
    suggested values."""
    from prefkit.curation.store import Suggestion, SuggestionRun

    with_share(project, share)
    item = workflow.current_item(project, "alice", "preference_expressed")
    values = {"items": [{"item": i, "expressed": e, "evidence": ev} for i, (e, ev) in enumerate(decisions)]}
    run = SuggestionRun("sugg-ex", "preference_expressed", "judge-x", "offline", True, "h", 0, {})
    project.store.suggestions.add(
        run, [Suggestion("sg_ex", run.run_id, item.task.task_id, "preference_expressed", values, {})]
    )
    return app(ALICE, "preference_expressed"), item, values


def test_preference_expressed_seeds_the_suggested_decisions_and_submit_confirms_them(project):
    at, item, values = _suggested(project, 0.0, (True, [2]), (False, []))
    assert any(
        "Suggestion by judge\\-x" in m.value and "expressed 1 (turns 2)" in m.value for m in at.markdown
    )
    at.button(key=f"{item.event_id}:submit").click().run()
    ev = project.store.labels.event(item.event_id)
    assert (ev.values, ev.assist_arm, ev.suggestion_id) == (values, "assisted", "sg_ex")


def test_preference_expressed_control_item_starts_undecided(project):
    at, item, _ = _suggested(project, 1.0, (True, [2]), (True, [0]))
    assert not any("Suggestion" in m.value for m in at.markdown)
    at.button(key=f"{item.event_id}:submit").click().run()
    assert project.store.labels.event(item.event_id) is None  # undecided items: nothing written
