"""The AlpsBench journey on real packets, end to end, read by the benchmark's own contract.

One journey (tests/journeykit.py, every step the real ``prefkit`` command) on 100 packets of the real
AlpsBench sample in ../shared, which carry their own task 2, task 3 (d100) and task 4 rows: import ->
memory_verify labels from a label file -> build -> task_qc labels -> check -> cut -> verify. Then the
release is read as AlpsBench's tools and ``datasets`` users read it: the public layout's file names,
fields and 1:1:3 splits, no test gold anywhere public, oracle predictions scoring 1.0 through
``prefkit eval alpsbench``, and a default config with declared features.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from journeykit import Journey, alpsbench_journey, read_jsonl, write_jsonl

pytestmark = [pytest.mark.shared_data, pytest.mark.slow, pytest.mark.timeout(1800)]

N_PACKETS = 100
SPLITS = ("dev", "validation", "test")
#: AlpsBench's public layout (the authors' public_layout_manifest and data loaders): the top-level
#: keys of each task's model_input and reference_output rows, and the keys of their nested objects.
CONTRACT = {
    "task1": (
        {"benchmark_id", "task", "session_id", "canonical_id", "stratum", "input"},
        {"user_id", "line_index", "sessions", "dialogue", "metadata"},
        {"benchmark_id", "task", "session_id", "canonical_id", "gold"},
        {"memory_items", "memory_stage1_candidates", "selected_memory_id"},
    ),
    "task2": (
        {"benchmark_id", "task", "session_id", "canonical_id", "stratum", "input"},
        {"record_id", "old_dialogue", "new_dialogue", "memory", "query", "metadata"},
        {"benchmark_id", "task", "session_id", "canonical_id", "gold"},
        {"answer"},
    ),
    "task3": (
        {"benchmark_id", "task", "session_id", "canonical_id", "stratum", "input"},
        {"dialogue", "candidate_memories", "query", "metadata"},
        {"benchmark_id", "task", "session_id", "canonical_id", "gold"},
        {"selected_memory_id", "selected_memory"},
    ),
    "task4": (
        {"benchmark_id", "task", "ability", "session_id", "canonical_id", "stratum", "input"},
        {"query", "queries", "model_input", "audit_context"},
        {"benchmark_id", "task", "ability", "session_id", "canonical_id", "gold"},
        {"memory_key", "selected_memory", "extracted_memory", "conversation"},
    ),
}


@pytest.fixture(scope="module")
def journey(alps_packets, tmp_path_factory) -> Journey:
    return alpsbench_journey(alps_packets, tmp_path_factory.mktemp("journey"), N_PACKETS)


def release(j: Journey) -> Path:
    return j.root / "releases" / "1.0.0"


def tracks(root: Path, split: str) -> dict[str, Path]:
    """``{track: folder}`` of one split of benchmark_data/ (task 3 levels live under task3/d<N>)."""
    out = {}
    for f in sorted((root / "benchmark_data" / split).rglob("model_input.jsonl")):
        rel = f.parent.relative_to(root / "benchmark_data" / split).parts
        out["_".join(rel) if rel[0] == "task3" else rel[0]] = f.parent
    return out


def test_the_journey_ends_in_a_verified_release_whose_only_failing_gate_is_gold(journey):
    check = json.loads(journey.outputs["release check"])
    failing = {g["gate"] for g in check["gates"] if not g["passed"]}
    assert failing == {"gold_accuracy"}  # no gold items in this journey: the override names it
    gates = {g["gate"]: g for g in check["gates"]}
    assert gates["test_gold_private"]["passed"] and gates["test_gold_private"]["value"] == 0
    assert "none of" in gates["test_gold_private"]["summary"]  # it measured something
    assert "OVERRIDE  failing gates (gold_accuracy)" in journey.outputs["release cut"]
    assert re.match(r"OK proj 1\.0\.0: \d+ files match the manifest", journey.outputs["release verify"])


def test_the_packets_rows_are_the_source_and_the_build_fills_only_what_they_lack(journey):
    kept = {
        t: int(n) for n, t in re.findall(r"kept (\d+) (\S+) rows from the packets", journey.outputs["build"])
    }
    built = {t: int(n) for n, t in re.findall(r"built (\d+) (\S+) rows", journey.outputs["build"])}
    assert kept["task2"] == N_PACKETS and kept["task3_d100"] == N_PACKETS
    assert "task2" not in built and "task3_d100" not in built  # every sampled packet carries them
    assert built["task3_d300"] > 0  # the packets carry d100 only
    card = (release(journey) / "README.md").read_text(encoding="utf-8")
    row = re.search(r"\| `alpsbench_task2` \| (\d+) \| (\d+) \| (\d+) \|", card)
    assert row and (int(row[1]), int(row[2]), int(row[3])) == (N_PACKETS, 0, 0)
    row = re.search(r"\| `alpsbench_task3_d300` \| (\d+) \| (\d+) \| (\d+) \|", card)
    assert row and int(row[1]) == 0 and 0 < int(row[2]) <= built["task3_d300"]


def test_the_public_layout_follows_alpsbench_contract(journey):
    root = release(journey)
    dev = tracks(root, "dev")
    assert (
        set(dev)
        == set(tracks(root, "validation"))
        == set(tracks(root, "test"))
        == set(tracks(root, "examples"))
    )
    assert {"task1", "task2", "task3_d100", "task3_d300"} <= set(dev)
    for track, folder in dev.items():
        task = track[:5]
        top_in, nested_in, top_ref, nested_ref = CONTRACT[task]
        counts = {}
        for split in SPLITS:
            where = root / "benchmark_data" / split / folder.relative_to(root / "benchmark_data" / "dev")
            inputs = read_jsonl(where / "model_input.jsonl")
            counts[split] = len(inputs)
            assert all(set(r) == top_in and set(r["input"]) == nested_in for r in inputs), (track, split)
            assert all(r["task"] == task for r in inputs)
            if split == "test":
                assert not (where / "reference_output.jsonl").exists()
            else:
                refs = read_jsonl(where / "reference_output.jsonl")
                assert [r["benchmark_id"] for r in refs] == [r["benchmark_id"] for r in inputs]
                assert all(set(r) == top_ref and set(r["gold"]) == nested_ref for r in refs), (track, split)
        n = sum(counts.values())
        assert (counts["dev"], counts["validation"], counts["test"]) == (n // 5, n // 5, n - 2 * (n // 5)), (
            track
        )
        rel = folder.relative_to(root / "benchmark_data" / "dev")
        examples = read_jsonl(root / "benchmark_data" / "examples" / rel / "model_input.jsonl")
        dev_ids = {r["benchmark_id"] for r in read_jsonl(folder / "model_input.jsonl")}
        assert len(examples) == min(2, len(dev_ids)) and {r["benchmark_id"] for r in examples} <= dev_ids


def test_no_test_gold_is_anywhere_public(journey):
    root, private = release(journey), journey.root / "releases-private" / "1.0.0"
    test_ids = {}
    for f in (private / "hidden" / "private_gold" / "test").rglob("reference_output.jsonl"):
        for r in read_jsonl(f):
            test_ids[r["benchmark_id"]] = json.dumps(r["gold"], ensure_ascii=False, sort_keys=True)
    assert test_ids
    for f in [*root.rglob("reference_output.jsonl"), *root.glob("data/alpsbench_*_gold/*.jsonl")]:
        for r in read_jsonl(f):
            gold = r["gold"] if isinstance(r["gold"], dict) else json.loads(r["gold"])
            text = json.dumps(gold, ensure_ascii=False, sort_keys=True)
            assert test_ids.get(r["benchmark_id"]) != text, f"{f}: test gold of {r['benchmark_id']}"
    from prefkit.exports.private_gold import Secrets, release_leaks

    secrets = Secrets()
    for bid, text in test_ids.items():
        secrets.add(json.loads(text), bid)
    assert len(secrets) > 100 and release_leaks(root, secrets) == []  # JSONL, Parquet, DuckDB, the card


def oracle(root: Path, task: str, split: str) -> list[dict]:
    lines = []
    for track, folder in tracks(root, split).items():
        if track[:5] != task:
            continue
        for r in read_jsonl(folder / "reference_output.jsonl"):
            g, bid = r["gold"], r["benchmark_id"]
            lines.append(
                {
                    "task1": {"benchmark_id": bid, "memory_items": g.get("memory_items")},
                    "task2": {"benchmark_id": bid, "memory_items": g.get("answer")},
                    "task3": {
                        "benchmark_id": bid,
                        "track": track,
                        "answer": "",
                        "reason": "",
                        "selected_memory_id": g.get("selected_memory_id"),
                    },
                    "task4": {
                        "benchmark_id": bid,
                        "track": track,
                        "answer": (g.get("selected_memory") or {}).get("value", ""),
                        "used_memory_fact": (g.get("selected_memory") or {}).get("value", ""),
                    },
                }[task]
            )
    return lines


@pytest.mark.parametrize("split", ["dev", "validation"])
def test_oracle_predictions_score_one_on_every_track_through_prefkit_eval(journey, split, tmp_path):
    root = release(journey)
    for task in ("1", "2", "3", "4"):
        preds = write_jsonl(tmp_path / f"task{task}.jsonl", oracle(root, f"task{task}", split))
        out = journey.run(
            "eval",
            "eval",
            "alpsbench",
            "--release",
            str(root),
            "--task",
            task,
            "--split",
            split,
            "--predictions",
            str(preds),
            "--json",
        )
        rows = json.loads(out)["rows"]
        assert rows and all(r["main_score"] == 1.0 and r["num_rows"] > 0 for r in rows), (task, rows)
        assert sum(r["num_rows"] for r in rows) == len(read_jsonl(preds))


def test_datasets_loads_the_release_without_a_config_name_with_one_type_per_column(journey, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    root = str(release(journey))
    default = datasets.load_dataset(root, split="test")  # no "Config name is missing"
    assert "benchmark_id" in default.column_names and len(default) > 0
    assert default[0]["task"] == "task1"  # the verified task 1 track is the default
    for config in ("alpsbench_task1", "alpsbench_task4_ability1"):
        ds = datasets.load_dataset(root, config, split="dev")
        assert ds.features["ability"].dtype == "string", config  # declared: not null in task 1
