"""Repeats: a share of an annotator's labelled items comes back to them, unmarked; the second answer is
a repeat (never a vote, an edit or a live label) and measures their self-consistency without gold."""

from __future__ import annotations

import io
import json

import pytest
from appkit import project_fixtures, seed_pairs
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import studies, workflow
from prefkit.curation.annotation.labels_io import LabelsFileError, export_labels, import_labels
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.curation.quality import dashboard
from prefkit.curation.quality.agreement import agreement_rows, annotator_stats, within_rows
from prefkit.curation.quality.consensus import final_labels
from prefkit.curation.quality.study_report import study_report
from prefkit.curation.store import repeat_draw as draw
from prefkit.schemas.curation import LabelEvent
from test_crowd_report import scripted
from test_crowd_studies import make_study, params

KIND = "preference_match"
FULLY, PARTIALLY = {"coverage": "fully"}, {"coverage": "partially"}

template, project = project_fixtures(n=24, overlap=1)


def with_config(project: Project, text: str) -> Project:
    """The project opened again under ``[annotation]`` / ``[release]`` settings ``text``."""
    (project.root / "prefkit.toml").write_text(f'[project]\nname = "t"\n{text}\n')
    project.close()
    return Project(project.root)


def work(
    project: Project, user: str, answer=lambda item: FULLY, limit: int = 100
) -> list[workflow.ShownItem]:
    """Everything the queue shows ``user``, answered by ``answer(item)``, in order."""
    shown = []
    while len(shown) < limit and (item := workflow.current_item(project, user, KIND)) is not None:
        workflow.submit(project, user, item, answer(item))
        shown.append(item)
    return shown


def lowest_draw(user: str, task_ids: list[str], project: Project) -> str:
    refs = {t.task_id: t.item_ref for t in project.store.labels.tasks(kind=KIND)}
    return min(task_ids, key=lambda t: (draw(user, KIND, refs[t]), t))


def import_rows(project: Project, rows: list[dict], tmp_path, name: str = "labels.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return import_labels(project.store, path)


def row(project: Project, user: str, task_id: str, values: dict, when: str, **extra) -> dict:
    return {
        "annotator": user,
        "task_kind": KIND,
        "item_id": task_id,
        "values": values,
        "timestamp": when,
    } | extra


def test_a_share_of_the_labelled_items_comes_back_once_at_the_end_unmarked_and_is_kept_apart(project):
    shown = work(project, "alice", answer=lambda item: PARTIALLY if item.repeat else FULLY)
    firsts, again = [i for i in shown if not i.repeat], [i for i in shown if i.repeat]
    assert len(firsts) == 24 and len(again) == 1  # 5% of 24 labelled items: one, once they are all done
    repeat = again[0]
    assert (
        shown[-1] is repeat and shown[-2].task.task_id != repeat.task.task_id
    )  # never right after its first
    # the lowest stable draw of the items left (the last one excluded), the same task as first shown
    assert repeat.task.task_id == lowest_draw("alice", [i.task.task_id for i in firsts[:-1]], project)
    assert repeat.task == next(i.task for i in firsts if i.task.task_id == repeat.task.task_id)
    assert repeat.event_id not in {i.event_id for i in firsts}
    # stored as a repeat, never as a label event: no vote, no edit, no live label, no count
    events = project.store.labels.events(annotator="alice")
    assert (
        len(events) == 24
        and {e.action for e in events} == {"label"}
        and all(not e.supersedes for e in events)
    )
    assert all(e.values == FULLY for e in project.store.labels.effective_events(KIND))
    assert {t: f.values for t, f in final_labels(project.store, KIND).items()} == {
        i.task.task_id: FULLY for i in firsts
    }
    [stored] = project.store.repeats.events()
    assert (stored.task_id, stored.annotator, stored.action, stored.values, stored.event_id) == (
        repeat.task.task_id,
        "alice",
        "repeat",
        PARTIALLY,
        repeat.event_id,
    )
    counts = workflow.progress(project, "alice")[KIND]
    assert (counts.assigned, counts.done) == (24, 24)
    assert [t.complete for t in project.store.progress.task_summaries(KIND)] == [24]
    assert len(project.store.labels.submit_times()) == 24  # what annotator time and cost count
    assert workflow.current_item(project, "alice", KIND) is None  # the quota is used: done


def test_no_repeats_before_enough_labels_or_with_share_zero(project):
    off = with_config(project, "[annotation]\nrepeat_share = 0")
    assert len(work(off, "alice")) == 24 and off.store.repeats.events() == []
    off.close()


def test_items_of_an_earlier_day_come_back_in_the_queue_never_two_in_a_row(project, tmp_path):
    project = with_config(project, "[annotation]\nrepeat_share = 0.5")
    refs = {t.task_id: t.item_ref for t in project.store.labels.tasks(kind=KIND)}
    earlier = sorted(refs)[-6:]  # labelled on an earlier day (imported; the queue starts from the lowest ids)
    import_rows(project, [row(project, "alice", t, FULLY, "2026-11-01T10:00:00Z") for t in earlier], tmp_path)
    shown = work(project, "alice", limit=12)
    # before each new chunk (queue_chunk = 10), a due repeat; never two in a row, never one of today
    assert "".join("R" if i.repeat else "L" for i in shown) == "R" + "L" * 10 + "R"
    # the lowest draws of the earlier day's items; the first never the item she answered last
    lowest = sorted(earlier[:-1], key=lambda t: draw("alice", KIND, refs[t]))[0]
    then = min(set(earlier) - {lowest}, key=lambda t: draw("alice", KIND, refs[t]))
    assert [i.task.task_id for i in shown if i.repeat] == [lowest, then]
    project.close()


def test_gold_items_never_come_back(project, tmp_path):
    project = with_config(project, "[annotation]\nrepeat_share = 0.5")
    tasks = project.store.labels.tasks(kind=KIND)
    for t in tasks[::2]:
        project.store.labels.set_gold(t.task_id, FULLY)
    shown = work(project, "alice")
    gold = {t.task_id for t in tasks[::2]}
    again = [i.task.task_id for i in shown if i.repeat]
    assert again and not set(again) & gold
    project.close()


def test_a_repeat_reloads_keeps_its_draft_and_a_stale_tab_records_nothing(project, tmp_path):
    project = with_config(project, "[annotation]\nrepeat_share = 0.5")
    tasks = sorted(t.task_id for t in project.store.labels.tasks(kind=KIND))
    earlier = [row(project, "alice", t, FULLY, "2026-11-01T10:00:00Z") for t in tasks[-2:]]
    import_rows(project, earlier, tmp_path)
    repeat = workflow.current_item(project, "alice", KIND)  # due before her first chunk
    assert repeat.repeat and repeat.task.task_id in tasks[-2:]
    again = workflow.current_item(project, "alice", KIND)  # a reload, another tab: the same showing
    assert (again.event_id, again.shown_at, again.repeat) == (repeat.event_id, repeat.shown_at, True)
    workflow.save_draft(project, "alice", repeat, {"coverage": "partially"})
    assert workflow.annotator_view(project, "alice", KIND).draft == {"coverage": "partially"}
    assert workflow.submit(project, "alice", repeat, PARTIALLY) is True
    assert workflow.submit(project, "alice", again, PARTIALLY) is False  # a double click: recorded once
    with pytest.raises(workflow.StaleSubmit):
        workflow.submit(project, "alice", again, FULLY)  # the other tab, another answer: nothing
    assert [e.values for e in project.store.repeats.events()] == [PARTIALLY]
    # My items and the previous-item key show the first answer only
    assert [(e.task_id, e.values) for e in workflow.recent_labels(project, "alice")] == [
        (t, FULLY) for t in reversed(tasks[-2:])
    ]
    assert workflow.previous_label(project, "alice", KIND).values == FULLY
    assert not workflow.current_item(project, "alice", KIND).repeat  # never two in a row
    assert workflow.annotator_view(project, "alice", KIND).draft is None
    project.close()


def test_at_most_one_repeat_per_annotator_and_item_on_each_backend(any_project):
    store = any_project.store
    store.accounts.add_user("alice", "annotator", "correct-horse-9")
    seed_pairs(any_project, 1)
    create_tasks(any_project, KIND, overlap=1, gold_rate=0)
    task = store.labels.tasks(kind=KIND)[0].task_id

    def event(event_id: str, values: dict, action: str = "repeat") -> LabelEvent:
        return LabelEvent(
            event_id=event_id,
            task_id=task,
            kind=KIND,
            annotator="alice",
            action=action,
            values=values,
            source="import",
            created_at="2026-11-02T10:00:00Z",
        )

    assert store.labels.append_events([event("first", FULLY, "label")], repeats=[event("r1", FULLY)]) == 2
    assert store.labels.append_events([], repeats=[event("r2", PARTIALLY)]) == 0  # the key decides
    assert [(e.event_id, e.values) for e in store.repeats.events()] == [("r1", FULLY)]


def test_within_alpha_is_pinned_to_hand_computed_values_and_leaves_the_others_alone(project, tmp_path):
    tasks = [t.task_id for t in project.store.labels.tasks(kind=KIND)]
    day1, day2 = "2026-11-01T10:00:00Z", "2026-11-02T10:00:00Z"
    first = ["fully", "partially", "not_covered", "fully"]
    second = ["fully", "partially", "not_covered", "partially"]
    rows = [row(project, "alice", t, {"coverage": v}, day1) for t, v in zip(tasks, first, strict=False)]
    rows += [
        row(project, "bob", t, {"coverage": v}, day1)
        for t, v in zip(tasks, ["fully", "not_covered"], strict=False)
    ]
    import_rows(project, rows, tmp_path)
    before = (agreement_rows(project.store, kind=KIND), annotator_stats(project.store, kind=KIND))
    again = [
        row(project, "alice", t, {"coverage": v}, day2, repeat=True)
        for t, v in zip(tasks, second, strict=False)
    ]
    again += [
        row(project, "bob", t, {"coverage": v}, day2, repeat=True)
        for t, v in zip(tasks, ["fully", "not_covered"], strict=False)
    ]
    assert import_rows(project, again, tmp_path, "repeats.jsonl").written == 6
    got = {r["annotator"]: r for r in within_rows(project.store, KIND, n_boot=200, seed=1)}
    # Ordinal α (not_covered < partially < fully), alice's 4 pairs: (f,f) (p,p) (n,n) (f,p).
    # Values n_n = 2, n_p = 3, n_f = 3 (n = 8); δ²(p,f) = (3+3 − 3)² = 9, δ²(n,p) = (2+3 − 2.5)² = 6.25,
    # δ²(n,f) = (2+3+3 − 2.5)² = 30.25. D_o = (9 + 9) / 8 = 2.25;
    # D_e = 2 (2·3·6.25 + 3·3·9 + 2·3·30.25) / (8·7) = 600 / 56. α = 1 − 2.25·56/600 = 0.79.
    assert got["alice"]["alpha"] == pytest.approx(0.79)
    assert (
        got["alice"]["n_pairs"] == 4 and got["alice"]["field"] == "coverage" and not got["alice"]["flagged"]
    )
    assert got["bob"]["alpha"] == pytest.approx(1.0) and got["bob"]["n_pairs"] == 2
    low, high = got["alice"]["ci"]
    assert -1 <= low <= 0.79 <= high <= 1
    # the repeats change nothing else: agreement between people, and the Dawid–Skene reliabilities
    # (docs/agreement.md: the models leave repeats out; a second answer is not an independent worker)
    after = (agreement_rows(project.store, kind=KIND), annotator_stats(project.store, kind=KIND))
    assert after[0] == before[0]
    assert [(s["reliability"], s["confusion"]) for s in after[1]] == [
        (s["reliability"], s["confusion"]) for s in before[1]
    ]
    assert {s["annotator"]: s["self_alpha"] for s in after[1]} == {"alice": pytest.approx(0.79), "bob": 1.0}


def test_a_low_self_alpha_is_flagged_never_gated(project, tmp_path):
    tasks = [t.task_id for t in project.store.labels.tasks(kind=KIND)]
    values = ["fully", "partially", "not_covered"]
    rows = [
        row(project, "alice", t, {"coverage": v}, "2026-11-01T10:00:00Z")
        for t, v in zip(tasks, values, strict=False)
    ]
    rows += [
        row(project, "alice", t, {"coverage": v}, "2026-11-02T10:00:00Z", repeat=True)
        for t, v in zip(tasks, values[::-1], strict=False)
    ]
    import_rows(project, rows, tmp_path)
    [r] = within_rows(project.store, KIND, n_boot=50)
    assert r["alpha"] < 0.667 and r["flagged"]
    [stat] = annotator_stats(project.store, kind=KIND)
    assert stat["outlier"] and "self-consistency α" in stat["outlier_reason"]
    out = CliRunner().invoke(cli, ["agreement", "--within", "--project", str(project.root)])
    assert out.exit_code == 0 and out.output.splitlines()[2].startswith("alice")
    assert out.output.splitlines()[2].rstrip().endswith("flagged")


def test_agreement_within_is_an_empty_table_without_repeats(project):
    out = CliRunner().invoke(cli, ["agreement", "--within", "--json", "--project", str(project.root)])
    assert out.exit_code == 0 and json.loads(out.output) == []
    out = CliRunner().invoke(cli, ["agreement", "--within", "--project", str(project.root)])
    assert out.exit_code == 0 and "(none)" in out.output  # an empty table


def test_label_files_carry_repeats_and_refuse_one_without_a_first_label_or_with_other_values(
    project, tmp_path
):
    tasks = [t.task_id for t in project.store.labels.tasks(kind=KIND)]
    rows = [
        row(project, "alice", tasks[0], FULLY, "2026-11-01T10:00:00Z"),
        row(project, "alice", tasks[0], PARTIALLY, "2026-11-02T10:00:00Z", repeat=True),
    ]
    assert import_rows(project, rows, tmp_path).written == 2
    assert import_rows(project, rows, tmp_path).written == 0  # the same file again: nothing new
    out = io.StringIO()
    export_labels(project.store, out, all_events=True)
    exported = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [r.get("repeat", False) for r in exported] == [False, True] and exported[1]["values"] == PARTIALLY
    live = io.StringIO()
    export_labels(project.store, live)
    assert [json.loads(x).get("repeat") for x in live.getvalue().splitlines()] == [None]
    (tmp_path / "all.jsonl").write_text(out.getvalue(), encoding="utf-8")
    assert import_labels(project.store, tmp_path / "all.jsonl").written == 0  # an export comes back as itself
    csv = io.StringIO()
    export_labels(project.store, csv, fmt="csv", all_events=True)
    (tmp_path / "all.csv").write_text(csv.getvalue(), encoding="utf-8")
    assert import_labels(project.store, tmp_path / "all.csv").written == 0
    lonely = [row(project, "bob", tasks[1], FULLY, "2026-11-02T10:00:00Z", repeat=True)]
    with pytest.raises(
        LabelsFileError, match=r"lonely\.jsonl:1: repeat: bob has no label of this item to repeat"
    ):
        import_rows(project, lonely, tmp_path, "lonely.jsonl")
    other = [row(project, "alice", tasks[0], FULLY, "2026-11-03T10:00:00Z", repeat=True)]
    with pytest.raises(
        LabelsFileError, match=r"other\.jsonl:1: repeat: a repeat of this item by alice is already"
    ):
        import_rows(project, other, tmp_path, "other.jsonl")
    assert len(project.store.repeats.events()) == 1 and len(project.store.labels.events()) == 1


def test_a_crowd_participant_meets_a_due_repeat_before_the_code_and_it_counts_for_nothing(project):
    project = with_config(project, "[annotation]\nrepeat_share = 0.5")
    created = make_study(project, items=4, gold_share=0)
    who = studies.arrive(project, params(created)).account.username
    shown = []
    while (view := studies.participant_view(project, created.study, who)).status == "active":
        shown.append(view.item)
        workflow.submit(project, who, view.item, PARTIALLY if view.item.repeat else FULLY)
    assert view.status == "completed" and view.code == "C0DE1"
    assert [i.repeat for i in shown] == [False] * 4 + [True]  # 0.5 × 4: two due, never two in a row
    assert (view.done, view.total) == (4, 4)  # the repeat is no item of the study
    assert shown[-1].task.task_id != shown[-2].task.task_id
    assert [(e.annotator, e.values) for e in project.store.repeats.events()] == [(who, PARTIALLY)]
    project.close()


def test_the_crowd_report_shows_a_low_self_alpha_as_a_flag_not_a_reason_to_reject(project):
    _, regular = scripted(project)
    who = next(p.username for p in project.store.studies.participants("pilot") if p.platform_id == "pA")
    flipped = [  # pA said r1 partially, r2 fully: the repeats say the opposite
        LabelEvent(
            event_id=f"rep{i}",
            task_id=regular[r],
            kind=KIND,
            annotator=who,
            action="repeat",
            values={"coverage": v},
            source="import",
            created_at="2026-11-21T10:00:00Z",
        )
        for i, (r, v) in enumerate((("r1", "fully"), ("r2", "partially")))
    ]
    assert project.store.labels.append_events([], repeats=flipped) == 2
    row = next(r for r in study_report(project, "pilot").participants if r.platform_id == "pA")
    assert row.self_alpha is not None and row.self_alpha < 0.667 and "self-consistency α" in row.self_flag
    assert row.decision == "approve" and "self" not in row.reason  # a flag for people, never a rejection
    out = CliRunner().invoke(cli, ["crowd", "report", "pilot", "--project", str(project.root)])
    assert out.exit_code == 0 and "self-consistency α" in out.output
    quality = dashboard.quality_table(dashboard.annotator_quality(project.store, kind=KIND))
    mine = next(q for q in quality if q["annotator"] == who)
    assert mine["self-consistency α"] == f"{row.self_alpha:.2f}" and mine["outlier"] == "outlier"
