"""AlpsBench scoring on hand-made predictions for each task, both row layouts, and the test-gold rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from evalkit import JAZZ, RUN, TEA, alps_release, mem, row, task1, write_config, write_jsonl
from prefkit.cli import cli
from prefkit.pipelines.eval import alps_metrics as m
from prefkit.pipelines.eval.release import EvalInputError
from prefkit.pipelines.eval.runs import score_alps_file


def test_pair_score_follows_the_documented_weights():
    assert m.pair_score(TEA, dict(TEA)) == pytest.approx(1.0)
    assert m.label_similarity("Preferences/Food", "Preferences/Drink") == 0.5  # 2 * 1 / (2 + 2)
    assert m.confidence_score(0.9, 0.75) == 1.0 and m.confidence_score(0.9, 0.45) == pytest.approx(0.5)
    other = {**TEA, "label": "Preferences/Drink", "type": "indirect", "confidence": 0.2}
    # label 0.5, value 1, type 0, confidence (|0.7| - 0.2) / 0.5 -> 0
    assert m.pair_score(TEA, other) == pytest.approx(0.4 * 0.5 + 0.4 * 1.0)
    assert m.pair_score(TEA, JAZZ) < m.MIN_PAIR_SCORE


def test_task1_precision_recall_f1_from_one_to_one_matches(tmp_path):
    rel = alps_release(
        tmp_path,
        "validation",
        [task1("s1", TEA, RUN), task1("s2", JAZZ)],
    )
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {
                "benchmark_id": "s1",
                "memory_items": [
                    dict(TEA),
                    dict(RUN),
                    mem("x", "Owns a red bicycle", "Possessions/Vehicles"),
                ],
            },
            {"benchmark_id": "s2", "memory_items": []},
        ],
    )
    (r,) = score_alps_file(rel, "task1", "validation", preds, protocol="prefkit")
    assert (r["matched"], r["n_pred"], r["n_gold"]) == (2, 3, 3)
    assert r["precision"] == pytest.approx(2 / 3, abs=1e-6) and r["recall"] == pytest.approx(2 / 3, abs=1e-6)
    assert r["mean_row_f1"] == pytest.approx((0.8 + 0.0) / 2)


def test_task2_accuracy_on_retained_added_and_modified_memories(tmp_path):
    new_run = {**RUN, "memory_id": "m2_updated", "value": "Now swims every Sunday instead of running"}
    added = mem("m_new_1", "Adopted a rescue cat", "Personal_Background/Pets")
    rel = alps_release(
        tmp_path,
        "dev",
        [
            row(
                "s1",
                "task2",
                {"memory": [TEA, RUN], "old_dialogue": [], "new_dialogue": []},
                {"answer": [TEA, new_run, added]},
            ),
        ],
    )
    stale = write_jsonl(tmp_path / "stale.jsonl", [{"benchmark_id": "s1", "memory_items": [TEA, RUN, added]}])
    rows = {r["group"]: r for r in score_alps_file(rel, "task2", "dev", stale, protocol="prefkit")}
    assert [rows[g]["accuracy"] for g in ("retained", "added", "modified")] == [1.0, 1.0, 0.0]
    assert rows["modified"]["stale"] == 1
    good = write_jsonl(tmp_path / "good.jsonl", [{"benchmark_id": "s1", "memory_items": [TEA, new_run]}])
    rows = {r["group"]: r for r in score_alps_file(rel, "task2", "dev", good, protocol="prefkit")}
    assert [rows[g]["correct"] for g in ("retained", "added", "modified")] == [1, 0, 1]


def test_task3_accuracy_per_distractor_level(tmp_path):
    rel = tmp_path / "rel"
    cands = [{"memory_id": f"m{i}", "value": f"v{i}"} for i in range(4)]
    write_config(
        rel,
        "alpsbench_task3_d100",
        "validation",
        [
            {
                "id": f"a{i}",
                "session_id": "s",
                "model_input": json.dumps({"query": "q", "candidate_memories": cands}),
                "reference_output": json.dumps({"selected_memory_id": "m1"}),
            }
            for i in range(2)
        ],
    )
    write_config(
        rel,
        "alpsbench_task3_d300",
        "validation",
        [
            {
                "id": "b0",
                "session_id": "s",
                "model_input": json.dumps({"query": "q", "candidate_memories": cands}),
                "reference_output": json.dumps({"selected_memory_id": "m2"}),
            },
        ],
    )
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"benchmark_id": "a0", "answer": "", "reason": "", "selected_memory_id": "m1"},
            {"benchmark_id": "a1", "answer": "", "reason": "", "selected_memory_id": "m3"},
            {"benchmark_id": "b0", "answer": "", "reason": "", "selected_memory_id": "M2"},
        ],
    )
    rows = {r["group"]: r for r in score_alps_file(rel, "task3", "validation", preds, protocol="prefkit")}
    assert (rows["d100"]["accuracy"], rows["d100"]["n_rows"], rows["d300"]["accuracy"]) == (0.5, 2, 1.0)


def test_task4_judge_score_per_ability_and_the_fact_proxy(tmp_path):
    gold = {"selected_memory": {"memory_id": "m1", "value": "Prefers green tea"}}
    rel = alps_release(
        tmp_path,
        "validation",
        [
            row("x1", "task4_ability1", {"queries": ["What should I drink?"]}, gold),
            row("x2", "task4_ability1", {"queries": ["Breakfast idea?"]}, gold),
            row("y1", "task4_ability2", {"queries": ["Plan my day"]}, gold),
        ],
    )
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {
                "benchmark_id": "x1",
                "answer": "Green tea.",
                "used_memory_fact": "prefers green tea",
                "score": 9,
            },
            {"benchmark_id": "x2", "answer": "Toast.", "used_memory_fact": "likes toast", "score": 4},
            {"benchmark_id": "y1", "answer": "A plan.", "used_memory_fact": "", "score": 6},
        ],
    )
    rows = {r["group"]: r for r in score_alps_file(rel, "task4", "validation", preds, protocol="prefkit")}
    assert (rows["ability1"]["mean_score"], rows["ability1"]["fact_match_rate"]) == (6.5, 0.5)
    assert rows["ability2"]["distribution"]["6"] == 1


def layout_rows(bid, task, inp, gold):
    """An input row and a gold row as the release writes them (``input`` / ``gold`` as JSON text)."""
    head = {"benchmark_id": bid, "task": task, "session_id": bid, "canonical_id": bid}
    return {**head, "stratum": "UNKNOWN", "ability": None, "input": json.dumps(inp)}, {
        **head,
        "ability": None,
        "gold": json.dumps(gold),
    }


def test_test_split_gold_is_read_only_from_the_private_configs(tmp_path):
    rel = tmp_path / "releases" / "1.0.0"
    inp, gold = layout_rows(
        "t1", "task3", {"query": "q", "candidate_memories": []}, {"selected_memory_id": "m1"}
    )
    write_config(rel, "alpsbench_task3_d100", "test", [inp])
    write_config(
        rel, "alpsbench_task3_d100_gold", "test", [{**gold, "gold": json.dumps({"selected_memory_id": "m9"})}]
    )
    preds = write_jsonl(tmp_path / "p.jsonl", [{"benchmark_id": "t1", "selected_memory_id": "m1"}])
    with pytest.raises(EvalInputError, match="test gold is read only from the private configs"):
        score_alps_file(rel, "task3", "test", preds, protocol="prefkit")
    private = tmp_path / "releases-private" / "1.0.0" / "alpsbench_task3_d100_gold"
    private.mkdir(parents=True)
    write_jsonl(private / "test.jsonl", [gold])  # as `prefkit release cut` writes it (no data/ level)
    (r,) = score_alps_file(
        rel, "task3", "test", preds, protocol="prefkit"
    )  # releases-private/<version> is found by default
    assert (r["group"], r["accuracy"]) == ("d100", 1.0)  # the private gold (m1), never the public row's m9


def test_a_cut_release_is_scored_with_its_public_gold_and_its_private_test_gold(project, tmp_path):
    from prefkit.exports.release import cut_release
    from prefkit.pipelines.ingest import alpsbench

    examples = Path(__file__).resolve().parent.parent / "pipelines" / "examples" / "alpsbench"
    project.store.content.import_bundle(alpsbench.build_bundle(examples))
    # No memory_verify labels here: the examples' own gold is Task 1's reference.
    toml = project.root / "prefkit.toml"
    toml.write_text(
        toml.read_text().replace("[release]\n", '[release]\nalpsbench_reference = "imported"\n', 1)
    )
    project.__dict__.pop("config", None)
    cut = cut_release(project, "1.0.0", override="eval test: no labels in this project")
    # the task 1 gold of the test split: in the task's own config, or the unverified one when the release
    # reference is the verified gold and nothing is verified in this project
    (private,) = (project.root / "releases-private" / "1.0.0").glob("alpsbench_*_gold/test.jsonl")
    config = "alpsbench_unverified" if "unverified" in private.parent.name else "alpsbench"
    gold_rows = [json.loads(line) for line in private.read_text().splitlines()]
    assert gold_rows and not list((cut.path / "data").glob("alpsbench_*_gold/test.jsonl"))
    oracle = write_jsonl(
        tmp_path / "oracle.jsonl",
        [
            {"benchmark_id": g["benchmark_id"], "memory_items": json.loads(g["gold"])["memory_items"]}
            for g in gold_rows
        ],
    )
    with pytest.raises(EvalInputError, match="test gold is read only from the private configs"):
        score_alps_file(
            cut.path, "task1", "test", oracle, config=config, private=tmp_path, protocol="prefkit"
        )
    (r,) = score_alps_file(cut.path, "task1", "test", oracle, config=config, protocol="prefkit")
    assert (r["n_rows"], r["precision"], r["recall"], r["f1"]) == (len(gold_rows), 1.0, 1.0, 1.0)


def test_eval_alpsbench_runs_the_offline_model_and_stores_the_run(tmp_path, project):
    rel = tmp_path / "rel"
    cands = [
        {"memory_id": "m1", "value": "loves hiking in the alps"},
        {"memory_id": "m2", "value": "plays chess"},
    ]
    write_config(
        rel,
        "alpsbench",
        "validation",
        [
            row(
                "r1",
                "task3",
                {"query": "Where should I go hiking?", "candidate_memories": cands},
                {"selected_memory_id": "m1"},
            ),
            row(
                "r2",
                "task3",
                {"query": "A chess opening?", "candidate_memories": cands},
                {"selected_memory_id": "m1"},
            ),
        ],
    )
    args = f"""eval alpsbench --release {rel} --task 3 --model m --backend offline --protocol prefkit
        --json -p {project.root}""".split()
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["run"]["offline"] is True and out["run"]["prompts"]["alps_task3"]
    assert out["rows"] == [{**out["rows"][0], "group": "d1", "correct": 1, "n_rows": 2, "accuracy": 0.5}]


def test_a_repeated_benchmark_id_names_the_line(tmp_path):
    rel = tmp_path / "rel"
    r = row("s1", "task3", {"query": "q", "candidate_memories": []}, {"selected_memory_id": "m1"})
    write_config(rel, "alpsbench", "dev", [r, r])
    preds = write_jsonl(tmp_path / "p.jsonl", [])
    with pytest.raises(EvalInputError, match=r"dev.jsonl:2: benchmark_id 's1' repeats line 1"):
        score_alps_file(rel, "task3", "dev", preds, protocol="prefkit")


def test_an_id_in_several_distractor_levels_needs_its_track(tmp_path):
    rel = tmp_path / "releases" / "1.0.0"
    for level, want in ((100, "m1"), (300, "m2")):
        inp, gold = layout_rows(
            "s1", "task3", {"query": "q", "candidate_memories": []}, {"selected_memory_id": want}
        )
        write_config(rel, f"alpsbench_task3_d{level}", "dev", [inp])
        write_config(rel, f"alpsbench_task3_d{level}_gold", "dev", [gold])
    ambiguous = write_jsonl(tmp_path / "a.jsonl", [{"benchmark_id": "s1", "selected_memory_id": "m1"}])
    with pytest.raises(EvalInputError, match=r"a.jsonl:1: benchmark_id 's1' is in several tracks"):
        score_alps_file(rel, "task3", "dev", ambiguous, protocol="prefkit")
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"benchmark_id": "s1", "track": "task3_d100", "selected_memory_id": "m1"},
            {"benchmark_id": "s1", "track": "task3_d300", "selected_memory_id": "m1"},
        ],
    )
    rows = {
        r["group"]: r["accuracy"] for r in score_alps_file(rel, "task3", "dev", preds, protocol="prefkit")
    }
    assert rows == {"d100": 1.0, "d300": 0.0}
