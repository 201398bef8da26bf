"""``prefkit tasks recalibrate``: decided items queued again for every active annotator; the answers
are compared with the decisions and never count as votes, edits or decisions."""

from __future__ import annotations

import json

import pytest
from appkit import PASSWORD, project_fixtures
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import workflow
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.quality.consensus import final_labels

template, project = project_fixtures(n=6, overlap=2)
KIND = "preference_match"


def cli_json(project, *args):
    done = CliRunner().invoke(cli, [*args, "--json", "-p", str(project.root)])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


@pytest.fixture
def decided(project):
    """alice and bob label every item alike but one (a tie, undecided); carol joins afterwards."""
    tasks = [t.task_id for t in project.store.labels.tasks(kind=KIND)]
    for who in ("alice", "bob"):
        while (item := workflow.current_item(project, who, KIND)) is not None:
            odd = who == "bob" and item.task.task_id == tasks[0]
            workflow.submit(project, who, item, {"coverage": "partially" if odd else "fully"})
    project.store.accounts.add_user("carol", "annotator", PASSWORD)
    return tasks


def test_answers_are_compared_with_the_decisions_and_never_counted(project, decided):
    before = (
        project.store.labels.effective_events(KIND),
        final_labels(project.store, KIND),
        agreement_rows(project.store, KIND, n_boot=50),
    )
    queued = {
        r["annotator"]: r["queued"]
        for r in cli_json(project, "tasks", "recalibrate", "--kind", KIND, "--items", "3")
    }
    assert queued == {
        "alice": 0,
        "bob": 0,
        "carol": 3,
    }  # alice and bob had every item; the tie is not decided
    answers = []
    while (item := workflow.current_item(project, "carol", KIND)) is not None:
        assert item.recalibration and item.task.task_id != decided[0]
        answers.append(item.event_id)
        workflow.submit(project, "carol", item, {"coverage": "fully" if len(answers) < 3 else "not_covered"})
    assert len(answers) == 3
    assert {project.store.labels.event(e).action for e in answers} == {"recalibrate"}
    after = (
        project.store.labels.effective_events(KIND),
        final_labels(project.store, KIND),
        agreement_rows(project.store, KIND, n_boot=50),
    )
    assert after == before  # no live label, no vote, no decision, no agreement changed
    with pytest.raises(workflow.WorkflowError, match="not one of your labels"):
        workflow.edit_label(project, "carol", answers[0], {"coverage": "partially"})
    (row,) = cli_json(project, "tasks", "recalibrate", "--kind", KIND, "--report")
    assert row == {"annotator": "carol", "task_kind": KIND, "answers": 3, "units": 3, "agreement": 0.6667}


def test_recalibration_items_hold_no_place_even_when_handed_back(project, decided):
    """Queued again and handed back to the pool unanswered: the items' holder counts are as before,
    so nobody new is given an item that already has its annotators."""
    assert cli_json(project, "tasks", "recalibrate", "--kind", KIND, "--items", "5")[-1]["queued"] == 5
    assert len(workflow.release_stale(project, hours=0, annotator="carol")) == 5
    project.store.accounts.add_user("dave", "annotator", PASSWORD)
    assert (
        workflow.available(project, "dave", KIND) == 0
        and workflow.current_item(project, "dave", KIND) is None
    )
