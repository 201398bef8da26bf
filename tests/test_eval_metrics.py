"""CUPID scoring arithmetic on hand-computed cases, key uniqueness, and `prefkit eval score`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from evalkit import cupid_release, instance, write_config, write_jsonl
from prefkit.cli import cli
from prefkit.pipelines.eval.cupid_metrics import Gold, score_generation, score_inference
from prefkit.pipelines.eval.release import EvalInputError, load_cupid
from prefkit.schemas.evaluation import CupidLabels, CupidPrediction, ItemLabel

A, B = "Does the reply use bullets?", "Is the reply short?"


def pred(pid, itype, inferred, gold=(), inferred_labels=()):
    labels = CupidLabels(
        gold=[ItemLabel(item=i, coverage=c) for i, c in gold],
        inferred=[ItemLabel(item=i, coverage=c) for i, c in inferred_labels],
    )
    return CupidPrediction(persona_id=pid, instance_type=itype, inferred=inferred, labels=labels)


GOLDS = {
    ("p1", "consistent"): Gold("consistent", (A, B), 1),
    ("p2", "consistent"): Gold("consistent", (A, B), 3),
    ("p3", "contrastive"): Gold("contrastive", (A, B), 1),
}
PREDS = {
    # recall credit 1 + 0.5 of 2 items; precision credit 1 + 0 of 2 items
    ("p1", "consistent"): pred(
        "p1",
        "consistent",
        "bullets, concise",
        [(A, "fully"), (B, "partially")],
        [("bullets", "fully"), ("concise", "not_covered")],
    ),
    # recall 0 of 2; precision 0.5 of 1
    ("p2", "consistent"): pred(
        "p2",
        "consistent",
        "formal tone",
        [(A, "not_covered"), (B, "not_covered")],
        [("formal tone", "partially")],
    ),
    # empty inference: 2 gold items, no inferred items
    ("p3", "contrastive"): CupidPrediction(persona_id="p3", instance_type="contrastive", inferred=""),
}


def by_group(rows, task="inference"):
    return {r["group"]: r for r in rows if r["task"] == task}


def test_pooled_recall_precision_f1_with_half_credit_for_partial():
    rows = by_group(score_inference(GOLDS, PREDS))
    c = rows["consistent"]
    assert (c["gold_credit"], c["gold_items"], c["inferred_credit"], c["inferred_items"]) == (1.5, 4, 1.5, 3)
    assert c["recall"] == 0.375 and c["precision"] == 0.5
    assert c["f1"] == pytest.approx(2 * 0.5 * 0.375 / 0.875, abs=1e-6)


def test_empty_inference_counts_its_gold_items_in_recall_and_nothing_in_precision():
    rows = by_group(score_inference(GOLDS, PREDS))
    assert rows["contrastive"] == {
        **rows["contrastive"],
        "n_empty": 1,
        "recall": 0.0,
        "precision": None,
        "f1": 0.0,
    }
    overall = rows["overall"]
    assert overall["recall"] == 0.25 and overall["precision"] == 0.5  # 1.5/6 and 1.5/3
    assert overall["f1"] == pytest.approx(1 / 3, abs=1e-6)


def test_missing_and_failed_predictions_are_counted_and_scored_as_no_inference():
    preds = {
        **PREDS,
        ("p2", "consistent"): CupidPrediction(persona_id="p2", instance_type="consistent", error="x"),
    }
    del preds[("p1", "consistent")]
    c = by_group(score_inference(GOLDS, preds))["consistent"]
    assert (c["n_missing"], c["n_failed"], c["gold_items"], c["recall"], c["f1"]) == (1, 1, 4, 0.0, 0.0)


def test_f1_by_position_of_the_relevant_session():
    rows = by_group(score_inference(GOLDS, PREDS), "inference_by_position")
    assert set(rows) == {"1", "3"}
    assert rows["3"]["recall"] == 0.0 and rows["3"]["precision"] == 0.5
    assert rows["1"]["gold_items"] == 4 and rows["1"]["recall"] == 0.375


def test_an_inference_without_judge_labels_is_an_error_not_a_zero():
    preds = {
        ("p1", "consistent"): CupidPrediction(persona_id="p1", instance_type="consistent", inferred="terse")
    }
    with pytest.raises(EvalInputError, match=r"p1\|consistent.*no judge labels"):
        score_inference(GOLDS, preds)


def test_every_gold_item_needs_exactly_its_label():
    bad = {("p1", "consistent"): pred("p1", "consistent", "x", [(A, "fully")], [("x", "fully")])}
    with pytest.raises(EvalInputError, match="no judge label for gold checklist item 'Is the reply short"):
        score_inference(GOLDS, bad)


def test_generation_mean_and_distribution():
    preds = {
        ("p1", "consistent"): CupidPrediction(
            persona_id="p1", instance_type="consistent", response="a", score=8
        ),
        ("p2", "consistent"): CupidPrediction(
            persona_id="p2", instance_type="consistent", response="b", score=5
        ),
        ("p3", "contrastive"): CupidPrediction(persona_id="p3", instance_type="contrastive", error="timeout"),
    }
    rows = by_group(score_generation(GOLDS, preds), "generation")
    assert rows["consistent"]["mean"] == 6.5 and rows["consistent"]["distribution"]["8"] == 1
    assert rows["contrastive"]["n_failed"] == 1 and rows["contrastive"]["mean"] is None
    assert rows["overall"]["n_scored"] == 2


def test_results_are_keyed_by_persona_and_instance_type(tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    _ref, instances = load_cupid(rel)
    assert sorted(instances) == [("p0", "changing"), ("p0", "consistent"), ("p0", "contrastive")]
    rows = [instance("p0", "consistent"), instance("p0", "changing"), instance("p0", "consistent")]
    write_config(rel, "dup", "test", rows)
    with pytest.raises(EvalInputError, match=r"dup/test.jsonl:3: instance \(p0, consistent\) repeats line 1"):
        load_cupid(rel, "dup")


def test_the_three_instances_of_a_persona_are_scored_separately(tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    _ref, instances = load_cupid(rel)
    lines = []
    for itype, cov in (("consistent", "fully"), ("contrastive", "partially"), ("changing", "not_covered")):
        items = instances[("p0", itype)].current_checklist
        labels = {
            "gold": [{"item": i, "coverage": cov} for i in items],
            "inferred": [{"item": "x", "coverage": cov}],
        }
        lines.append({"persona_id": "p0", "instance_type": itype, "inferred": "x", "labels": labels})
    preds = write_jsonl(tmp_path / "preds.jsonl", lines)
    result = CliRunner().invoke(cli, ["eval", "score", str(preds), "--release", str(rel), "--json"])
    assert result.exit_code == 0, result.output
    rows = by_group(json.loads(result.output))
    assert [rows[t]["recall"] for t in ("consistent", "contrastive", "changing")] == [1.0, 0.5, 0.0]
    assert rows["overall"]["n_instances"] == 3 and rows["overall"]["recall"] == 0.5


def test_eval_score_reads_a_judge_labels_file_and_names_a_bad_line(tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    _ref, instances = load_cupid(rel)
    items = instances[("p0", "consistent")].current_checklist
    preds = write_jsonl(
        tmp_path / "p.jsonl", [{"persona_id": "p0", "instance_type": "consistent", "inferred": "x"}]
    )
    labels = [
        {
            "persona_id": "p0",
            "instance_type": "consistent",
            "direction": "gold",
            "item": items[0],
            "coverage": "fully",
        },
        {
            "persona_id": "p0",
            "instance_type": "consistent",
            "direction": "gold",
            "item": items[1],
            "coverage": "partially",
        },
        {
            "persona_id": "p0",
            "instance_type": "consistent",
            "direction": "inferred",
            "item": "x",
            "coverage": "partially",
        },
    ]
    lab = write_jsonl(tmp_path / "l.jsonl", labels)
    ok = CliRunner().invoke(
        cli, ["eval", "score", str(preds), "--release", str(rel), "--labels", str(lab), "--json"]
    )
    row = by_group(json.loads(ok.output))["consistent"]
    assert (row["recall"], row["precision"], row["n_missing"]) == (0.75, 0.5, 0)
    write_jsonl(
        lab,
        [
            *labels,
            {
                "persona_id": "p0",
                "instance_type": "consistent",
                "direction": "gold",
                "item": items[0],
                "coverage": "most",
            },
        ],
    )
    bad = CliRunner().invoke(cli, ["eval", "score", str(preds), "--release", str(rel), "--labels", str(lab)])
    assert bad.exit_code == 1
    assert "l.jsonl:4: field coverage" in bad.output


def test_a_prediction_file_with_a_repeated_key_is_refused(tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    line = {"persona_id": "p0", "instance_type": "changing", "inferred": ""}
    preds = write_jsonl(tmp_path / "p.jsonl", [line, line])
    result = CliRunner().invoke(cli, ["eval", "score", str(preds), "--release", str(rel)])
    assert result.exit_code == 1 and "p.jsonl:2: a second prediction for (p0|changing)" in result.output
