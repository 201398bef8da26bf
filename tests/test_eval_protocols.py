"""Equivalence with the benchmarks' own scoring code on fixed decisions.

The expected numbers are worked out by hand from the official formulas (each test says how):
CUPID's ``evaluation/pipeline/result.py`` (pooled P/R/F1 and the generation mean) with the failure
branches of ``evaluate.py``, and AlpsBench's ``src/benchmark/metrics.py`` + ``runner.py`` (per-row
multiset F1 averaged, id match, grounding proxy). Headline numbers must agree to 1e-6.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from evalkit import JAZZ, RUN, TEA, alps_release, mem, row, task1, write_config, write_jsonl
from prefkit.cli import cli
from prefkit.pipelines.eval import alps_paper, alps_public, cupid_official
from prefkit.pipelines.eval.cupid_metrics import Gold
from prefkit.pipelines.eval.release import EvalInputError
from prefkit.pipelines.eval.runs import score_alps_file
from prefkit.schemas.evaluation import CupidPrediction


def C(n):  # a gold checklist of n questions
    return tuple(f"Question {i}?" for i in range(n))


GOLDS = {
    ("p.1/x", "consistent"): Gold("consistent", C(3)),  # an id with punctuation
    ("p2", "consistent"): Gold("consistent", C(2)),
    ("p3", "contrastive"): Gold("contrastive", C(2)),
    ("p4", "changing"): Gold("changing", C(4)),
    ("p5", "changing"): Gold("changing", C(2)),
    ("p6", "contrastive"): Gold("contrastive", C(2)),
    ("p7", "consistent"): Gold("consistent", C(2)),  # no prediction at all
}


def inferred(pid, itype, checklist, inf_labels, gold_labels, text="Wants short answers"):
    return CupidPrediction.model_validate(
        {
            "persona_id": pid,
            "instance_type": itype,
            "inferred": text,
            "checklist": checklist,
            "labels": {
                "inferred": [{"item": q, "coverage": c} for q, c in zip(checklist, inf_labels, strict=True)],
                "gold": [{"item": q, "coverage": c} for q, c in gold_labels],
            },
        }
    )


PREDS = {
    # clean: predicted credit 1 + 0.5 of 2 questions; gold credit 1 + 0 + 0.5 of 3
    ("p.1/x", "consistent"): inferred(
        "p.1/x",
        "consistent",
        ["q1?", "q2?"],
        ["fully", "partially"],
        [("Question 0?", "fully"), ("Question 1?", "not_covered"), ("Question 2?", "partially")],
    ),
    # failed model call: evaluate.py returns before writing a result -> left out
    ("p2", "consistent"): CupidPrediction(persona_id="p2", instance_type="consistent", error="timeout"),
    # failed matcher call: both match lists empty, n_true 2 and n_predicted 3 stay -> 0 credit
    ("p3", "contrastive"): CupidPrediction(
        persona_id="p3",
        instance_type="contrastive",
        inferred="x",
        checklist=["a?", "b?", "c?"],
        error="judge: 500",
    ),
    # context length: preference "ERROR...", checklist [] -> n_true 4, n_predicted 0
    ("p4", "changing"): CupidPrediction(
        persona_id="p4", instance_type="changing", error="Error code: 400 - context_length_exceeded"
    ),
    # empty answer: empty checklist -> n_true 2, n_predicted 0
    ("p5", "changing"): CupidPrediction(persona_id="p5", instance_type="changing", inferred="", checklist=[]),
    # a paraphrase matched fully both ways: 1 of 1 and 2 of 2
    ("p6", "contrastive"): inferred(
        "p6", "contrastive", ["q?"], ["fully"], [("Question 0?", "fully"), ("Question 1?", "fully")]
    ),
}


def rows_of(rows, task):
    return {r["group"]: r for r in rows if r["task"] == task}


def test_cupid_official_pooled_prf_and_failure_accounting():
    rows = cupid_official.score_inference(GOLDS, PREDS)
    o = rows_of(rows, "inference")["overall"]
    # result.aggregate_results over the instances with a result (p.1/x, p3, p4, p5, p6):
    # n_true 3+2+4+2+2 = 13, true credit 1.5+0+0+0+2 = 3.5; n_pred 2+3+0+0+1 = 6, pred credit 1.5+1 = 2.5
    p, r = 2.5 / 6, 3.5 / 13
    assert (o["gold_items"], o["gold_credit"], o["inferred_items"], o["inferred_credit"]) == (13, 3.5, 6, 2.5)
    assert o["precision_exact"] == pytest.approx(p, abs=1e-6) and o["recall_exact"] == pytest.approx(
        r, abs=1e-6
    )
    assert o["f1_exact"] == pytest.approx(2 * p * r / (p + r), abs=1e-6)
    assert (
        o["n_model_failed"],
        o["n_missing"],
        o["n_judge_failed"],
        o["n_context_length"],
        o["n_empty"],
    ) == (1, 1, 1, 1, 1)
    strict = rows_of(rows, "inference_strict")["overall"]
    # strict: p2 and p7 count too (2 gold questions each, no credit): recall 3.5 / 17, precision unchanged
    assert strict["gold_items"] == 17 and strict["recall_exact"] == pytest.approx(3.5 / 17, abs=1e-6)
    assert strict["precision_exact"] == pytest.approx(p, abs=1e-6)
    assert (
        rows_of(rows, "inference")["changing"]["precision"] == 0.0
    )  # calculate_prf: no predicted items -> 0


def test_cupid_official_generation_mean_and_strict_line():
    preds = {
        ("p.1/x", "consistent"): CupidPrediction(
            persona_id="p.1/x", instance_type="consistent", response="a", score=8
        ),
        ("p2", "consistent"): CupidPrediction(persona_id="p2", instance_type="consistent", error="timeout"),
        ("p3", "contrastive"): CupidPrediction(
            persona_id="p3", instance_type="contrastive", response="b", error="judge: no score"
        ),
        ("p4", "changing"): CupidPrediction(
            persona_id="p4", instance_type="changing", error="context_length_exceeded"
        ),
        ("p5", "changing"): CupidPrediction(persona_id="p5", instance_type="changing", response="", score=3),
        ("p6", "contrastive"): CupidPrediction(
            persona_id="p6", instance_type="contrastive", response="c", score=10
        ),
    }
    rows = cupid_official.score_generation(GOLDS, preds)
    # official: judge failure and context length score 0, the failed model call and p7 have no result:
    # (8 + 0 + 0 + 3 + 10) / 5; strict: every one of the 7 instances, failures 0: 21 / 7
    assert rows_of(rows, "generation")["overall"]["mean_exact"] == pytest.approx(21 / 5, abs=1e-6)
    assert rows_of(rows, "generation_strict")["overall"]["mean_exact"] == pytest.approx(3.0, abs=1e-6)
    assert rows_of(rows, "generation")["overall"]["n_counted"] == 5


def test_cupid_official_score_parsing_follows_result_py():
    assert [cupid_official.parse_score(t) for t in ("7/10", " 8.5", "**9**", "6\n\nbecause", "ten")] == [
        7.0,
        8.0,
        9.0,
        6.0,
        None,
    ]


# -- AlpsBench public ----------------------------------------------------------------------------------------
def test_alpsbench_public_task1_multiset_f1_per_row_averaged(tmp_path):
    rel = alps_release(
        tmp_path,
        "validation",
        [
            task1("r1", TEA, RUN),
            task1("r2"),
            task1("r3", JAZZ),
            task1("r4"),
            task1("r5", {**TEA, "preference_attitude": "like"}),
        ],
    )
    spaced = {**RUN, "value": "  runs FIVE kilometres   every sunday ", "memory_id": "other"}
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            # duplicate TEA counts once (multiset), case and whitespace differences match: tp 2 of 3 and 2 -> F1 0.8
            {"benchmark_id": "r1", "memory_items": [TEA, dict(TEA), spaced]},
            {"benchmark_id": "r2", "memory_items": []},  # empty gold, empty prediction -> 1
            {
                "benchmark_id": "r3",
                "memory_items": [{**JAZZ, "value": "Plays jazz piano in a band."}],
            },  # punctuation -> 0
            {"benchmark_id": "r4", "memory_items": []},  # -> 1
            {"benchmark_id": "r5", "memory_items": [TEA]},  # preference_attitude differs -> 0
        ],
    )
    (r,) = score_alps_file(rel, "task1", "validation", preds)
    # summarize_score_rows: mean of the rounded row F1s = (0.8 + 1 + 0 + 1 + 0) / 5
    assert r["main_metric"] == "mean_f1" and r["main_score"] == pytest.approx(0.56, abs=1e-6)
    assert r["mean_precision"] == pytest.approx((2 / 3 + 1 + 0 + 1 + 0) / 5, abs=1e-6)
    assert r["exact_match_rate"] == pytest.approx(2 / 5, abs=1e-6)  # only the two empty rows are identical


def test_alpsbench_public_failed_call_is_the_empty_prediction_and_strict_scores_it_zero():
    gold_empty = {"memory_items": []}
    records = [
        {
            **alps_public.row_record("task1", gold_empty, {"benchmark_id": "a", "error": "500"}, "a"),
            "group": "all",
        },
        {
            **alps_public.row_record(
                "task1", {"memory_items": [TEA]}, {"benchmark_id": "b", "memory_items": [TEA]}, "b"
            ),
            "group": "all",
        },
    ]
    (r,) = alps_public.aggregate("task1", records)
    # the failed row is scored as memory_items [] against an empty gold: F1 1 -> mean (1 + 1) / 2
    assert (r["main_score"], r["main_score_strict"], r["n_failed"]) == (1.0, 0.5, 1)


def test_alpsbench_public_task3_ids_with_punctuation_and_the_value_rule(tmp_path):
    rel = tmp_path / "rel"
    cands = [{"memory_id": "m-1", "value": "loves hiking"}]
    write_config(
        rel,
        "alpsbench_task3_d100",
        "validation",
        [
            row(
                f"q{i}",
                "task3",
                {"query": "q", "candidate_memories": cands},
                {"selected_memory_id": gid, "selected_memory": {"memory_id": gid, "value": "loves hiking"}},
            )
            for i, gid in enumerate(("m-1", "m-1", "mem.7", "m-1"))
        ],
    )
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {
                "benchmark_id": "q0",
                "answer": "",
                "reason": "",
                "selected_memory_id": " M-1 ",
            },  # case, spaces -> 1
            {
                "benchmark_id": "q1",
                "answer": "",
                "reason": "",
                "selected_memory_id": "m1",
            },  # punctuation kept -> 0
            {"benchmark_id": "q2", "answer": "", "reason": "", "selected_memory_id": "mem.7"},  # -> 1
            {"benchmark_id": "q3", "answer": "", "reason": "", "selected_memory_id": ""},  # -> 0
        ],
    )
    (r,) = score_alps_file(rel, "task3", "validation", preds)
    assert (r["group"], r["accuracy"], r["memory_value_match_rate"]) == ("d100", 0.5, 0.0)
    gold = {"selected_memory_id": "m-1", "selected_memory": {"value": "Loves hiking"}}
    by_value = alps_public.score_row("task3", {"selected_memory": {"value": "loves  hiking"}}, gold)
    assert by_value["accuracy"] == 1.0 and by_value["memory_id_match"] == 0.0  # the value rule


def test_alpsbench_public_task4_grounding_proxy(tmp_path):
    gold = {"selected_memory": {"memory_id": "m1", "value": "Prefers green tea"}}
    rel = alps_release(
        tmp_path,
        "validation",
        [row(f"x{i}", "task4_ability1", {"query": "What should I drink?"}, gold) for i in range(4)],
    )
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {
                "benchmark_id": "x0",
                "answer": "Tea.",
                "used_memory_fact": "prefers green tea every morning",
            },  # contains
            {"benchmark_id": "x1", "answer": "Tea.", "used_memory_fact": "Green   TEA"},  # contained -> 1
            {"benchmark_id": "x2", "answer": "Toast.", "used_memory_fact": "likes toast"},
            {"benchmark_id": "x3", "answer": "", "used_memory_fact": ""},
        ],
    )
    (r,) = score_alps_file(rel, "task4", "validation", preds)
    assert (r["group"], r["main_score"], r["response_present_rate"]) == ("ability1", 0.5, 0.75)


def test_alpsbench_public_refuses_what_the_public_runner_refuses(tmp_path):
    rel = alps_release(
        tmp_path,
        "dev",
        [
            row("s1", "task3", {"query": "q", "candidate_memories": []}, {"selected_memory_id": "m1"}),
            row("s2", "task3", {"query": "q", "candidate_memories": []}, {"selected_memory_id": "m1"}),
        ],
    )
    short = write_jsonl(tmp_path / "a.jsonl", [{"benchmark_id": "s1", "selected_memory_id": "m1"}])
    with pytest.raises(EvalInputError, match=r"a.jsonl:1: missing answer, reason"):
        score_alps_file(rel, "task3", "dev", short)
    one = write_jsonl(
        tmp_path / "b.jsonl", [{"benchmark_id": "s1", "answer": "", "reason": "", "selected_memory_id": "m1"}]
    )
    with pytest.raises(EvalInputError, match="no prediction for 1 row"):
        score_alps_file(rel, "task3", "dev", one)


def test_the_issue_example_differs_by_protocol(tmp_path):
    """'Hates jazz' against the gold 'Prefers vegetarian meals': the documented 0.30 threshold matches
    it, the public scorer does not."""
    rel = tmp_path / "rel"
    gold = [mem("g", "Prefers vegetarian meals")]
    write_config(rel, "alpsbench", "dev", [row("s", "task1", {"dialogue": []}, {"memory_items": gold})])
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [{"benchmark_id": "s", "memory_items": [mem("x", "Hates jazz", label="Preferences/Music")]}],
    )
    (public,) = score_alps_file(rel, "task1", "dev", preds)
    paper, check = score_alps_file(rel, "task1", "dev", preds, protocol="alpsbench-paper")
    assert public["main_score"] == 0.0 and paper["matched"] == 1
    # label 2*1/(2+2) = 0.5, same type, same confidence: >= 0.4*0.5 + 0.1 + 0.1 = 0.4 whatever the values
    assert check["task"] == "pair_threshold" and check["matched_rejected"] == check["n_rejected"] == 13


def test_the_threshold_check_on_a_labelled_file(tmp_path):
    pairs = [
        {
            "gold": mem("a", "Has two daughters", label="Family"),
            "pred": mem("b", "Recently married", label="Family"),
            "same": False,
        },
        {
            "gold": mem("a", "Owns a red bike", label="Vehicles"),
            "pred": mem("b", "Owns a red bicycle", label="Vehicles"),
            "same": True,
        },
    ]
    path = write_jsonl(tmp_path / "pairs.jsonl", pairs)
    low = alps_paper.threshold_check(0.30, path)
    assert (low["matched_rejected"], low["false_match_rate"], low["missed_accepted"]) == (1, 1.0, 0)
    high = alps_paper.threshold_check(0.99, path)
    assert (high["matched_rejected"], high["missed_accepted"], high["miss_rate"]) == (0, 1, 1.0)


def test_eval_score_names_its_protocol(tmp_path):
    from evalkit import cupid_release

    rel = cupid_release(tmp_path, personas=1)
    preds = write_jsonl(
        tmp_path / "p.jsonl", [{"persona_id": "p0", "instance_type": "changing", "error": "x"}]
    )
    out = CliRunner().invoke(cli, ["eval", "score", str(preds), "--release", str(rel)])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("protocol cupid-official (kixlab/CUPID evaluation/)")
    as_json = json.loads(
        CliRunner()
        .invoke(cli, ["eval", "score", str(preds), "--release", str(rel), "--json", "--protocol", "prefkit"])
        .output
    )
    assert {r["protocol"] for r in as_json} == {"prefkit"}


def test_alpsbench_public_task2_reads_the_answer_memories_and_averages_row_f1(tmp_path):
    """Task 2 (memory update): the reference is ``gold.answer`` (the updated memories), not the input's
    memories. Row u1: TEA and RUN expected, TEA given -> P 1, R 1/2, F1 2/3 (rounded 0.666667); u2: empty
    against empty -> 1; u3: JAZZ expected and given -> 1. Mean F1 (0.666667 + 1 + 1) / 3."""
    rel = alps_release(
        tmp_path,
        "validation",
        [
            row("u1", "task2", {"dialogue": [], "memories": [TEA]}, {"answer": [TEA, RUN]}),
            row("u2", "task2", {"dialogue": [], "memories": []}, {"answer": []}),
            row("u3", "task2", {"dialogue": [], "memories": [JAZZ]}, {"answer": [JAZZ]}),
        ],
    )
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"benchmark_id": "u1", "memory_items": [TEA]},
            {"benchmark_id": "u2", "memory_items": []},
            {"benchmark_id": "u3", "memory_items": [JAZZ]},
        ],
    )
    (r,) = score_alps_file(rel, "task2", "validation", preds)
    assert r["main_metric"] == "mean_f1"
    assert r["main_score"] == pytest.approx((0.666667 + 1 + 1) / 3, abs=1e-6)
    assert r["mean_recall"] == pytest.approx((0.5 + 1 + 1) / 3, abs=1e-6)
    assert r["exact_match_rate"] == pytest.approx(2 / 3, abs=1e-6)


def test_alpsbench_paper_row_scores_and_their_means_worked_by_hand(tmp_path):
    """The documented formula: pair = 0.4 label + 0.4 value + 0.1 type + 0.1 confidence (confidence term
    1 up to |a - b| = 0.2, then linear to 0 at 0.7); matched pairs >= 0.30; algo = 100 (0.6 quality + 0.4 F1).
    a: TEA and RUN expected, TEA given as another type -> pair 0.9, TP 1, P 1, R 0.5, F1 2/3, algo 80.6667;
    b: nothing expected, nothing given -> everything 1, algo 100;
    c: JAZZ expected, JAZZ given at confidence 0.45 -> pair 0.4 + 0.4 + 0.1 + 0.1 * 0.5 = 0.95, F1 1, algo 97;
    d: RUN expected, nothing given -> 0."""
    rel = alps_release(
        tmp_path,
        "dev",
        [task1("a", TEA, RUN), task1("b"), task1("c", JAZZ), task1("d", RUN)],
    )
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"benchmark_id": "a", "memory_items": [{**TEA, "type": "indirect"}]},
            {"benchmark_id": "b", "memory_items": []},
            {"benchmark_id": "c", "memory_items": [{**JAZZ, "confidence": 0.45}]},
            {"benchmark_id": "d", "memory_items": []},
        ],
    )
    paper, check = score_alps_file(rel, "task1", "dev", preds, protocol="alpsbench-paper")
    algo = [100 * (0.6 * 0.9 + 0.4 * 2 / 3), 100.0, 100 * (0.6 * 0.95 + 0.4), 0.0]
    assert paper["algo_score_100"] == pytest.approx(sum(algo) / 4, abs=1e-6)
    assert paper["mean_f1"] == pytest.approx((2 / 3 + 1 + 1 + 0) / 4, abs=1e-6)
    assert paper["mean_quality"] == pytest.approx((0.9 + 1 + 0.95 + 0) / 4, abs=1e-6)
    assert (paper["mean_precision"], paper["mean_recall"]) == (0.75, 0.625)
    assert (paper["matched"], paper["n_pred"], paper["n_gold"]) == (2, 2, 4)
    assert check["task"] == "pair_threshold"
