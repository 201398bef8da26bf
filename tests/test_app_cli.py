"""The annotation commands in-process (CliRunner), reading the store back afterwards."""

from __future__ import annotations

import json

import click
from appkit import seed_pairs, seed_sessions
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.project import Project


def run(project: Project, *args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, [*args, "--project", str(project.root)], input=stdin)


def test_users_add_list_disable(project):
    out = run(
        project, "users", "add", "alice", "--role", "annotator", "--password-stdin", stdin="s3cret-pass\n"
    )
    assert out.exit_code == 0 and out.output == "added annotator alice\n"
    assert project.store.accounts.authenticate("alice", "s3cret-pass").role == "annotator"
    listed = json.loads(run(project, "users", "list", "--json").output)
    assert [(u["username"], u["active"]) for u in listed] == [("alice", True)]
    assert run(project, "users", "disable", "alice").exit_code == 0
    assert project.store.accounts.authenticate("alice", "s3cret-pass") is None


def test_user_errors_are_one_line(project):
    out = run(project, "users", "add", "bob", "--role", "annotator", "--password-stdin", stdin="short\n")
    assert out.exit_code == 1 and out.output == "error: password must be at least 8 characters\n"
    out = run(project, "users", "add", "bob", "--role", "boss", "--password-stdin", stdin="long-enough\n")
    assert out.exit_code == 2 and "boss" in out.output


def test_tasks_create_and_list(project):
    seed_sessions(project, 3)
    out = run(
        project,
        "tasks",
        "create",
        "--kind",
        "preference_expressed",
        "--overlap",
        "2",
        "--batch",
        "w1",
        "--gold-rate",
        "0.2",
    )
    assert (
        out.output
        == "created 3 preference_expressed tasks in batch w1 (3 preference_expressed tasks in the project)\n"
    )
    assert {t.overlap for t in project.store.labels.tasks()} == {2}
    assert project.store.get_meta("annotation.gold_rate.preference_expressed") == "0.2"
    rows = json.loads(run(project, "tasks", "list", "--json").output)
    assert rows == [
        {
            "kind": "preference_expressed",
            "batch_id": "w1",
            "tasks": 3,
            "gold": 0,
            "assigned": 0,
            "complete": 0,
        }
    ]


def test_pairs_and_gold_import(project, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"checklist_item": "Is it short?", "candidate": "Prefers brevity.", "origin": "m"}\n')
    assert (
        run(project, "tasks", "pairs", "import", str(pairs)).output
        == f"added 1 preference pairs from {pairs}\n"
    )
    run(project, "tasks", "create", "--kind", "preference_match")
    task = project.store.labels.tasks(kind="preference_match")[0]
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps({"kind": "preference_match", "item_ref": task.item_ref, "answer": {"coverage": "fully"}})
    )
    assert run(project, "tasks", "gold", "import", str(gold)).exit_code == 0
    assert project.store.labels.task(task.task_id).gold_answer == {"coverage": "fully"}
    gold.write_text('{"task_id": "nope", "answer": {}}\n')
    out = run(project, "tasks", "gold", "import", str(gold))
    assert out.exit_code == 1 and out.output.startswith(f"error: {gold}:1:")


def test_batches_open_close_list(project):
    seed_pairs(project, 2)
    run(project, "tasks", "create", "--kind", "preference_match", "--batch", "b1")
    assert run(project, "batches", "close", "b1").output == "batch b1 is closed\n"
    assert json.loads(run(project, "batches", "list", "--json").output)[0]["status"] == "closed"
    assert run(project, "batches", "open", "b1").exit_code == 0
    assert project.store.labels.batches()[0].status == "open"
    out = run(project, "batches", "close", "nope")
    assert out.exit_code == 1 and out.output == "error: no batch 'nope'\n"


def test_every_annotation_command_has_an_example():
    def subcommands(group):
        ctx = click.Context(group)
        return {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}

    for group in ("users", "tasks", "batches", "annotate"):
        commands = subcommands(cli.get_command(click.Context(cli), group))
        assert commands, group
        for name, sub in commands.items():
            subs = subcommands(sub) if isinstance(sub, click.Group) else {name: sub}
            for leaf in subs.values():
                assert "Example: prefkit " in (leaf.help or ""), f"{group} {name} {leaf.name}"
