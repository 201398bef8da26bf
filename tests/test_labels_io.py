"""Labels import/export: lossless round trips, all-or-nothing validation, idempotent re-import."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from click.testing import CliRunner
from conftest import label_event
from prefkit.cli import cli
from prefkit.curation.annotation.labels_io import LabelsFileError, export_labels, import_labels
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.project import Project

MATCH = get_kind("preference_match")
EXPRESSED = get_kind("preference_expressed")
EXPRESSED_PAYLOAD = {
    "checklist": ["Likes tea?", "Hates noise?"],
    "turns": [
        {"index": 0, "role": "user", "content": "tea please"},
        {"index": 1, "role": "assistant", "content": "ok"},
    ],
}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Users and tasks, made once (password hashing is deliberately slow) and copied per test."""
    root = tmp_path_factory.mktemp("labels") / "proj"
    project = Project.init(root, name="labels")
    for name in ("ann1", "ann2", "gpt"):
        project.store.accounts.add_user(name, "annotator", "password-123")
    project.store.labels.add_tasks(
        [MATCH.make_task(f"pair:p{i}", {"i": i}, overlap=2, batch="b1") for i in range(3)]
    )
    project.store.labels.add_tasks(
        [EXPRESSED.make_task("session:s0", EXPRESSED_PAYLOAD, overlap=2, batch="b1")]
    )
    project.close()
    return root


def _open(template, path):
    return Project(shutil.copytree(template, path))


@pytest.fixture
def source(template, tmp_path):
    p = _open(template, tmp_path / "a")
    yield p
    p.close()


@pytest.fixture
def target(template, tmp_path):
    p = _open(template, tmp_path / "b")
    yield p
    p.close()


def _label(
    store, item_ref, who, values, action="label", supersedes=None, seconds=4.5, comment=None, source="app"
):
    task = next(t for t in store.labels.tasks() if t.item_ref == item_ref)
    values = (
        get_kind(task.kind).validate(values, task) if action == "label" else values
    )  # as the app stores them
    ev = label_event(
        task,
        who,
        values,
        action=action,
        time_spent_s=seconds,
        supersedes=supersedes,
        comment=comment,
        source=source,
    )
    store.labels.append_event(ev)
    return ev


def _fill(store):
    first = _label(store, "pair:p0", "ann1", {"coverage": "partially"})
    _label(store, "pair:p0", "ann1", {"coverage": "fully"}, supersedes=first.event_id)  # an edit
    _label(store, "pair:p0", "ann2", {"coverage": "fully"}, seconds=None)
    _label(store, "pair:p1", "ann2", {}, action="skip", comment="unclear, ünïcode")
    gone = _label(store, "pair:p2", "ann1", {"coverage": "not_covered"})
    _label(store, "pair:p2", "ann1", {}, action="withdraw", supersedes=gone.event_id)
    values = {"items": [{"item": 0, "expressed": True, "evidence": [0]}, {"item": 1, "expressed": False}]}
    _label(store, "session:s0", "ann1", values)
    _label(store, "pair:p1", "gpt", {"coverage": "partially"}, source="judge", seconds=None)


def _export(store, fmt="jsonl", all_events=False) -> str:
    out = io.StringIO()
    export_labels(store, out, fmt=fmt, all_events=all_events)
    return out.getvalue()


def _live(store):
    return sorted(
        (
            e.task_id,
            e.annotator,
            e.action,
            json.dumps(e.values, sort_keys=True),
            e.time_spent_s,
            e.comment,
            e.created_at,
            e.source == "judge",
        )
        for e in store.labels.effective_events()
    )


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("all_events", [False, True])
def test_round_trip_is_lossless(source, target, tmp_path, fmt, all_events):
    _fill(source.store)
    text = _export(source.store, fmt, all_events)
    path = tmp_path / f"labels.{fmt}"
    path.write_text(text, encoding="utf-8")
    result = import_labels(target.store, path)
    assert result.written == result.rows == (8 if all_events else 5)
    assert _export(target.store, fmt, all_events) == text
    assert _live(target.store) == _live(source.store)


def test_export_holds_live_labels_by_item_ref(source):
    _fill(source.store)
    rows = [json.loads(line) for line in _export(source.store).splitlines()]
    assert [(r["item_id"], r["annotator"], r["action"]) for r in rows] == [
        ("pair:p0", "ann1", "label"),
        ("pair:p0", "ann2", "label"),
        ("pair:p1", "ann2", "skip"),
        ("session:s0", "ann1", "label"),
        ("pair:p1", "gpt", "label"),
    ]
    assert rows[0]["values"] == {"coverage": "fully"} and rows[1]["time_spent_s"] is None
    assert [r["judge"] for r in rows] == [False, False, False, False, True]


def test_reimport_is_a_noop(source, target, tmp_path):
    _fill(source.store)
    path = tmp_path / "labels.jsonl"
    path.write_text(_export(source.store, all_events=True), encoding="utf-8")
    assert import_labels(target.store, path).written == 8
    again = import_labels(target.store, path)
    assert (again.written, again.already_recorded) == (0, 8)
    assert target.store.count("label_events") == 8


def _rows_file(tmp_path, rows, name="in.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _row(**over):
    row = {
        "annotator": "ann1",
        "task_kind": "preference_match",
        "item_id": "pair:p0",
        "values": {"coverage": "fully"},
        "time_spent_s": 3.0,
        "timestamp": "2026-01-02T03:04:05Z",
    }
    return {**row, **over}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"annotator": "nobody"}, "in.jsonl:2: annotator: no user 'nobody'"),
        ({"values": {"coverage": "most"}}, "in.jsonl:2: values.coverage: 'most' is not one of"),
        ({"item_id": "pair:zzz"}, "in.jsonl:2: item_id: no preference_match task"),
        ({"task_kind": "vibes"}, "in.jsonl:2: task_kind: unknown task kind 'vibes'"),
        ({"timestamp": "yesterday"}, "in.jsonl:2: timestamp: not an ISO-8601 time"),
        ({"time_spent_s": -1}, "in.jsonl:2: time_spent_s: expected a number of seconds"),
        ({"action": "skip"}, "in.jsonl:2: values: a skip event carries no values"),
        ({"colour": "red"}, "in.jsonl:2: colour: unknown column"),
        ({"judge": "yes"}, "in.jsonl:2: judge: expected true or false"),
        ({"repeat": 1}, "in.jsonl:2: repeat: expected true or false, got 1"),
        ({"judge": 0}, "in.jsonl:2: judge: expected true or false, got 0"),
    ],
)
def test_a_bad_row_is_rejected_and_nothing_is_written(target, tmp_path, bad, message):
    path = _rows_file(tmp_path, [_row(), _row(**{"item_id": "pair:p1", **bad}), _row(item_id="pair:p2")])
    with pytest.raises(LabelsFileError) as err:
        import_labels(target.store, path)
    assert str(err.value).startswith(f"{path.parent}/{message}")
    assert target.store.count("label_events") == 0


def test_values_are_checked_against_the_task(target, tmp_path):
    values = {"items": [{"item": 0, "expressed": True, "evidence": [1]}, {"item": 1, "expressed": False}]}
    path = _rows_file(tmp_path, [_row(task_kind="preference_expressed", item_id="session:s0", values=values)])
    with pytest.raises(
        LabelsFileError, match=r"in.jsonl:1: values.items.0.evidence: turn\(s\) \[1\] are not user turns"
    ):
        import_labels(target.store, path)


def test_csv_errors_name_the_physical_line(target, tmp_path):
    path = tmp_path / "in.csv"
    path.write_text(
        "annotator,task_kind,item_id,values,time_spent_s,timestamp\n"
        'ann1,preference_match,pair:p0,"{""coverage"": ""fully""}",2,2026-01-02T03:04:05Z\n'
        "ann1,preference_match,pair:p1,{not json,2,2026-01-02T03:04:05Z\n",
        encoding="utf-8",
    )
    with pytest.raises(LabelsFileError, match=r"in.csv:3: values: not valid JSON"):
        import_labels(target.store, path)
    assert target.store.count("label_events") == 0


@pytest.mark.parametrize(
    "last",
    [
        'ann1,preference_match,pair:p1,"{""coverage"": ""fully""}",2,"2026-01-02T03:04:05Z\n',  # never closed
        'ann1,preference_match,pair:p1,"{""coverage"": ""fully""}",2,"2026-01-02"T03:04:05Z\n',  # text after it
    ],
)
def test_a_csv_quote_that_never_closes_is_refused_in_one_line(target, tmp_path, last):
    path = tmp_path / "in.csv"
    path.write_text(
        "annotator,task_kind,item_id,values,time_spent_s,timestamp\n"
        'ann1,preference_match,pair:p0,"{""coverage"": ""fully""}",2,2026-01-02T03:04:05Z\n' + last,
        encoding="utf-8",
    )
    with pytest.raises(LabelsFileError) as err:
        import_labels(target.store, path)
    assert str(err.value).startswith(f"{path}:3: <row>: not readable CSV (")
    assert "\n" not in str(err.value)
    assert target.store.count("label_events") == 0


def test_later_rows_supersede_earlier_ones_and_judge_source_is_kept(target, tmp_path):
    path = _rows_file(
        tmp_path, [_row(), _row(values={"coverage": "partially"}, timestamp="2026-01-03T00:00:00Z")]
    )
    assert import_labels(target.store, path, source="judge").written == 2
    events = target.store.labels.events()
    assert events[1].supersedes == events[0].event_id and {e.source for e in events} == {"judge"}
    [live] = target.store.labels.effective_events()
    assert live.values == {"coverage": "partially"}


def test_unknown_extension_is_a_user_error(target, tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("", encoding="utf-8")
    with pytest.raises(LabelsFileError, match="cannot tell the format"):
        import_labels(target.store, path)


def test_cli_import_then_export(target, tmp_path):
    path = _rows_file(tmp_path, [_row(), _row(annotator="ann2", time_spent_s=None)])
    runner, where = CliRunner(), ["-p", str(target.root)]
    result = runner.invoke(cli, ["labels", "import", str(path), *where])
    assert result.exit_code == 0, result.output
    assert "2 row(s); 2 new event(s), 0 already recorded" in result.output
    again = runner.invoke(cli, ["labels", "import", str(path), *where])
    assert "0 new event(s), 2 already recorded" in again.output
    out = tmp_path / "out.csv"
    assert runner.invoke(cli, ["labels", "export", str(out), *where]).exit_code == 0
    assert out.read_text(encoding="utf-8").splitlines()[0] == (
        "annotator,task_kind,item_id,values,time_spent_s,timestamp,action,comment,judge,assist_arm,suggestion_id,event_id,"
        "guidelines_version"
    )
    stdout = runner.invoke(cli, ["labels", "export", *where]).output
    assert [json.loads(line)["annotator"] for line in stdout.splitlines()] == ["ann1", "ann2"]


def test_cli_bad_file_is_one_line_error(target, tmp_path):
    path = _rows_file(tmp_path, [_row(annotator="ghost")])
    result = CliRunner().invoke(cli, ["labels", "import", str(path), "-p", str(target.root)])
    assert result.exit_code == 1
    assert result.output.strip() == f"error: {path}:1: annotator: no user 'ghost' in this project"


# -- issue 32, item 3: an exported label imported back is the event it is ----------------------------------
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("all_events", [False, True])
def test_export_then_import_into_the_same_project_writes_nothing(source, tmp_path, fmt, all_events):
    _fill(source.store)
    before = [e.event_id for e in source.store.labels.events()]
    text = _export(source.store, fmt, all_events)
    path = tmp_path / f"labels.{fmt}"
    path.write_text(text, encoding="utf-8")
    result = import_labels(source.store, path)
    assert (result.written, result.already_recorded) == (0, 8 if all_events else 5)
    assert [e.event_id for e in source.store.labels.events()] == before  # no twins of the app's labels
    assert _export(source.store, fmt, all_events) == text
    out = CliRunner().invoke(cli, ["labels", "import", str(path), "-p", str(source.root)])
    assert out.exit_code == 0 and "0 new event(s), " in out.output, out.output
    assert source.store.count("label_events") == 8


def test_the_export_carries_each_events_id(source):
    _fill(source.store)
    rows = [json.loads(line) for line in _export(source.store, all_events=True).splitlines()]
    assert [r["event_id"] for r in rows] == [e.event_id for e in source.store.labels.events()]


def test_a_recorded_event_id_with_other_content_is_refused_naming_file_and_line(source, tmp_path):
    _fill(source.store)
    rows = [json.loads(line) for line in _export(source.store).splitlines()]
    rows[1]["values"] = {"coverage": "partially"}  # an edited export
    path = _rows_file(tmp_path, rows)
    with pytest.raises(LabelsFileError) as err:
        import_labels(source.store, path)
    assert str(err.value).startswith(
        f"{path}:2: event_id: event {rows[1]['event_id']!r} is in this project with other content"
    )
    assert source.store.count("label_events") == 8
    rows[1]["event_id"] = None  # cleared: a new label, superseding the one it was exported from
    assert import_labels(source.store, _rows_file(tmp_path, rows)).written == 1


def test_an_event_id_from_another_project_is_imported_with_its_id(source, target, tmp_path):
    _fill(source.store)
    path = tmp_path / "labels.csv"
    path.write_text(_export(source.store, "csv"), encoding="utf-8")
    assert import_labels(target.store, path).written == 5
    assert {e.event_id for e in target.store.labels.effective_events()} == {
        e.event_id for e in source.store.labels.effective_events()
    }
    back = tmp_path / "back.csv"
    back.write_text(_export(target.store, "csv"), encoding="utf-8")
    assert import_labels(source.store, back).written == 0  # there and back again: still one of each


def test_one_event_id_twice_in_a_file_with_other_content_is_refused(target, tmp_path):
    path = _rows_file(
        tmp_path, [_row(event_id="ev1"), _row(event_id="ev1", values={"coverage": "partially"})]
    )
    with pytest.raises(LabelsFileError, match=r"in.jsonl:2: event_id: event 'ev1' is on an earlier line"):
        import_labels(target.store, path)
    with pytest.raises(LabelsFileError, match=r"in.jsonl:1: event_id: expected an event id"):
        import_labels(target.store, _rows_file(tmp_path, [_row(event_id=" ev1")]))
    assert target.store.count("label_events") == 0


def test_imported_labels_count_towards_complete_tasks_as_app_labels_do(source, target, tmp_path):
    """pair:p0 has its 2 of 2 labels (one edited: still one person); p1 a skip and a judge's label;
    p2 a withdrawn label; s0 1 of 2. Only p0 is complete, before the import and after it, where no
    label came through the app's queue."""
    _fill(source.store)
    [b1_match] = [s for s in source.store.progress.task_summaries("preference_match")]
    assert (b1_match.tasks, b1_match.complete) == (3, 1)
    path = tmp_path / "labels.jsonl"
    path.write_text(_export(source.store), encoding="utf-8")
    import_labels(target.store, path)
    assert target.store.count("assignments") == 0  # nothing came through a queue
    complete = {s.kind: s.complete for s in target.store.progress.task_summaries()}
    assert complete == {"preference_match": 1, "preference_expressed": 0}
    _label(
        target.store,
        "session:s0",
        "ann2",
        {"items": [{"item": 0, "expressed": False}, {"item": 1, "expressed": False}]},
    )
    assert {s.kind: s.complete for s in target.store.progress.task_summaries()}["preference_expressed"] == 1
