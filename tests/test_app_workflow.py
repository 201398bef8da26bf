"""The annotation workflow as library calls: queues, submits, undo, gold, batches, rewrites."""

from __future__ import annotations

import pytest
from appkit import project_fixtures
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_admin import TaskFileError, create_tasks, import_gold, import_pairs
from prefkit.curation.annotation.task_kinds import LabelError
from prefkit.curation.project import Project
from prefkit.curation.quality import dashboard
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import LabelEvent

EXPRESSED = {"items": [{"item": 0, "expressed": True, "evidence": [2]}, {"item": 1, "expressed": False}]}


template, project = project_fixtures(n=6, overlap=2)


def label_all(project: Project, user: str, kind: str, values) -> list[str]:
    done = []
    while (item := workflow.current_item(project, user, kind)) is not None:
        workflow.submit(project, user, item, values(item) if callable(values) else values)
        done.append(item.task.task_id)
    return done


def test_each_item_goes_to_k_distinct_annotators_and_never_twice(project):
    project.store.accounts.add_user("carol", "annotator", "correct-horse-9")
    seen = {
        u: label_all(project, u, "preference_match", {"coverage": "fully"}) for u in ("alice", "bob", "carol")
    }
    for ids in seen.values():
        assert len(ids) == len(set(ids))
    per_task = {}
    for user, ids in seen.items():
        for tid in ids:
            per_task.setdefault(tid, set()).add(user)
    assert len(per_task) == 6 and all(len(users) == 2 for users in per_task.values())
    assert sum(len(ids) for ids in seen.values()) == 12


def test_reload_and_restart_show_the_same_item_with_the_same_event_id(project, tmp_path):
    first = workflow.current_item(project, "alice", "preference_expressed")
    again = workflow.current_item(project, "alice", "preference_expressed")
    assert (again.task.task_id, again.event_id) == (first.task.task_id, first.event_id)
    project.close()
    reopened = Project(project.root)
    after = workflow.current_item(reopened, "alice", "preference_expressed")
    assert (after.task.task_id, after.event_id, after.shown_at) == (
        first.task.task_id,
        first.event_id,
        first.shown_at,
    )
    reopened.close()


def test_double_submit_records_one_event_and_moves_on(project):
    item = workflow.current_item(project, "alice", "preference_expressed")
    assert workflow.submit(project, "alice", item, EXPRESSED) is True
    assert workflow.submit(project, "alice", item, EXPRESSED) is False
    assert [e.event_id for e in project.store.labels.events(annotator="alice")] == [item.event_id]
    assert workflow.current_item(project, "alice", "preference_expressed").task.task_id != item.task.task_id
    ev = project.store.labels.event(item.event_id)
    assert ev.annotator == "alice" and ev.time_spent_s is not None and ev.time_spent_s >= 0


def test_invalid_label_names_the_field_and_writes_nothing(project):
    item = workflow.current_item(project, "alice", "preference_expressed")
    bad = {"items": [{"item": 0, "expressed": True, "evidence": [1]}, {"item": 1, "expressed": False}]}
    with pytest.raises(LabelError, match=r"items\.0\.evidence"):
        workflow.submit(project, "alice", item, bad)
    assert project.store.labels.events() == []


def test_skip_and_flag_need_a_reason_and_finish_the_item(project):
    item = workflow.current_item(project, "alice", "preference_match")
    with pytest.raises(workflow.WorkflowError):
        workflow.skip(project, "alice", item, "  ")
    workflow.skip(project, "alice", item, "cannot judge")
    nxt = workflow.current_item(project, "alice", "preference_match")
    workflow.flag(project, "alice", nxt, "wrong language")
    assert [(e.action, e.comment) for e in project.store.labels.events()] == [
        ("skip", "cannot judge"),
        ("flag", "wrong language"),
    ]
    assert dashboard.flagged(project.store)[0].task_id == nxt.task.task_id
    assert workflow.progress(project, "alice")["preference_match"].done == 2


def test_edit_supersedes_a_recent_label_once(project):
    item = workflow.current_item(project, "alice", "preference_match")
    workflow.submit(project, "alice", item, {"coverage": "fully"})
    new = workflow.edit_label(project, "alice", item.event_id, {"coverage": "partially"}, "second look")
    again = workflow.edit_label(project, "alice", item.event_id, {"coverage": "partially"}, "second look")
    assert new.event_id == again.event_id and new.supersedes == item.event_id
    live = [e for e in project.store.labels.effective_events("preference_match") if e.annotator == "alice"]
    assert [(e.values, e.comment) for e in live] == [({"coverage": "partially"}, "second look")]
    assert len(project.store.labels.events()) == 2


def test_a_stale_edit_replayed_after_a_back_and_forth_is_refused_and_writes_nothing(project):
    item = workflow.current_item(project, "alice", "preference_match")
    workflow.submit(project, "alice", item, {"coverage": "fully"})  # e0
    e1 = workflow.edit_label(project, "alice", item.event_id, {"coverage": "not_covered"})
    workflow.edit_label(project, "alice", e1.event_id, {"coverage": "fully"})  # e2: back again
    before = len(project.store.labels.events())
    with pytest.raises(workflow.WorkflowError, match="changed since you opened it"):
        workflow.edit_label(
            project, "alice", item.event_id, {"coverage": "not_covered"}
        )  # the tab showing e0
    assert len(project.store.labels.events()) == before == 3
    live = project.store.labels.live_event("alice", item.task.task_id)
    assert live.values == {"coverage": "fully"} and live.supersedes == e1.event_id


def test_edit_reaches_labels_beyond_undo_depth_but_never_someone_elses(project):
    (project.root / "prefkit.toml").write_text('[project]\nname = "t"\n[annotation]\nundo_depth = 2\n')
    reloaded = Project(project.root)
    first = workflow.current_item(reloaded, "alice", "preference_match")
    label_all(reloaded, "alice", "preference_match", {"coverage": "fully"})
    edit = workflow.edit_label(reloaded, "alice", first.event_id, {"coverage": "partially"})
    assert edit.supersedes == first.event_id  # undo_depth sizes My labels' pages, it bounds nothing
    recent = workflow.recent_labels(reloaded, "alice")[0]
    with pytest.raises(workflow.WorkflowError):
        workflow.edit_label(reloaded, "bob", recent.event_id, {"coverage": "partially"})
    reloaded.close()


def test_closed_batches_leave_the_queue(project):
    project.store.labels.set_batch_status("default", "closed")
    assert workflow.current_item(project, "alice", "preference_match") is None
    project.store.labels.set_batch_status("default", "open")
    assert workflow.current_item(project, "alice", "preference_match") is not None


def test_gold_items_are_mixed_in_and_scored(project, tmp_path):
    tasks = project.store.labels.tasks(kind="preference_match")
    gold_file = tmp_path / "gold.jsonl"
    gold_file.write_text(
        f'{{"task_id": "{tasks[0].task_id}", "answer": {{"coverage": "fully"}}}}\n'
        f'{{"kind": "preference_match", "item_ref": "{tasks[1].item_ref}", "answer": {{"coverage": "not_covered"}}}}\n'
    )
    assert import_gold(project, gold_file) == 2
    assert project.store.progress.task_summaries("preference_match")[0].gold == 2
    create_tasks(project, "preference_match", gold_rate=0.5)
    done = label_all(project, "alice", "preference_match", {"coverage": "fully"})
    assert {tasks[0].task_id, tasks[1].task_id} <= set(done)
    assert workflow.gold_accuracy(project.store) == [
        {"annotator": "alice", "task_kind": "preference_match", "n_gold": 2, "accuracy": 0.5}
    ]


def test_gold_import_names_file_line_and_field(project, tmp_path):
    tid = project.store.labels.tasks(kind="preference_match")[0].task_id
    bad = tmp_path / "gold.jsonl"
    bad.write_text(f'{{"task_id": "{tid}", "answer": {{"coverage": "mostly"}}}}\n')
    with pytest.raises(TaskFileError, match=r"gold.jsonl:1: field answer.coverage"):
        import_gold(project, bad)
    assert project.store.labels.gold_answers() == {}


def test_pairs_import_adds_matching_tasks(project, tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text('{"checklist_item": "Is it short?", "candidate": "Prefers brevity."}\n\n')
    assert import_pairs(project, f) == 1
    assert import_pairs(project, f) == 0
    assert create_tasks(project, "preference_match") == 1
    f.write_text('{"checklist_item": "Is it short?"}\n')
    with pytest.raises(TaskFileError, match=r"pairs.jsonl:1: field candidate"):
        import_pairs(project, f)


def test_rewrite_turn_keeps_the_original_and_flags_the_session(project):
    item = workflow.current_item(project, "alice", "preference_expressed")
    with pytest.raises(workflow.WorkflowError, match="not a user turn"):
        workflow.rewrite_turn(project, "alice", item.task, 1, "x", "")
    workflow.rewrite_turn(project, "alice", item.task, 2, "Shorter please, I am on my phone.", "too blunt")
    turns = workflow.display_turns(project, item.task)
    assert turns[2]["content"] == "Shorter please, I am on my phone." and turns[2]["revised"]
    rev = project.store.content.revisions(item.task.payload["dialogue_id"])[0]
    assert (rev.author, rev.original) == ("alice", "That is a lot to read on a small screen.")
    assert dashboard.reverification(project.store)[0].dialogue_id == item.task.payload["dialogue_id"]


def test_sign_in_and_roles(project):
    assert workflow.sign_in(project, "maya", "correct-horse-9").role == "maintainer"
    with pytest.raises(workflow.AuthError):
        workflow.sign_in(project, "alice", "wrong-password")
    project.store.accounts.set_user_active("bob", False)
    with pytest.raises(workflow.AuthError):
        workflow.sign_in(project, "bob", "correct-horse-9")
    with pytest.raises(workflow.AuthError, match="not a maintainer"):
        workflow.require_role(project.store.accounts.user("alice"), "maintainer")


def test_dashboard_rows_count_what_was_done(project):
    label_all(project, "alice", "preference_match", {"coverage": "fully"})
    label_all(project, "bob", "preference_match", {"coverage": "partially"})
    rows = {(r.annotator, r.task_kind): r for r in dashboard.progress(project.store)}
    assert rows[("alice", "preference_match")].labels == 6 and rows[("bob", "preference_match")].done == 6
    dist = {(r["field"], r["value"]): r["n"] for r in dashboard.label_distribution(project.store)}
    assert dist == {("coverage", "fully"): 6, ("coverage", "partially"): 6}
    assert sum(r.n for r in dashboard.throughput(project.store, "hour")) == 12
    assert dashboard.overview(project.store)["complete"] == 6
    assert project.store.progress.task_summaries("preference_match")[0].gold == 0


def test_queue_queries_use_indexes(project):
    workflow.current_item(project, "alice", "preference_match")
    plans = project.store.assignments.queue_query_plans("alice", "preference_match")
    assert "USING INDEX ix_assignments_open" in plans["open_item"]
    assert "ix_tasks_queue" in plans["next_regular"]
    assert "SCAN" not in " ".join(plans.values())


def test_annotator_quality_rows_for_the_dashboard(project):
    label_all(project, "alice", "preference_match", {"coverage": "fully"})
    label_all(project, "bob", "preference_match", {"coverage": "fully"})
    rows = {r["annotator"]: r for r in dashboard.annotator_quality(project.store)}
    assert rows["alice"]["n_labels"] == 6 and rows["alice"]["loo_agreement"] == 1.0
    assert rows["bob"]["outlier"] is False and rows["bob"]["why"] is None


def test_pairs_with_a_known_answer_become_gold_items(project, tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text(
        '{"checklist_item": "Is it short?", "candidate": "Prefers brevity.", "gold": {"coverage": "fully"}}\n'
    )
    import_pairs(project, f)
    create_tasks(project, "preference_match", gold_rate=0.2)
    gold = project.store.labels.gold_answers("preference_match")
    assert list(gold.values()) == [("preference_match", {"coverage": "fully"})]
    assert project.store.get_meta("annotation.gold_rate.preference_match") == "0.2"
    f.write_text(
        '{"checklist_item": "Is it long?", "candidate": "Prefers detail.", "gold": {"coverage": "most"}}\n'
    )
    with pytest.raises(TaskFileError, match=r"pairs.jsonl:1: field gold.coverage"):
        import_pairs(project, f)


def test_the_page_reads_account_item_and_version_in_one_statement(project):
    from sqlalchemy import event

    item = workflow.current_item(project, "alice", "preference_match")
    workflow.submit(project, "alice", item, {"coverage": "fully"})  # marks the next item shown
    statements: list[str] = []

    def seen(_conn, _cursor, statement, *_args):
        if not statement.startswith("BEGIN"):
            statements.append(statement)

    event.listen(project.store.engine, "before_cursor_execute", seen)
    view = workflow.annotator_view(project, "alice", "preference_match")
    event.remove(project.store.engine, "before_cursor_execute", seen)
    assert len(statements) == 1
    assert view.active and view.item.task.task_id != item.task.task_id
    assert view.item == workflow.current_item(project, "alice", "preference_match")
    assert view.version == project.store.progress.queue_version("alice") and view.version[0] > 0
    project.store.accounts.set_user_active("alice", False)
    assert workflow.annotator_view(project, "alice", "preference_match") == workflow.AnnotatorView(
        False, None, view.version
    )
    assert not workflow.annotator_view(project, "nobody", "preference_match").active


def test_a_signed_in_click_of_a_disabled_or_unknown_account_writes_nothing(project):
    item = workflow.current_item(project, "alice", "preference_match")
    assert workflow.submit(project, "alice", item, {"coverage": "fully"}, signed_in=True)  # active: written
    nxt = workflow.current_item(project, "alice", "preference_match")
    project.store.accounts.set_user_active("alice", False)
    for act in (
        lambda: workflow.submit(project, "alice", nxt, {"coverage": "fully"}, signed_in=True),
        lambda: workflow.skip(project, "alice", nxt, "unclear", signed_in=True),
        lambda: workflow.flag(project, "alice", nxt, "broken", signed_in=True),
    ):
        with pytest.raises(workflow.AccountInactive, match="disabled or gone"):
            act()
    assert project.store.labels.event(nxt.event_id) is None  # nothing written, the item still open
    assert workflow.current_item(project, "alice", "preference_match").task.task_id == nxt.task.task_id
    with pytest.raises(workflow.AccountInactive):  # a name with no account at all
        project.store.submits.record_submit(
            LabelEvent(
                event_id="ev_ghost",
                task_id=nxt.task.task_id,
                kind=nxt.task.kind,
                annotator="nobody",
                values={"coverage": "fully"},
                created_at=utcnow(),
            ),
            active_account=True,
        )
    assert project.store.labels.event("ev_ghost") is None
    # without signed_in (imports, scripts), the store records as before
    assert workflow.submit(project, "alice", nxt, {"coverage": "fully"})
