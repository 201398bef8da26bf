"""The CLI in-process: commands write to the project and the store reads it back."""

import json

import click
from click.testing import CliRunner
from prefkit.cli import cli


def run(*args, input=None):
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
    return result


def test_init_status_json(tmp_path):
    root = tmp_path / "bench"
    assert run("init", root, "--name", "bench").exit_code == 0
    res = run("status", "--project", root, "--json")
    data = json.loads(res.output)
    for key in (
        "personas",
        "sessions",
        "turns",
        "instances",
        "memories_gold",
        "memories_candidate",
        "tasks",
        "label_events",
    ):
        assert data[key] == 0


def test_project_from_environment(tmp_path, monkeypatch):
    run("init", tmp_path / "envproj")
    monkeypatch.setenv("PREFKIT_PROJECT", str(tmp_path / "envproj"))
    res = run("status")
    assert res.exit_code == 0 and "envproj" in res.output


def test_project_argument_of_init_from_environment_and_an_empty_value_is_unset(tmp_path, monkeypatch):
    """``init`` with no PATH uses $PREFKIT_PROJECT; an empty $PREFKIT_PROJECT counts as unset (the
    current directory), as the environment record reads every variable."""
    monkeypatch.setenv("PREFKIT_PROJECT", str(tmp_path / "from-env"))
    assert run("init").exit_code == 0
    assert (tmp_path / "from-env" / "prefkit.toml").is_file()
    monkeypatch.setenv("PREFKIT_PROJECT", "")
    monkeypatch.chdir(tmp_path / "from-env")
    res = run("status")
    assert res.exit_code == 0 and "from-env" in res.output


def test_import_and_export_alpsbench_via_cli(tmp_path, fixture_packets):
    root = tmp_path / "p"
    run("init", root)
    first = sorted(fixture_packets.rglob("sess_*.json"))[0]
    res = run("import", "alpsbench", first, "--project", root)
    assert res.exit_code == 0 and "1 dialogues" in res.output
    assert "already imported" in run("import", "alpsbench", first, "--project", root).output
    from prefkit.curation.project import Project

    project = Project(root)
    assert project.store.status()["packets"] == 1
    project.close()
    res = run("export", "alpsbench", tmp_path / "out", "--project", root)
    assert res.exit_code == 0
    assert json.loads((tmp_path / "out" / first.name).read_text()) == json.loads(first.read_text())


def test_user_error_is_one_line_without_traceback(tmp_path):
    run("init", tmp_path / "p")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"persona_id": "x"}\n')
    result = CliRunner().invoke(cli, ["import", "cupid", str(bad), "--project", str(tmp_path / "p")])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "bad.jsonl:1" in lines[0]
    assert "Traceback" not in result.output


def test_not_a_project_is_a_user_error(tmp_path):
    result = CliRunner().invoke(cli, ["status", "--project", str(tmp_path)])
    assert result.exit_code == 1 and "not a prefkit project" in result.output


def test_schema_export_writes_valid_json_schema(tmp_path):
    from prefkit.schemas import ALL_SCHEMAS

    assert run("schema", "export", tmp_path / "s").exit_code == 0
    files = sorted(p.name for p in (tmp_path / "s").glob("*.schema.json"))
    assert files == sorted(f"{n}.schema.json" for n in ALL_SCHEMAS)
    doc = json.loads((tmp_path / "s" / "MemoryItem.schema.json").read_text())
    assert doc["additionalProperties"] is False and "time_scope" in doc["properties"]


def _walk(group, path=()):
    for name in group.list_commands(click.Context(group)):
        cmd = group.get_command(click.Context(group), name)
        yield (*path, name), cmd
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, (*path, name))


def test_every_command_has_help_with_a_real_example():
    missing = []
    for path, cmd in _walk(cli):
        text = cmd.help or ""
        if not text.strip():
            missing.append(" ".join(path) + " (no help)")
        elif not isinstance(cmd, click.Group) and "Example: prefkit " not in text:
            missing.append(" ".join(path) + " (no example)")
    assert not missing, missing
