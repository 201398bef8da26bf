"""AlpsBench's documented matching formula (protocol ``alpsbench-paper``), from its
``docs/evaluation_metric.md``: per row, every (gold, predicted) memory pair gets

    pair = 0.40 label + 0.40 value + 0.10 type + 0.10 confidence

pairs are assigned 1-to-1 (Hungarian) and only those scoring >= 0.30 count as matched; the headline of
tasks 1 and 2 is the mean of the rows' ``algo_score_100 = 100 (0.60 quality + 0.40 F1)``. The constants
the documentation leaves open are prefkit's choices (``alps_metrics``; docs/eval.md, *Protocols*).
Because the label term alone reaches 0.40, :func:`threshold_check` measures how often the threshold
accepts pairs people reject, and every report of this protocol shows it. This module never calls a model.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from prefkit.pipelines.eval import alps_metrics as metrics

QUALITY_WEIGHT, COVERAGE_WEIGHT = 0.60, 0.40
LABELLED_PAIRS = "data/alps_pair_labels.jsonl"


def row_record(task: str, gold: dict[str, Any], pred: dict[str, Any] | None) -> dict[str, Any]:
    g = metrics.memory_list(gold.get("memory_items") if task == "task1" else gold.get("answer"))
    p = metrics.memory_list((pred or {}).get("memory_items"))
    pairs = metrics.match(g, p)
    tp = len(pairs)
    if not g and not p:
        precision = recall = f1 = quality = 1.0
    else:
        precision = tp / len(p) if p else 0.0
        recall = tp / len(g) if g else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        quality = sum(s for *_x, s in pairs) / tp if tp else 0.0
    return {
        "n_gold": len(g),
        "n_pred": len(p),
        "tp": tp,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "quality": quality,
        "algo_score_100": 100 * (QUALITY_WEIGHT * quality + COVERAGE_WEIGHT * f1),
    }


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 6) if xs else None


def aggregate(task: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if task not in ("task1", "task2"):
        return metrics.aggregate(task, records)
    col = lambda name: [r[name] for r in records]  # noqa: E731
    row = {
        "task": task,
        "group": "all",
        "n_rows": len(records),
        "n_missing": sum(1 for r in records if r.get("missing")),
        "n_failed": sum(1 for r in records if r.get("error")),
        "n_pred": sum(col("n_pred")),
        "n_gold": sum(col("n_gold")),
        "matched": sum(col("tp")),
        "mean_precision": _mean(col("precision")),
        "mean_recall": _mean(col("recall")),
        "mean_f1": _mean(col("f1")),
        "mean_quality": _mean(col("quality")),
        "algo_score_100": _mean(col("algo_score_100")),
    }
    return [row, {"task": "pair_threshold", **threshold_check()}]


def labelled_pairs(path: Path | None = None) -> list[dict[str, Any]]:
    text = (
        Path(path).read_text(encoding="utf-8")
        if path
        else (resources.files("prefkit.pipelines.eval") / LABELLED_PAIRS).read_text(encoding="utf-8")
    )
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def threshold_check(threshold: float = metrics.MIN_PAIR_SCORE, path: Path | None = None) -> dict[str, Any]:
    """How the match threshold treats pairs people labelled: the share of pairs they reject that it
    matches (false matches) and of pairs they accept that it misses."""
    rows = labelled_pairs(path)
    scored = [(metrics.pair_score(r["gold"], r["pred"]), bool(r["same"])) for r in rows]
    rejected = [s for s, same in scored if not same]
    accepted = [s for s, same in scored if same]
    false = sum(1 for s in rejected if s >= threshold)
    missed = sum(1 for s in accepted if s < threshold)
    return {
        "group": "labelled pairs" if path is None else str(path),
        "threshold": threshold,
        "n_pairs": len(rows),
        "n_rejected": len(rejected),
        "matched_rejected": false,
        "false_match_rate": round(false / len(rejected), 6) if rejected else None,
        "n_accepted": len(accepted),
        "missed_accepted": missed,
        "miss_rate": round(missed / len(accepted), 6) if accepted else None,
    }
