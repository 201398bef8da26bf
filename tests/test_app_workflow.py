"""The annotation workflow as library calls: queues, submits, undo, gold, batches, rewrites."""

from __future__ import annotations

import pytest
from appkit import project_fixtures

from curation.annotation import workflow
from curation.annotation.task_admin import TaskFileError, create_tasks, import_gold, import_pairs
from curation.annotation.task_kinds import LabelError
from curation.project import Project
from curation.quality import dashboard

EXPRESSED = {"items": [{"item": 0, "expressed": True, "evidence": [2]}, {"item": 1, "expressed": False}]}


template, proj = project_fixtures(n=6, overlap=2)


def label_all(p, user: str, kind: str, values) -> list[str]:
    done = []
    while (item := workflow.current_item(p, user, kind)) is not None:
        workflow.submit(p, user, item, values(item) if callable(values) else values)
        done.append(item.task.task_id)
    return done


def test_each_item_goes_to_k_distinct_annotators_and_never_twice(proj):
    proj.store.accounts.add_user("carol", "annotator", "correct-horse-9")
    seen = {
        u: label_all(proj, u, "preference_match", {"coverage": "fully"}) for u in ("alice", "bob", "carol")
    }
    for ids in seen.values():
        assert len(ids) == len(set(ids))
    per_task = {}
    for user, ids in seen.items():
        for tid in ids:
            per_task.setdefault(tid, set()).add(user)
    assert len(per_task) == 6 and all(len(users) == 2 for users in per_task.values())
    assert sum(len(ids) for ids in seen.values()) == 12


def test_reload_and_restart_show_the_same_item_with_the_same_event_id(proj, tmp_path):
    first = workflow.current_item(proj, "alice", "preference_expressed")
    again = workflow.current_item(proj, "alice", "preference_expressed")
    assert (again.task.task_id, again.event_id) == (first.task.task_id, first.event_id)
    proj.close()
    reopened = Project(proj.root)
    after = workflow.current_item(reopened, "alice", "preference_expressed")
    assert (after.task.task_id, after.event_id, after.shown_at) == (
        first.task.task_id,
        first.event_id,
        first.shown_at,
    )
    reopened.close()


def test_double_submit_records_one_event_and_moves_on(proj):
    item = workflow.current_item(proj, "alice", "preference_expressed")
    assert workflow.submit(proj, "alice", item, EXPRESSED) is True
    assert workflow.submit(proj, "alice", item, EXPRESSED) is False
    assert [e.event_id for e in proj.store.labels.events(annotator="alice")] == [item.event_id]
    assert workflow.current_item(proj, "alice", "preference_expressed").task.task_id != item.task.task_id
    ev = proj.store.labels.event(item.event_id)
    assert ev.annotator == "alice" and ev.time_spent_s is not None and ev.time_spent_s >= 0


def test_invalid_label_names_the_field_and_writes_nothing(proj):
    item = workflow.current_item(proj, "alice", "preference_expressed")
    bad = {"items": [{"item": 0, "expressed": True, "evidence": [1]}, {"item": 1, "expressed": False}]}
    with pytest.raises(LabelError, match=r"items\.0\.evidence"):
        workflow.submit(proj, "alice", item, bad)
    assert proj.store.labels.events() == []


def test_skip_and_flag_need_a_reason_and_finish_the_item(proj):
    item = workflow.current_item(proj, "alice", "preference_match")
    with pytest.raises(workflow.WorkflowError):
        workflow.skip(proj, "alice", item, "  ")
    workflow.skip(proj, "alice", item, "cannot judge")
    nxt = workflow.current_item(proj, "alice", "preference_match")
    workflow.flag(proj, "alice", nxt, "wrong language")
    assert [(e.action, e.comment) for e in proj.store.labels.events()] == [
        ("skip", "cannot judge"),
        ("flag", "wrong language"),
    ]
    assert dashboard.flagged(proj.store)[0].task_id == nxt.task.task_id
    assert workflow.progress(proj, "alice")["preference_match"]["done"] == 2


def test_edit_supersedes_a_recent_label_once(proj):
    item = workflow.current_item(proj, "alice", "preference_match")
    workflow.submit(proj, "alice", item, {"coverage": "fully"})
    new = workflow.edit_label(proj, "alice", item.event_id, {"coverage": "partially"}, "second look")
    again = workflow.edit_label(proj, "alice", item.event_id, {"coverage": "partially"}, "second look")
    assert new.event_id == again.event_id and new.supersedes == item.event_id
    live = [e for e in proj.store.labels.effective_events("preference_match") if e.annotator == "alice"]
    assert [(e.values, e.comment) for e in live] == [({"coverage": "partially"}, "second look")]
    assert len(proj.store.labels.events()) == 2


def test_edit_refuses_labels_beyond_undo_depth_or_of_someone_else(proj):
    (proj.root / "prefkit.toml").write_text('[project]\nname = "t"\n[annotation]\nundo_depth = 2\n')
    p = Project(proj.root)
    first = workflow.current_item(p, "alice", "preference_match")
    label_all(p, "alice", "preference_match", {"coverage": "fully"})
    with pytest.raises(workflow.WorkflowError, match="last 2 labels"):
        workflow.edit_label(p, "alice", first.event_id, {"coverage": "partially"})
    recent = workflow.recent_labels(p, "alice")[0]
    with pytest.raises(workflow.WorkflowError):
        workflow.edit_label(p, "bob", recent.event_id, {"coverage": "partially"})
    p.close()


def test_closed_batches_leave_the_queue(proj):
    proj.store.labels.set_batch_status("default", "closed")
    assert workflow.current_item(proj, "alice", "preference_match") is None
    proj.store.labels.set_batch_status("default", "open")
    assert workflow.current_item(proj, "alice", "preference_match") is not None


def test_gold_items_are_mixed_in_and_scored(proj, tmp_path):
    tasks = proj.store.labels.tasks(kind="preference_match")
    gold_file = tmp_path / "gold.jsonl"
    gold_file.write_text(
        f'{{"task_id": "{tasks[0].task_id}", "answer": {{"coverage": "fully"}}}}\n'
        f'{{"kind": "preference_match", "item_ref": "{tasks[1].item_ref}", "answer": {{"coverage": "not_covered"}}}}\n'
    )
    assert import_gold(proj, gold_file) == 2
    assert proj.store.queues.task_summaries("preference_match")[0].gold == 2
    create_tasks(proj, "preference_match", gold_rate=0.5)
    done = label_all(proj, "alice", "preference_match", {"coverage": "fully"})
    assert {tasks[0].task_id, tasks[1].task_id} <= set(done)
    assert workflow.gold_accuracy(proj.store) == [
        {"annotator": "alice", "task_kind": "preference_match", "n_gold": 2, "accuracy": 0.5}
    ]


def test_gold_import_names_file_line_and_field(proj, tmp_path):
    tid = proj.store.labels.tasks(kind="preference_match")[0].task_id
    bad = tmp_path / "gold.jsonl"
    bad.write_text(f'{{"task_id": "{tid}", "answer": {{"coverage": "mostly"}}}}\n')
    with pytest.raises(TaskFileError, match=r"gold.jsonl:1: field answer.coverage"):
        import_gold(proj, bad)
    assert proj.store.labels.gold_answers() == {}


def test_pairs_import_adds_matching_tasks(proj, tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text('{"checklist_item": "Is it short?", "candidate": "Prefers brevity."}\n\n')
    assert import_pairs(proj, f) == 1
    assert import_pairs(proj, f) == 0
    assert create_tasks(proj, "preference_match") == 1
    f.write_text('{"checklist_item": "Is it short?"}\n')
    with pytest.raises(TaskFileError, match=r"pairs.jsonl:1: field candidate"):
        import_pairs(proj, f)


def test_rewrite_turn_keeps_the_original_and_flags_the_session(proj):
    item = workflow.current_item(proj, "alice", "preference_expressed")
    with pytest.raises(workflow.WorkflowError, match="not a user turn"):
        workflow.rewrite_turn(proj, "alice", item.task, 1, "x", "")
    workflow.rewrite_turn(proj, "alice", item.task, 2, "Shorter please, I am on my phone.", "too blunt")
    turns = workflow.display_turns(proj, item.task)
    assert turns[2]["content"] == "Shorter please, I am on my phone." and turns[2]["revised"]
    rev = proj.store.content.revisions(item.task.payload["dialogue_id"])[0]
    assert (rev.author, rev.original) == ("alice", "That is a lot to read on a small screen.")
    assert dashboard.reverification(proj.store)[0].dialogue_id == item.task.payload["dialogue_id"]


def test_sign_in_and_roles(proj):
    assert workflow.sign_in(proj, "maya", "correct-horse-9").role == "maintainer"
    with pytest.raises(workflow.AuthError):
        workflow.sign_in(proj, "alice", "wrong-password")
    proj.store.accounts.set_user_active("bob", False)
    with pytest.raises(workflow.AuthError):
        workflow.sign_in(proj, "bob", "correct-horse-9")
    with pytest.raises(workflow.AuthError, match="not a maintainer"):
        workflow.require_role(proj.store.accounts.user("alice"), "maintainer")


def test_dashboard_rows_count_what_was_done(proj):
    label_all(proj, "alice", "preference_match", {"coverage": "fully"})
    label_all(proj, "bob", "preference_match", {"coverage": "partially"})
    rows = {(r.annotator, r.task_kind): r for r in dashboard.progress(proj.store)}
    assert rows[("alice", "preference_match")].labels == 6 and rows[("bob", "preference_match")].done == 6
    dist = {(r["field"], r["value"]): r["n"] for r in dashboard.label_distribution(proj.store)}
    assert dist == {("coverage", "fully"): 6, ("coverage", "partially"): 6}
    assert sum(r.n for r in dashboard.throughput(proj.store, "hour")) == 12
    assert dashboard.overview(proj.store)["complete"] == 6
    assert proj.store.queues.task_summaries("preference_match")[0].gold == 0


def test_queue_queries_use_indexes(proj):
    workflow.current_item(proj, "alice", "preference_match")
    plans = proj.store.queues.queue_query_plans("alice", "preference_match")
    assert "USING INDEX ix_assignments_open" in plans["open_item"]
    assert "ix_tasks_queue" in plans["next_regular"]
    assert "SCAN" not in " ".join(plans.values())


def test_annotator_quality_rows_for_the_dashboard(proj):
    label_all(proj, "alice", "preference_match", {"coverage": "fully"})
    label_all(proj, "bob", "preference_match", {"coverage": "fully"})
    rows = {r["annotator"]: r for r in dashboard.annotator_quality(proj.store)}
    assert rows["alice"]["n_labels"] == 6 and rows["alice"]["loo_agreement"] == 1.0
    assert rows["bob"]["outlier"] is False and rows["bob"]["why"] is None


def test_pairs_with_a_known_answer_become_gold_items(proj, tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text(
        '{"checklist_item": "Is it short?", "candidate": "Prefers brevity.", "gold": {"coverage": "fully"}}\n'
    )
    import_pairs(proj, f)
    create_tasks(proj, "preference_match", gold_rate=0.2)
    gold = proj.store.labels.gold_answers("preference_match")
    assert list(gold.values()) == [("preference_match", {"coverage": "fully"})]
    assert proj.store.get_meta("annotation.gold_rate.preference_match") == "0.2"
    f.write_text(
        '{"checklist_item": "Is it long?", "candidate": "Prefers detail.", "gold": {"coverage": "most"}}\n'
    )
    with pytest.raises(TaskFileError, match=r"pairs.jsonl:1: field gold.coverage"):
        import_pairs(proj, f)


def test_the_page_reads_account_item_and_version_in_one_statement(proj):
    from sqlalchemy import event

    item = workflow.current_item(proj, "alice", "preference_match")
    workflow.submit(proj, "alice", item, {"coverage": "fully"})  # marks the next item shown
    statements: list[str] = []

    def seen(_conn, _cursor, statement, *_args):
        if not statement.startswith("BEGIN"):
            statements.append(statement)

    event.listen(proj.store.engine, "before_cursor_execute", seen)
    view = workflow.annotator_view(proj, "alice", "preference_match")
    event.remove(proj.store.engine, "before_cursor_execute", seen)
    assert len(statements) == 1
    assert view.active and view.item.task.task_id != item.task.task_id
    assert view.item == workflow.current_item(proj, "alice", "preference_match")
    assert view.version == proj.store.queues.queue_version("alice") and view.version[0] > 0
    proj.store.accounts.set_user_active("alice", False)
    assert workflow.annotator_view(proj, "alice", "preference_match") == workflow.AnnotatorView(
        False, None, view.version
    )
    assert not workflow.annotator_view(proj, "nobody", "preference_match").active
