"""Runs as stored objects (offline backend): identity and resume, judging a predictions file, reports
regenerated from the store, estimates without calls, AlpsBench task 4 through the judge."""

from __future__ import annotations

import json

from click.testing import CliRunner
from evalkit import alps_release, cupid_release, write_jsonl
from prefkit.cli import cli


def run_cli(project, *args, code=0):
    result = CliRunner().invoke(cli, [*args, "-p", str(project.root)])
    assert result.exit_code == code, result.output
    return result.output


def test_the_same_command_resumes_the_same_run_without_new_calls(project, tmp_path):
    rel = cupid_release(tmp_path, personas=2)
    args = ("eval", "cupid", "--release", str(rel), "--model", "m", "--backend", "offline", "--json")
    first = json.loads(run_cli(project, *args))
    calls = project.store.count("llm_cache")
    second = json.loads(run_cli(project, *args))
    assert second["run"]["run_id"] == first["run"]["run_id"] and second["rows"] == first["rows"]
    assert project.store.count("llm_cache") == calls and len(project.store.eval.runs()) == 1
    run = first["run"]
    assert run["offline"] is True and run["release_version"] == "1.0.0" and run["release_name"] == "evaltest"
    assert run["settings"]["protocol"] == "cupid-official"  # the default: CUPID's own steps
    assert set(run["prompts"]) == {"infer", "decompose", "match", "match_examples"}
    other = json.loads(run_cli(project, *args, "--oracle", "relevant"))
    assert other["run"]["run_id"] != run["run_id"] and other["run"]["settings"]["oracle"] == "relevant"


def test_a_report_is_regenerated_from_the_stored_items(project, tmp_path):
    rel = cupid_release(tmp_path, personas=2)
    out = json.loads(run_cli(project, "eval", "cupid", "--release", str(rel), "--model", "m", "--json"))
    run_id = out["run"]["run_id"]
    report_dir = tmp_path / "report"
    text = run_cli(project, "eval", "report", run_id[:18], "--format", "json", "--out", str(report_dir))
    report = json.loads(text.split("\nwrote ")[0])
    assert report["rows"] == out["rows"] and report["judge"]["status"] == "not validated"
    assert sorted(p.name for p in report_dir.iterdir()) == [
        "f1_by_position.svg",
        "prf_by_type.svg",
        "report.json",
    ]
    assert "<svg" in (report_dir / "prf_by_type.svg").read_text()


def test_judging_a_predictions_file_calls_only_the_judge(project, tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"persona_id": "p0", "instance_type": "consistent", "inferred": "bullets and short answers"},
            {"persona_id": "p0", "instance_type": "changing", "inferred": ""},
        ],
    )
    out = json.loads(
        run_cli(project, "eval", "cupid", "--release", str(rel), "--predictions", str(preds), "--json")
    )
    assert out["run"]["model"] is None
    stages = {row.stage for row in project.store.llm.ledger()}
    assert stages == {"eval.cupid.official.decompose", "eval.cupid.official.match"}  # no model call
    rows = {r["group"]: r for r in out["rows"] if r["task"] == "inference"}
    assert rows["consistent"]["n_scored"] == 1 and rows["changing"]["n_empty"] == 1
    assert rows["contrastive"]["n_missing"] == 1 and rows["contrastive"]["gold_items"] == 0  # left out
    strict = {r["group"]: r for r in out["rows"] if r["task"] == "inference_strict"}
    assert strict["contrastive"]["gold_items"] == 2  # the strict line counts the missing instance


def test_estimate_prices_the_run_and_makes_no_call(project, tmp_path):
    rel = cupid_release(tmp_path, personas=2)
    out = json.loads(
        run_cli(project, "eval", "cupid", "--release", str(rel), "--model", "m", "--estimate", "--json")
    )
    assert out["estimate"]["calls"] == 6 * (1 + 2 + 1)  # inference + one per gold item + decomposition
    assert project.store.count("llm_cache") == 0 and project.store.eval.runs() == []


def test_oracle_gold_is_for_generation_only(project, tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    out = run_cli(project, "eval", "cupid", "--release", str(rel), "--model", "m", "--oracle", "gold", code=1)
    assert "generation only" in out


def test_alpsbench_task4_is_scored_by_the_judge_per_ability(project, tmp_path):
    gold = {"selected_memory": {"memory_id": "m1", "value": "prefers green tea every morning"}}
    rel = alps_release(
        tmp_path,
        "validation",
        [
            {
                "benchmark_id": "a",
                "task": "task4_ability1",
                "input": {"queries": ["What do I drink?"]},
                "gold": gold,
            },
            {
                "benchmark_id": "b",
                "task": "task4_ability2",
                "input": {
                    "dialogue": [{"role": "user", "text": "I love green tea"}],
                    "queries": ["Morning plan?"],
                },
                "gold": gold,
            },
        ],
    )
    out = json.loads(
        run_cli(
            project,
            "eval",
            "alpsbench",
            "--release",
            str(rel),
            "--task",
            "4",
            "--model",
            "m",
            "--json",
            "--protocol",
            "prefkit",
        )
    )
    rows = {r["group"]: r for r in out["rows"]}
    assert set(rows) == {"ability1", "ability2"} and all(r["n_scored"] == 1 for r in rows.values())
    assert out["run"]["judge_model"] == "gpt-4o-mini" and out["judge"]["validated"] is False
    assert {row.stage for row in project.store.llm.ledger()} == {
        "eval.alps.task4",
        "eval.alps.judge_task4",
    }


def test_exported_predictions_name_their_protocol_and_are_scored_only_by_it(project, tmp_path):
    """Every exported line names the run's protocol; ``eval score`` under that protocol gives the run's
    own rows, under another one it refuses the file naming the line (nothing is scored)."""
    rel = cupid_release(tmp_path, personas=1)
    out = json.loads(run_cli(project, "eval", "cupid", "--release", str(rel), "--model", "m", "--json"))
    run_id = out["run"]["run_id"]
    path = tmp_path / "exported.jsonl"
    said = run_cli(project, "eval", "export", run_id, str(path))
    assert f"(protocol cupid-official) to {path}" in said
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == 3 and {x["protocol"] for x in lines} == {"cupid-official"}
    again = CliRunner().invoke(cli, ["eval", "score", str(path), "--release", str(rel), "--json"])
    assert again.exit_code == 0, again.output
    rescored = json.loads(again.output)
    assert [{k: v for k, v in r.items() if k != "protocol"} for r in rescored] == out["rows"]
    other = CliRunner().invoke(
        cli, ["eval", "score", str(path), "--release", str(rel), "--protocol", "prefkit"]
    )
    assert other.exit_code == 1
    assert other.output.strip() == (
        f"error: {path}:1: this prediction was made under protocol cupid-official; score it with --protocol "
        'cupid-official (not prefkit), or remove the line\'s "protocol" field to score it as a plain predictions file'
    )


def test_a_mixed_report_labels_every_row_with_its_protocol(project, tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    base = ("eval", "cupid", "--release", str(rel), "--model", "m", "--json")
    official = json.loads(run_cli(project, *base))["run"]["run_id"]
    plain = json.loads(run_cli(project, *base, "--protocol", "prefkit"))["run"]["run_id"]
    refused = CliRunner().invoke(cli, ["eval", "report", official, plain, "-p", str(project.root)])
    assert refused.exit_code == 1 and "different protocols (cupid-official, prefkit)" in refused.output
    text = run_cli(
        project, "eval", "report", official, plain, "--mix-protocols", "--out", str(tmp_path / "r")
    )
    assert "**Mixed protocols** (cupid-official, prefkit)" in text
    rows = [line for line in text.splitlines() if line.startswith("| cupid-inference-")]
    assert rows and all(
        (official in r and "| cupid-official |" in r) or (plain in r and "| prefkit |" in r) for r in rows
    )
    assert {official, plain} <= {r.split("|")[1].strip() for r in rows}
