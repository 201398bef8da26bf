"""AlpsBench's public scorer, written here from reading ``src/benchmark/metrics.py`` and ``runner.py`` of
ThisIsCosine/AlpsBench (protocol ``alpsbench-public``): the numbers its ``scripts/evaluate.py`` prints.

Text is normalised only by ``strip``, lower case and collapsing whitespace; tasks 1 and 2 score the
multiset overlap of six-field memory tuples per row, task 3 the selected memory, task 4 the grounding
proxy. Every track is its own score; a failed model call is scored as the contract's empty prediction
and counted (``n_failed``), and ``main_score_strict`` scores it 0 (docs/eval.md, *Protocols*). This
module never calls a model.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

MEMORY_FIELDS = ("label", "value", "type", "preference_attitude", "time_scope", "emotion")
#: The public prediction contract: the exact top-level keys per task (runner._expected_prediction_keys).
CONTRACT = {
    "task1": ("benchmark_id", "memory_items"),
    "task2": ("benchmark_id", "memory_items"),
    "task3": ("benchmark_id", "answer", "reason", "selected_memory_id"),
    "task4": ("benchmark_id", "answer", "used_memory_fact"),
}
_WS = re.compile(r"\s+")


def normalize_text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return _WS.sub(" ", text.strip().lower())


def _r6(x: float) -> float:
    return round(float(x), 6)


def _mean(values: list[float]) -> float:
    return _r6(sum(values) / len(values)) if values else 0.0


def _items(value: Any) -> list[dict[str, Any]]:
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def memory_key(item: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(normalize_text(item.get(f)) for f in MEMORY_FIELDS)


def multiset_f1(pred: list[dict[str, Any]], ref: list[dict[str, Any]]) -> dict[str, Any]:
    p, r = Counter(map(memory_key, pred)), Counter(map(memory_key, ref))
    tp, n_pred, n_ref = sum((p & r).values()), sum(p.values()), sum(r.values())
    if n_pred == 0 and n_ref == 0:
        precision = recall = f1 = 1.0
    else:
        precision = tp / n_pred if n_pred else 0.0
        recall = tp / n_ref if n_ref else 0.0
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return {
        "precision": _r6(precision),
        "recall": _r6(recall),
        "f1": _r6(f1),
        "exact_match": 1.0 if p == r else 0.0,
        "pred_count": n_pred,
        "reference_count": n_ref,
    }


def empty_prediction(task: str, benchmark_id: str) -> dict[str, Any]:
    """What a failed model call is scored as: the contract's fields, empty."""
    empty: dict[str, Any] = {"memory_items": [], "answer": "", "reason": "", "selected_memory_id": ""}
    return {"benchmark_id": benchmark_id, **{k: empty.get(k, "") for k in CONTRACT[task][1:]}}


def contract_fields(task: str, prediction: Mapping[str, Any]) -> dict[str, Any]:
    """Only the contract's fields, as the public runner hands them to the row scorer."""
    return {k: prediction.get(k) for k in CONTRACT[task] if k in prediction}


def score_row(task: str, prediction: Mapping[str, Any], gold: Mapping[str, Any]) -> dict[str, Any]:
    """One row's scores (``gold`` is the reference row's ``gold`` object); ``main_score`` is the row's
    contribution to the track's main metric."""
    if task in ("task1", "task2"):
        pred = prediction.get("memory_items")
        if task == "task2":  # the public scorer reads ``answer`` first, then ``memory_items``
            pred = prediction.get("answer") or pred
        ref = gold.get("memory_items") if task == "task1" else gold.get("answer")
        out = multiset_f1(_items(pred), _items(ref))
        return {**out, "main_score": out["f1"]}
    if task == "task3":
        memory = gold.get("selected_memory") or {}
        ref_id, ref_value = (
            normalize_text(gold.get("selected_memory_id")),
            normalize_text(memory.get("value")),
        )
        pred_id = normalize_text(prediction.get("selected_memory_id") or prediction.get("memory_key"))
        chosen = prediction.get("selected_memory")
        pred_value = normalize_text(
            chosen.get("value") if isinstance(chosen, Mapping) else None
        ) or normalize_text(prediction.get("selected_memory_value"))
        id_match = 1.0 if ref_id and pred_id == ref_id else 0.0
        value_match = 1.0 if ref_value and pred_value == ref_value else 0.0
        acc = 1.0 if id_match or value_match else 0.0
        return {
            "accuracy": acc,
            "memory_id_match": id_match,
            "memory_value_match": value_match,
            "main_score": acc,
        }
    memory = gold.get("selected_memory") or {}
    ref = normalize_text(memory.get("value") if isinstance(memory, Mapping) else None)
    fact = normalize_text(prediction.get("used_memory_fact"))
    match = 1.0 if ref and fact and (fact == ref or fact in ref or ref in fact) else 0.0
    present = 1.0 if normalize_text(prediction.get("answer") or prediction.get("response")) else 0.0
    return {
        "grounding_accuracy": match,
        "used_memory_fact_match": match,
        "response_present": present,
        "main_score": match,
    }


def summarize(task: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The track's summary as the public scorer writes it (means of the rounded row scores)."""
    if not rows:
        return {"num_rows": 0, "main_metric": "main_score", "main_score": 0.0}
    col = lambda name: [r[name] for r in rows]  # noqa: E731
    if task in ("task1", "task2"):
        return {
            "num_rows": len(rows),
            "main_metric": "mean_f1",
            "mean_precision": _mean(col("precision")),
            "mean_recall": _mean(col("recall")),
            "mean_f1": _mean(col("f1")),
            "exact_match_rate": _mean(col("exact_match")),
            "main_score": _mean(col("f1")),
        }
    if task == "task3":
        return {
            "num_rows": len(rows),
            "main_metric": "accuracy",
            "accuracy": _mean(col("accuracy")),
            "memory_id_match_rate": _mean(col("memory_id_match")),
            "memory_value_match_rate": _mean(col("memory_value_match")),
            "main_score": _mean(col("accuracy")),
        }
    return {
        "num_rows": len(rows),
        "main_metric": "grounding_accuracy",
        "grounding_accuracy": _mean(col("grounding_accuracy")),
        "used_memory_fact_match_rate": _mean(col("used_memory_fact_match")),
        "response_present_rate": _mean(col("response_present")),
        "main_score": _mean(col("grounding_accuracy")),
    }


# -- prefkit's records ------------------------------------------------------------------------------------------
def row_record(task: str, gold: Mapping[str, Any], pred: Mapping[str, Any] | None, benchmark_id: str) -> dict:
    """The stored score record of one row: the public row scores, scored on the contract's fields (a
    failed call as the empty prediction)."""
    failed = pred is None or "error" in pred
    usable = empty_prediction(task, benchmark_id) if pred is None or failed else contract_fields(task, pred)
    return {"public": score_row(task, usable, gold), "failed": failed}


def aggregate(task: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per track (group): the public summary plus the failures and the strict main score."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        groups.setdefault(rec["group"], []).append(rec)
    out = []
    for group in sorted(groups, key=_order):
        recs = groups[group]
        summary = summarize(task, [r["public"] for r in recs])
        strict = [0.0 if r["failed"] else r["public"]["main_score"] for r in recs]
        out.append(
            {
                "task": task,
                "group": group,
                "n_rows": len(recs),
                "n_failed": sum(1 for r in recs if r["failed"]),
                **summary,
                "main_score_strict": _mean(strict),
            }
        )
    return out


def _order(group: str) -> tuple[str, int]:
    m = re.match(r"([a-z]*)(\d+)$", group)
    return (m.group(1), int(m.group(2))) if m else (group, 0)


def check_contract(task: str, raw: Mapping[str, Any], where: str) -> str | None:
    """The public runner's check of one prediction line (required keys and their types), as one
    message, or None. prefkit also accepts ``track`` (to tell distractor levels apart) and ``score``."""
    missing = [k for k in CONTRACT[task] if k not in raw]
    if missing:
        return f"{where}: missing {', '.join(missing)} (the {task} prediction contract needs {', '.join(CONTRACT[task])})"
    if task in ("task1", "task2") and not isinstance(raw.get("memory_items"), list):
        return f"{where}: memory_items must be a JSON array"
    for k in CONTRACT[task][1:]:
        if k != "memory_items" and not isinstance(raw.get(k), str):
            return f"{where}: {k} must be a string"
    return None
