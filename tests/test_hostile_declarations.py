"""Declarations, guideline files and imports under hostile input: entries of kinds/ that are not
declarations, a declaration changed under recorded answers and gold, names that would collide with the
release's own, guidelines files outside the project or not text. Every case reads the store back."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner
from declaredkind import NAME, declare
from prefkit.cli import cli
from prefkit.curation.project import Project


def _run(project: Project, *args: str):
    result = CliRunner().invoke(cli, [*args, "-p", str(project.root)])
    assert "Traceback" not in result.output and not isinstance(result.exception, OSError | RecursionError)
    return result


#: An entry of kinds/ that is no declaration, and the line ``kinds check`` prints for it.
SKIPPED = [
    (lambda p: p.mkdir(), "x.toml", "not a regular file"),
    (lambda p: p.symlink_to("alice@host.1234:1700000000"), ".#response_fit.toml", "not a regular file"),
    (lambda p: os.mkfifo(p), "fifo.toml", "not a regular file"),
    (lambda p: p.write_text('name = "Bad"'), "Bad-Name.toml", "not a kind's name"),
    (lambda p: p.write_text("x"), "a" * 65 + ".toml", "not a kind's name"),
    (lambda p: p.write_text("x"), "response_fit.toml~", "not a .toml file"),
]


def test_entries_that_are_no_declaration_are_skipped_in_one_line_each_and_every_command_works(project):
    declare(project.root)
    for make, name, _why in SKIPPED:
        make(project.root / "kinds" / name)
    checked = _run(project, "kinds", "check")
    assert checked.exit_code == 0, checked.output
    lines = checked.output.splitlines()
    assert lines[0].startswith(f"kinds/{NAME}.toml: ok")
    assert sorted(line.split(" (")[0] for line in lines[1:]) == sorted(
        f"kinds/{name}: skipped: {why}" for _, name, why in SKIPPED
    )
    for command in (
        ("kinds", "list"),
        ("tasks", "list"),
        ("agreement",),
        ("release", "check"),
        ("guidelines", "list"),
        ("adjudicate", "queue"),
    ):
        result = _run(project, *command)
        assert result.exit_code in (0, 1) and "skipped" not in result.output, (command, result.output)
    assert NAME in _run(project, "kinds", "list").output


def test_a_declaration_nested_too_deep_is_refused_in_one_line_and_the_others_still_load(project):
    declare(project.root)
    (project.root / "kinds" / "deep.toml").write_text("title = " + "[" * 20000 + "]" * 20000)
    result = _run(project, "kinds", "check")
    assert result.exit_code == 1
    assert result.stderr.strip() == "kinds/deep.toml: nested too deep to be a declaration"
    assert f"kinds/{NAME}.toml: ok" in result.stdout


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("a" * 300, "use at most 64 lower-case letters"),
        ("../prefkit", "'../prefkit': use at most 64"),
        ("Upper", "'Upper': use at most 64"),
    ],
)
def test_kinds_new_refuses_a_name_no_kind_can_take_in_one_line(project, name, line):
    result = _run(project, "kinds", "new", name)
    assert result.exit_code == 1 and line in result.output and len(result.output.splitlines()) == 1
    assert sorted(p.name for p in (project.root / "kinds").iterdir()) == []
