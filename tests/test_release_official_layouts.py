"""Releases the benchmarks' own tools read: AlpsBench's public layout (``benchmark_data/``) checked file
by file against the field lists of its ``src/benchmark/data.py`` and the checks of its validator, and
CUPID's default config and one-file-per-instance export (its ``evaluation/run.py --data_dir``)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures_alps import write_packets
from prefkit.cli import cli
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.exports.release import cut_release
from prefkit.pipelines.eval.runs import score_alps_file
from prefkit.pipelines.ingest import alpsbench
from test_generation_run import generate
from test_release_support import add_users, cupid_row
from test_verification import ANNOTATORS, tasks_by_session, verify

# Written from reading ThisIsCosine/AlpsBench src/benchmark/data.py (load_task*_authoritative_pairs):
# the keys of every model_input / reference_output row, and of its "input" / "gold" object, in order.
INPUT = {
    "task1": (
        ["benchmark_id", "task", "session_id", "canonical_id", "stratum", "input"],
        ["user_id", "line_index", "sessions", "dialogue", "metadata"],
    ),
    "task2": (
        ["benchmark_id", "task", "session_id", "canonical_id", "stratum", "input"],
        ["record_id", "old_dialogue", "new_dialogue", "memory", "query", "metadata"],
    ),
    "task3": (
        ["benchmark_id", "task", "session_id", "canonical_id", "stratum", "input"],
        ["dialogue", "candidate_memories", "query", "metadata"],
    ),
    "task4": (
        ["benchmark_id", "task", "ability", "session_id", "canonical_id", "stratum", "input"],
        ["query", "queries", "model_input", "audit_context"],
    ),
}
REFERENCE = {
    "task1": (
        ["benchmark_id", "task", "session_id", "canonical_id", "gold"],
        ["memory_items", "memory_stage1_candidates", "selected_memory_id"],
    ),
    "task2": (["benchmark_id", "task", "session_id", "canonical_id", "gold"], ["answer"]),
    "task3": (
        ["benchmark_id", "task", "session_id", "canonical_id", "gold"],
        ["selected_memory_id", "selected_memory"],
    ),
    "task4": (
        ["benchmark_id", "task", "ability", "session_id", "canonical_id", "gold"],
        ["memory_key", "selected_memory", "extracted_memory", "conversation"],
    ),
}


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def alps_project(project, tmp_path, n=15):
    project.store.content.import_bundle(alpsbench.build_bundle(write_packets(tmp_path / "packets", n=n)))
    toml = project.root / "prefkit.toml"  # no memory_verify labels here: the packets' gold is the reference
    toml.write_text(
        toml.read_text().replace("[release]\n", '[release]\nalpsbench_reference = "imported"\n', 1)
    )
    project.__dict__.pop("config", None)
    return cut_release(project, "1.0.0", override="layout test: no labels in this project")


def test_every_alpsbench_file_follows_the_public_layout(project, tmp_path):
    cut = alps_project(project, tmp_path)
    root = cut.path / "benchmark_data"
    found = {p.relative_to(root).parent.as_posix() for p in root.glob("*/**/model_input.jsonl")}
    tracks = {t.split("/", 1)[1] for t in found}
    assert {"task1", "task2", "task4_ability1"} <= tracks and {
        t for t in tracks if t.startswith("task3")
    } == {"task3/d2", "task3/d3"}  # task 3 levels in task3/d<N>/ folders (the fixture's pool sizes)
    splits = ("dev", "validation", "test")
    with_dev = {t for t in tracks if f"dev/{t}" in found}  # a track of 4 rows or fewer is all test
    assert with_dev and found == {
        f"{s}/{t}" for s in splits for t in tracks if s == "test" or t in with_dev
    } | {f"examples/{t}" for t in with_dev}  # examples come from dev only
    private = project.root / "releases-private" / "1.0.0" / "hidden" / "private_gold" / "test"
    for path in sorted(root.glob("*/**/model_input.jsonl")):
        split, track_dir = path.relative_to(root).parts[0], path.parent
        task = track_dir.relative_to(root / split).parts[0][:5]
        inputs = read(path)
        ref_path = track_dir / "reference_output.jsonl"
        if split == "test":  # the public test split has inputs only; its references are private
            assert not ref_path.exists()
            refs = read(private / track_dir.relative_to(root / split) / "reference_output.jsonl")
        else:
            refs = read(ref_path)
        assert inputs and len(inputs) == (2 if split == "examples" else len(inputs))
        ids = [r["benchmark_id"] for r in inputs]
        assert len(set(ids)) == len(ids) and ids == [r["benchmark_id"] for r in refs]  # the validator's rule
        for row in inputs:
            assert list(row) == INPUT[task][0] and list(row["input"]) == INPUT[task][1], (path, list(row))
            assert row["task"] == task and isinstance(row["input"], dict)
        for row in refs:
            assert list(row) == REFERENCE[task][0] and list(row["gold"]) == REFERENCE[task][1], (
                path,
                list(row),
            )
        if task == "task1":
            assert any(r["input"]["dialogue"] for r in inputs) and any(
                r["gold"]["memory_items"] for r in refs
            )
            assert all(r["input"]["sessions"][0]["turns"] == r["input"]["dialogue"] for r in inputs)
        if task == "task4":
            assert all(
                r["ability"] == "ability1" and r["input"]["model_input"]["selected_memory"] for r in inputs
            )
            assert all(r["gold"]["selected_memory"] for r in refs)
        if task == "task3":
            assert all(r["input"]["candidate_memories"] and r["input"]["query"] for r in inputs)
    dev = read(root / "dev/task1/model_input.jsonl")
    test = read(root / "test/task1/model_input.jsonl")
    assert (len(dev), len(read(root / "validation/task1/model_input.jsonl")), len(test)) == (3, 3, 9)  # 1:1:3
    assert not {r["benchmark_id"] for r in dev} & {r["benchmark_id"] for r in test}  # no split leakage
    files = {f.path for f in cut.manifest.files}
    assert "benchmark_data/dev/task1/reference_output.jsonl" in files  # hashed like every release file
    assert not [p for p in files if "test" in p and "reference_output" in p]


def test_the_public_scorer_reads_the_layout_through_prefkit(project, tmp_path):
    """An oracle prediction file built from the layout's dev references scores 1 under alpsbench-public."""
    cut = alps_project(project, tmp_path)
    refs = read(cut.path / "benchmark_data" / "dev" / "task1" / "reference_output.jsonl")
    oracle = tmp_path / "oracle.jsonl"
    oracle.write_text(
        "".join(
            json.dumps({"benchmark_id": r["benchmark_id"], "memory_items": r["gold"]["memory_items"]}) + "\n"
            for r in refs
        ),
        encoding="utf-8",
    )
    (row,) = score_alps_file(cut.path, "task1", "dev", oracle)
    assert (row["num_rows"], row["main_score"]) == (len(refs), 1.0)


def test_card_names_the_protocols_and_the_default_cupid_config(project, tmp_path):
    CliRunner().invoke(cli, ["generate", "--personas", "1", "--seed", "0", "-p", str(project.root)])
    project.config.release.allow_offline = True
    cut = cut_release(project, "0.1.0", override="card test: no labels")
    card = (cut.path / "README.md").read_text(encoding="utf-8")
    header = card.split("---")[1]
    # no verified instance yet: the unverified CUPID config is the one default (the cupid config once verified)
    assert '- config_name: "cupid_unverified"\n  default: true\n  data_files:' in header
    assert header.count("default: true") == 1
    assert "cupid-official" in card and "consistent_prior" in card and "decision_styles" in card


def test_per_instance_names_are_cupids_safe_unique_and_short():
    from prefkit.exports.cupid import instance_file_names

    odd = "team.a/" + "x" * 300  # a ".", a "/" and 300 characters
    rows = [
        cupid_row(0, "p2"),
        cupid_row(1, "p2"),
        cupid_row(0, odd),
        cupid_row(1, odd),
        cupid_row(0, "p.2"),
        cupid_row(0, "p_2"),
        cupid_row(0, "tab\there"),
        cupid_row(0, odd + "y"),
    ]
    names = instance_file_names(rows)
    assert names[:2] == ["p2+consistent.json", "p2+contrastive.json"]  # as CUPID's synthesis names them
    assert len(set(names)) == len(rows)
    # CUPID names an instance (and its results file) by the file name up to the first "."
    assert len({n.split(".")[0] for n in names}) == len(rows) and all(n.count(".") == 1 for n in names)
    for name in names:
        assert name.endswith(".json") and "/" not in name and name.isprintable() and name.isascii()
        assert len(name.encode()) < 255 and name.count("+") == 1
    assert names[2].startswith("team_a_xxx") and len(names[2].encode()) <= 96 + len("+consistent.json")
    assert (
        names[2] != names[7]
    )  # two long ids alike in their first characters stay apart (hash of the whole id)
    # two rows of one persona and type: each named by its content; identical rows numbered
    twice = instance_file_names([cupid_row(0, "p2"), cupid_row(3, "p2"), cupid_row(0, "p2")])
    assert (
        twice[0].startswith("p2+consistent-")
        and len(set(twice)) == 3
        and twice[2] == twice[0][:-5] + "-2.json"
    )


def test_per_instance_export_writes_the_files_the_evaluator_reads(project, tmp_path):
    CliRunner().invoke(cli, ["generate", "--personas", "2", "--seed", "0", "-p", str(project.root)])
    out = tmp_path / "instances"
    result = CliRunner().invoke(cli, ["export", "cupid", "--per-instance", str(out), "-p", str(project.root)])
    assert result.exit_code == 0, result.output
    files = sorted(out.iterdir())
    assert len(files) == 6 and len({f.name.split(".")[0] for f in files}) == 6
    for f in files:
        row = json.loads(f.read_text(encoding="utf-8"))
        # what evaluate_parallel reads of an instance
        assert {
            "current_request",
            "current_contextual_preference",
            "current_checklist",
            "prior_interactions",
        } <= set(row)
        assert f.name == f"{row['persona_id']}+{row['instance_type']}.json"
    again = CliRunner().invoke(cli, ["export", "cupid", "--per-instance", str(out), "-p", str(project.root)])
    assert again.exit_code == 1 and "not empty" in again.output


@pytest.fixture
def verified_release(project):
    """A generated CUPID project whose every session three annotators verified, cut as 1.0.0."""
    generate(project, personas=1, seed=0)
    add_users(project.store, *ANNOTATORS)
    create_tasks(project, "preference_expressed", overlap=3, batch="b1")
    for task in tasks_by_session(project.store).values():
        verify(project.store, task)
    return cut_release(project, "1.0.0", override="layout test: offline content, no gold items")


def test_a_release_ships_its_cupid_rows_as_cupids_data_dir(verified_release, project, tmp_path):
    from prefkit.exports.cupid import INSTANCE_DIR, instance_file_names
    from prefkit.exports.release_integrity import verify_release

    rel = verified_release.path
    rows = read(rel / "data" / "cupid" / "test.jsonl")
    assert len(rows) == verified_release.manifest.counts["cupid"] == 3
    folder = rel / INSTANCE_DIR
    names = sorted(p.name for p in folder.iterdir())  # nothing else in the folder (the canary is beside it)
    assert not [n for n in names if project.canary().encode() in (folder / n).read_bytes()]
    assert (
        names
        == sorted(instance_file_names(rows))
        == sorted(f"{r['persona_id']}+{r['instance_type']}.json" for r in rows)
    )
    listed = {f.path: f.sha256 for f in verified_release.manifest.files}
    for row in rows:
        path = folder / f"{row['persona_id']}+{row['instance_type']}.json"
        assert json.loads(path.read_bytes()) == row  # the released row, as CUPID's evaluator loads it
        assert listed[f"{INSTANCE_DIR}/{path.name}"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert verify_release(rel).problems == []
    card = (rel / "README.md").read_text(encoding="utf-8")
    assert (
        "--data_dir <this release>/cupid_instances" in card and "one instance per persona is scored" in card
    )

    # the same files from the release alone (no project opened) and from the project's verified rows
    from_release, from_project = tmp_path / "from-release", tmp_path / "from-project"
    done = CliRunner().invoke(
        cli,
        [
            "export",
            "cupid",
            "--per-instance",
            str(from_release),
            "--release",
            str(rel),
            "-p",
            str(tmp_path / "no-project-here"),
        ],
    )
    assert done.exit_code == 0 and "wrote 3 verified CUPID instances" in done.output, done.output
    done = CliRunner().invoke(
        cli, ["export", "cupid", "--verified", "--per-instance", str(from_project), "-p", str(project.root)]
    )
    assert done.exit_code == 0, done.output

    def tree(d):
        return {p.name: p.read_bytes() for p in d.iterdir()}

    assert tree(from_release) == tree(from_project) == tree(folder)

    edited = folder / names[0]
    edited.write_bytes(edited.read_bytes().replace(b"?", b"!", 1))
    assert verify_release(rel).problems == [f"{INSTANCE_DIR}/{names[0]}: sha256 differs from the manifest"]
    cupid_rows_file = rel / "data" / "cupid" / "test.jsonl"
    cupid_rows_file.write_bytes(cupid_rows_file.read_bytes().replace(b"?", b"!", 1))
    refused = CliRunner().invoke(
        cli, ["export", "cupid", "--per-instance", str(tmp_path / "again"), "--release", str(rel)]
    )
    assert refused.exit_code == 1 and "sha256 differs from the manifest" in refused.output


def test_the_cupid_config_is_the_default_one():
    from prefkit.exports.card import yaml_header
    from prefkit.exports.cupid import cupid_arrow_schema
    from prefkit.exports.release_data import ConfigData

    configs = []
    for name in ("cupid", "cupid_unverified"):
        cfg = ConfigData(name, "d", cupid_arrow_schema(), id_column=None)
        cfg.add_json("test", "k", "{}")
        configs.append(cfg.finish())
    meta = {
        "name": "n",
        "hf_licence": "mit",
        **{
            k: []
            for k in ("task_categories", "size_categories", "annotations_creators", "source_datasets", "tags")
        },
    }
    header = yaml_header(meta, configs)
    assert '- config_name: "cupid"\n  default: true\n  data_files:\n  - split: "test"' in header
    assert header.count("default: true") == 1


def test_every_release_carries_the_projects_canary_beside_the_official_files(project, tmp_path):
    """The canary GUID made at init is in the card, the manifest, croissant.json and the DuckDB file's
    metadata table, and in no file AlpsBench's tools read (benchmark_data/)."""
    import duckdb
    from prefkit.schemas.curation import canary_sentence

    guid = project.config.release.canary
    assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", guid)
    cut = alps_project(project, tmp_path)
    assert f"`{canary_sentence(guid)}`" in (cut.path / "README.md").read_text(encoding="utf-8")
    assert json.loads((cut.path / "manifest.json").read_text())["canary"] == guid == cut.manifest.canary
    assert json.loads((cut.path / "croissant.json").read_text())["description"].endswith(
        canary_sentence(guid)
    )
    with duckdb.connect(str(next(cut.path.glob("*.duckdb"))), read_only=True) as con:
        assert con.sql("SELECT value FROM metadata WHERE key = 'canary'").fetchall() == [(guid,)]
    official = [p for p in (cut.path / "benchmark_data").rglob("*") if p.is_file()]
    assert official and not [p for p in official if guid.encode() in p.read_bytes()]


def test_an_older_project_gets_its_canary_on_first_use(project):
    toml = project.root / "prefkit.toml"
    toml.write_text(re.sub(r'(?m)^canary = ".*"\n', "", toml.read_text()))  # a project made before canaries
    older = Project(project.root)
    assert older.config.release.canary == ""
    guid = older.canary()
    assert guid and f'canary = "{guid}"' in toml.read_text() and Project(project.root).canary() == guid


FIRST_CANARY = """
import sys
from prefkit.curation.project import Project
project = Project(sys.argv[1])
print(repr(project.config.release.canary), flush=True)  # read blank, before the other writes
sys.stdin.readline()
print(project.canary(), flush=True)
"""


def test_two_processes_making_the_canary_at_once_write_one_guid_and_both_get_it(project):
    import subprocess
    import sys

    toml = project.root / "prefkit.toml"
    toml.write_text(re.sub(r'(?m)^canary = ".*"\n', "", toml.read_text()))
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", FIRST_CANARY, str(project.root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    read_first = [racer.stdout.readline().strip() for racer in racers]
    said = [racer.communicate("go\n", timeout=60)[0].strip() for racer in racers]
    written = Project(project.root).config.release.canary
    assert read_first == ["''", "''"] and [r.returncode for r in racers] == [0, 0]
    assert said == [written, written] and re.fullmatch(r"[0-9a-f-]{36}", written)
    assert toml.read_text().count("canary = ") == 1
