"""The work listings: ``prefkit tasks status`` prints the one listing (``work.rows``), ``tasks list`` and
``batches list`` are views of it with the keys and columns they always had."""

from __future__ import annotations

import json

from appkit import MAYA, app, project_fixtures, seed_pairs
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import work, workflow

template, project = project_fixtures(n=3, overlap=2)


def run(project, *args: str):
    out = CliRunner().invoke(cli, [*args, "--project", str(project.root)])
    assert out.exit_code == 0, out.output
    return out.output


def test_tasks_list_and_batches_list_are_views_of_tasks_status(project):
    seed_pairs(project, 5)  # 2 pairs beyond the template's 3 go to batch week2
    assert work.create(project, "maya", "preference_match", overlap="3", batch="week2") == 2
    run(project, "batches", "close", "week2")
    workflow.submit(
        project, "alice", workflow.current_item(project, "alice", "preference_match"), {"coverage": "fully"}
    )
    status = json.loads(run(project, "tasks", "status", "--json"))
    assert [
        (r["kind"], r["batch"], r["status"], r["tasks"], r["overlap"], r["assigned"])
        for r in status["batches"]
    ] == [
        ("preference_expressed", "default", "open", 3, "2", 0),
        ("preference_match", "default", "open", 3, "2", 3),  # alice holds her queue
        ("preference_match", "week2", "closed", 2, "3", 0),
    ]
    listed = json.loads(run(project, "tasks", "list", "--json"))
    assert listed == [
        {
            "kind": r["kind"],
            "batch_id": r["batch"],
            **{k: r[k] for k in ("tasks", "gold", "assigned", "complete")},
        }
        for r in status["batches"]
    ]
    assert [
        r["batch_id"]
        for r in json.loads(run(project, "tasks", "list", "--kind", "preference_expressed", "--json"))
    ] == ["default"]
    made = {r["batch"]: r["created_at"] for r in status["batches"]}
    assert json.loads(run(project, "batches", "list", "--json")) == [
        {
            "batch_id": "default",
            "kinds": "preference_expressed, preference_match",
            "status": "open",
            "created_at": made["default"],
        },
        {"batch_id": "week2", "kinds": "preference_match", "status": "closed", "created_at": made["week2"]},
    ]
    assert made["default"] <= made["week2"]


def test_the_text_tables_keep_their_columns(project):
    assert run(project, "tasks", "list").splitlines()[0].split() == [
        "kind",
        "batch_id",
        "tasks",
        "gold",
        "assigned",
        "complete",
    ]
    assert run(project, "batches", "list").splitlines()[0].split() == [
        "batch_id",
        "kinds",
        "status",
        "created_at",
    ]
    header = run(project, "tasks", "status").splitlines()[0].split()
    assert header == ["kind", "batch", "status", "tasks", "gold", "overlap", "assigned", "complete", "stale"]
    assert "preference_expressed, preference_match" in run(project, "batches", "list")


def test_an_empty_project_says_it_has_no_tasks_or_batches(tmp_path):
    root = tmp_path / "empty"
    assert CliRunner().invoke(cli, ["init", str(root), "--name", "empty"]).exit_code == 0
    runner = CliRunner()
    for args in (["tasks", "list"], ["batches", "list"], ["tasks", "status"]):
        out = runner.invoke(cli, [*args, "--project", str(root)])
        assert (out.exit_code, out.output) == (0, "(none)\n"), args
    for args, empty in (
        (["tasks", "list"], []),
        (["batches", "list"], []),
        (["tasks", "status"], {"batches": [], "stale_queues": []}),
    ):
        out = runner.invoke(cli, [*args, "--json", "--project", str(root)])
        assert json.loads(out.output) == empty, args


def test_the_dashboard_shows_the_same_views(project, monkeypatch):
    monkeypatch.setenv("PREFKIT_PROJECT", str(project.root))
    at = app(MAYA)
    at.switch_page("views/dashboard.py").run()
    assert not at.exception
    tables = {tuple(d.value.columns): d.value.to_dict("records") for d in at.dataframe}
    counts = tables[("task kind", "batch", "tasks", "gold", "assigned", "complete")]
    assert [(r["task kind"], r["batch"], r["tasks"]) for r in counts] == [
        ("Preference expressed", "default", 3),
        ("Preference matching", "default", 3),
    ]
    [batch] = tables[("batch", "kinds", "status", "created_at")]
    [listed] = work.batch_list(project)
    assert batch == {"batch": listed.pop("batch_id"), **listed}
    assert (batch["kinds"], batch["status"]) == ("preference_expressed, preference_match", "open")
