"""``prefkit generate`` in-process through click's CliRunner, checked by reading the project back."""

from __future__ import annotations

import json

import click
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.project import Project
from prefkit.pipelines.generation import STAGES
from prefkit.pipelines.generation.run import RUNNERS


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_generate_end_to_end_then_export(tmp_path):
    root = str(tmp_path / "p")
    assert invoke("init", root).exit_code == 0
    result = invoke("generate", "--personas", "1", "--backend", "offline", "--seed", "2", "-p", root)
    assert result.exit_code == 0, result.output
    assert "instances   3" in result.output and "backend offline; 3 instances in the project" in result.output
    out = tmp_path / "cupid.jsonl"
    assert invoke("export", "cupid", str(out), "-p", root).exit_code == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["instance_type"] for r in rows) == ["changing", "consistent", "contrastive"]


def test_one_stage_at_a_time(tmp_path):
    root = str(tmp_path / "p")
    invoke("init", root)
    assert invoke("generate", "personas", "-n", "2", "-p", root).exit_code == 0
    result = invoke("generate", "factors", "--json", "-p", root)
    report = json.loads(result.output)
    assert report["stages"] == [
        {"stage": "factors", "counts": "personas", "written": 2, "skipped": 0, "dropped": 0, "failed": 0}
    ]
    project = Project(root)
    assert project.store.status()["context_factors"] == 16 and project.store.status()["sessions"] == 0
    project.close()


def test_estimate_prices_without_writing(tmp_path):
    root = str(tmp_path / "p")
    invoke("init", root)
    result = invoke("generate", "--estimate", "--personas", "10", "--json", "-p", root)
    estimate = json.loads(result.output)
    assert estimate["personas"] == 10 and estimate["calls"] > 10 * 13 and estimate["cost_usd"] > 0
    assert set(estimate["per_model"]) == {"gpt-4o-mini"} and 1 <= estimate["replies_per_dialogue"] <= 16
    project = Project(root)
    assert project.store.status()["personas"] == 0 and project.store.count("llm_cache") == 0
    project.close()


def test_user_errors_are_one_line(tmp_path):
    root = str(tmp_path / "p")
    invoke("init", root)
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text('"A tram driver in Lisbon."\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["generate", "--seed-personas", str(seeds), "-p", root])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: --seed-licence is required with --seed-personas (e.g. 'CC BY-NC-SA 4.0' for PersonaHub)"
    ]
    result = CliRunner().invoke(
        cli, ["generate", "--seed-personas", str(seeds), "--seed-licence", "MIT", "-n", "3", "-p", root]
    )
    assert result.exit_code == 1 and "has 1 seed personas; --personas asks for 3" in result.output


def test_every_stage_has_a_runner_and_is_a_cli_choice():
    assert list(RUNNERS) == list(STAGES)
    stage_arg = next(p for p in cli.get_command(click.Context(cli), "generate").params if p.name == "stage")
    assert tuple(stage_arg.type.choices) == STAGES


def test_generate_names_what_it_counts_and_agrees_with_status_then_says_what_is_next(tmp_path):
    root = str(tmp_path / "proj")
    made = invoke("init", root)
    assert made.output.splitlines()[-1].startswith(f"next: cd {root} && prefkit generate --personas 2")
    first = invoke("generate", "--personas", "2", "--backend", "offline", "--seed", "0", "-p", root)
    again = invoke("generate", "--personas", "2", "--backend", "offline", "--seed", "0", "-p", root)
    status = json.loads(invoke("status", "--json", "-p", root).output)
    held = (
        f"in the project, as prefkit status counts them: {status['personas']} personas, "
        f"{status['context_factors']} context factors, {status['sessions']} sessions"
    )
    assert status["sessions"] > 2 and held in first.output and held in again.output
    rows = {line.split()[0]: line.split()[1:3] for line in again.output.splitlines()[2:8]}
    assert rows["instances"] == ["0", str(status["instances"])]  # skipped: the instances there, not personas
    assert "written and skipped count personas (personas, factors, sessions)" in first.output
    assert first.output.splitlines()[-1].startswith("next: prefkit tasks create")
    assert invoke("status", "-p", root).output.splitlines()[-1].startswith("next: prefkit tasks create")
