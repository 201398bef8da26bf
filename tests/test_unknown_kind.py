"""A task kind enters curation as a plain string (``schemas`` knows no kinds); wherever it enters —
task creation, label files, gold files, Label Studio push and pull, the annotation queue, consensus —
an unknown one is the same single error naming it and the known kinds, and nothing is written."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from prefkit.annotate_app.labelstudio import bridge
from prefkit.cli import cli
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_admin import TaskFileError, create_tasks, import_gold
from prefkit.curation.annotation.task_kinds import LabelError, kind_names
from prefkit.curation.quality.consensus import disagreements, final_labels
from test_release_support import add_users

UNKNOWN = "unknown task kind 'bogus'; expected one of " + ", ".join(kind_names())
NOWHERE = "http://127.0.0.1:9"  # nothing listens: the kind is refused before any connection


@pytest.mark.parametrize(
    "call",
    [
        lambda project: create_tasks(project, "bogus"),
        lambda project: bridge.push(project, "bogus", NOWHERE, api_key="x"),
        lambda project: bridge.pull(project, "bogus", NOWHERE, api_key="x"),
        lambda project: workflow.current_item(project, "ann1", "bogus"),
        lambda project: workflow.available(project, "ann1", "bogus"),
        lambda project: final_labels(project.store, "bogus"),
        lambda project: disagreements(project.store, "bogus"),
    ],
    ids=["create_tasks", "ls_push", "ls_pull", "queue", "available", "final_labels", "disagreements"],
)
def test_an_unknown_kind_is_one_clear_error_in_the_library(project, call):
    add_users(project.store, "ann1")
    with pytest.raises(LabelError) as err:
        call(project)
    assert str(err.value) == UNKNOWN
    assert project.store.labels.tasks() == []


def test_a_labels_file_with_an_unknown_kind_names_file_line_and_column(project, tmp_path):
    add_users(project.store, "ann1")
    path = tmp_path / "labels.jsonl"
    row = {
        "annotator": "ann1",
        "task_kind": "bogus",
        "item_id": "pair:x",
        "values": {},
        "timestamp": "2026-01-05T10:00:00Z",
    }
    path.write_text(json.dumps(row) + "\n")
    result = CliRunner().invoke(cli, ["labels", "import", str(path), "-p", str(project.root)])
    assert result.exit_code == 1
    assert result.output == f"error: {path}:1: task_kind: {UNKNOWN}\n"
    assert project.store.labels.effective_events() == []


def test_a_gold_file_with_an_unknown_kind_names_file_and_line(project, tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps({"kind": "bogus", "item_ref": "pair:x", "answer": {}}) + "\n")
    with pytest.raises(TaskFileError) as err:
        import_gold(project, path)
    assert str(err.value) == f"{path}:1: field kind: {UNKNOWN}"


@pytest.mark.parametrize(
    "args", [["tasks", "create", "--kind", "bogus"], ["labelstudio", "push", "bogus", "--url", NOWHERE]]
)
def test_the_cli_offers_only_registered_kinds(project, args):
    result = CliRunner().invoke(cli, [*args, "-p", str(project.root)])
    assert result.exit_code == 2
    assert "'bogus' is not one of" in result.output and "preference_match" in result.output


@pytest.mark.parametrize("args", [["agreement", "--kind", "bogus"], ["labels", "export", "--kind", "bogus"]])
def test_a_free_form_kind_option_ends_in_the_same_one_line_error(project, args):
    result = CliRunner().invoke(cli, [*args, "-p", str(project.root)])
    assert (result.exit_code, result.output) == (1, f"error: {UNKNOWN}\n")
