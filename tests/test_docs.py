"""The docs stay true: the CLI reference (docs/cli.md) is generated from the commands and is up to date,
the README stays a front door, and CI runs the README's test command."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "docs" / "cli_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cli_reference_is_current_and_names_every_command():
    from prefkit.cli import cli

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert _generator().render() == text, "run: python docs/cli_reference.py --write"
    for name in cli.list_commands(None):
        assert f"## `prefkit {name}" in text, name


def test_readme_is_a_front_door_with_the_two_commands_first():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 500
    assert any("make demo" in line for line in lines[:25])
    assert any("make test" in line for line in lines[:25])
    assert "docs/cli.md" in "\n".join(lines)


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_command_list_help_prints_is_generated_from_the_commands():
    listing = (ROOT / "prefkit" / "cli" / "commands.json").read_text(encoding="utf-8")
    assert '"tasks_cmds:tasks"' in listing
    assert _generator().listing() == listing, "run: python docs/cli_reference.py --write"
