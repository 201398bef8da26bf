"""AlpsBench scoring arithmetic: one score record per benchmark row, aggregated per task and level.

Tasks 1 and 2 match predicted memories to gold memories 1-to-1 with AlpsBench's documented pair
score (0.40 label + 0.40 value + 0.10 type + 0.10 confidence, Hungarian, matched at >= 0.30); task 2
sorts each gold memory into retained, modified or added; task 3 is the accuracy of
``selected_memory_id`` per distractor level; task 4 the judge's 1-10 score per ability. The formulas
are in docs/eval.md (*AlpsBench*). This module never calls a model.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from difflib import SequenceMatcher
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

WEIGHTS = {"label": 0.40, "value": 0.40, "type": 0.10, "confidence": 0.10}
MIN_PAIR_SCORE = 0.30
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|[^\W_]+", re.UNICODE)
_PUNCT = re.compile(r"[^\w\s/]", re.UNICODE)


def normalize(value: Any) -> str:
    text = unicodedata.normalize("NFKC", "" if value is None else str(value)).lower()
    return " ".join(_PUNCT.sub(" ", text).split())


def tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(normalize(text)))


def value_similarity(a: Any, b: Any) -> float:
    na, nb = normalize(a), normalize(b)
    if not na or not nb:
        return 0.0
    ta, tb = tokens(na), tokens(nb)
    jaccard = len(ta & tb) / len(ta | tb) if ta | tb else 0.0
    return 0.6 * jaccard + 0.4 * SequenceMatcher(None, na, nb, autojunk=False).ratio()


def label_similarity(a: Any, b: Any) -> float:
    pa = [normalize(s) for s in str(a or "").split("/") if normalize(s)]
    pb = [normalize(s) for s in str(b or "").split("/") if normalize(s)]
    if not pa or not pb:
        return 0.0
    lcp = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        lcp += 1
    return 2 * lcp / (len(pa) + len(pb))


def confidence_score(a: Any, b: Any) -> float:
    try:
        d = abs(float(a) - float(b))
    except (TypeError, ValueError):
        return 0.0
    return 1.0 if d <= 0.2 else max(0.0, 1.0 - (d - 0.2) / 0.5)


def pair_score(gold: dict[str, Any], pred: dict[str, Any]) -> float:
    return (
        WEIGHTS["label"] * label_similarity(gold.get("label"), pred.get("label"))
        + WEIGHTS["value"] * value_similarity(gold.get("value"), pred.get("value"))
        + WEIGHTS["type"] * (1.0 if normalize(gold.get("type")) == normalize(pred.get("type")) else 0.0)
        + WEIGHTS["confidence"] * confidence_score(gold.get("confidence"), pred.get("confidence"))
    )


def match(
    gold: list[dict[str, Any]], pred: list[dict[str, Any]], threshold: float = MIN_PAIR_SCORE
) -> list[tuple[int, int, float]]:
    """``(gold index, predicted index, score)`` of the matched pairs (Hungarian, score >= threshold)."""
    if not gold or not pred:
        return []
    scores = np.array([[pair_score(g, p) for p in pred] for g in gold])
    rows, cols = linear_sum_assignment(scores, maximize=True)
    return [
        (int(r), int(c), float(scores[r, c]))
        for r, c in zip(rows, cols, strict=True)
        if scores[r, c] >= threshold
    ]


def memory_list(value: Any) -> list[dict[str, Any]]:
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


# -- per-row scores -----------------------------------------------------------------------------------------
def score_task1(gold: dict[str, Any], pred: dict[str, Any] | None) -> dict[str, Any]:
    g = memory_list(gold.get("memory_items"))
    p = memory_list((pred or {}).get("memory_items"))
    pairs = match(g, p)
    return {
        "n_gold": len(g),
        "n_pred": len(p),
        "tp": len(pairs),
        "pair_scores": [round(s, 6) for *_x, s in pairs],
    }


def update_categories(
    old_pool: list[dict[str, Any]], answer: list[dict[str, Any]]
) -> list[tuple[str, dict | None]]:
    """``(category, the memory it replaces)`` for each gold memory after an update."""
    before = {str(m.get("memory_id")): m for m in old_pool}
    out: list[tuple[str, dict | None]] = []
    for m in answer:
        mid = str(m.get("memory_id"))
        base = mid.removesuffix("_updated")
        if mid in before and normalize(before[mid].get("value")) == normalize(m.get("value")):
            out.append(("retained", before[mid]))
        elif base in before:
            out.append(("modified", before[base]))
        else:
            out.append(("added", None))
    return out


def score_task2(
    row_input: dict[str, Any], gold: dict[str, Any], pred: dict[str, Any] | None
) -> dict[str, Any]:
    answer = memory_list(gold.get("answer"))
    p = memory_list((pred or {}).get("memory_items"))
    pairs = {gi: pi for gi, pi, _s in match(answer, p)}
    by_cat: dict[str, list[int]] = {"retained": [0, 0], "added": [0, 0], "modified": [0, 0]}
    stale = 0
    for gi, (cat, old) in enumerate(update_categories(memory_list(row_input.get("memory")), answer)):
        by_cat[cat][0] += 1
        if gi not in pairs:
            continue
        if cat == "modified" and old is not None:
            mine = p[pairs[gi]].get("value")
            if value_similarity(mine, answer[gi].get("value")) <= value_similarity(mine, old.get("value")):
                stale += 1
                continue
        by_cat[cat][1] += 1
    return {"n_gold": len(answer), "n_pred": len(p), "tp": len(pairs), "categories": by_cat, "stale": stale}


def score_task3(gold: dict[str, Any], pred: dict[str, Any] | None) -> dict[str, Any]:
    want = normalize(gold.get("selected_memory_id"))
    got = normalize((pred or {}).get("selected_memory_id"))
    return {"correct": bool(want) and got == want}


def score_task4(gold: dict[str, Any], pred: dict[str, Any] | None) -> dict[str, Any]:
    memory = gold.get("selected_memory") or {}
    ref = normalize(memory.get("value") if isinstance(memory, dict) else memory)
    fact = normalize((pred or {}).get("used_memory_fact"))
    return {
        "score": (pred or {}).get("score"),
        "fact_match": bool(ref and fact and (ref in fact or fact in ref)),
    }


# -- aggregates ----------------------------------------------------------------------------------------------
def _prf(tp: int, n_pred: int, n_gold: int) -> dict[str, float | None]:
    p = tp / n_pred if n_pred else None
    r = tp / n_gold if n_gold else None
    f = 2 * (p or 0) * (r or 0) / ((p or 0) + (r or 0)) if (p or 0) + (r or 0) else 0.0
    return {"precision": _r(p), "recall": _r(r), "f1": _r(f)}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _base(records: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "n_rows": len(records),
        "n_missing": sum(1 for r in records if r.get("missing")),
        "n_failed": sum(1 for r in records if r.get("error")),
    }


def aggregate(task: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with the counts behind each number; ``records`` are per-row scores with ``group``."""
    if task == "task1":
        return [_extraction_row(task, "all", records)]
    if task == "task2":
        rows = []
        for cat in ("retained", "added", "modified"):
            n = sum(r["categories"][cat][0] for r in records)
            ok = sum(r["categories"][cat][1] for r in records)
            rows.append(
                {
                    "task": task,
                    "group": cat,
                    **_base(records),
                    "n_gold": n,
                    "correct": ok,
                    "accuracy": _r(ok / n) if n else None,
                }
            )
        rows[-1]["stale"] = sum(r["stale"] for r in records)
        rows.append(_extraction_row(task, "all", records))
        return rows
    groups = sorted({r["group"] for r in records}, key=_group_order)
    out = []
    for g in groups:
        rs = [r for r in records if r["group"] == g]
        if task == "task3":
            ok = sum(1 for r in rs if r["correct"])
            out.append({"task": task, "group": g, **_base(rs), "correct": ok, "accuracy": _r(ok / len(rs))})
        else:
            scores = [r["score"] for r in rs if r.get("score") is not None]
            hist = Counter(scores)
            out.append(
                {
                    "task": task,
                    "group": g,
                    **_base(rs),
                    "n_scored": len(scores),
                    "mean_score": _r(sum(scores) / len(scores)) if scores else None,
                    "distribution": {str(s): hist.get(s, 0) for s in range(1, 11)},
                    "fact_match_rate": _r(sum(1 for r in rs if r["fact_match"]) / len(rs)),
                }
            )
    return out


def _extraction_row(task: str, group: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    tp = sum(r["tp"] for r in records)
    n_pred = sum(r["n_pred"] for r in records)
    n_gold = sum(r["n_gold"] for r in records)
    per_row = [_prf(r["tp"], r["n_pred"], r["n_gold"])["f1"] or 0.0 for r in records]
    scores = [s for r in records for s in r.get("pair_scores", [])]
    return {
        "task": task,
        "group": group,
        **_base(records),
        "n_pred": n_pred,
        "n_gold": n_gold,
        "matched": tp,
        **_prf(tp, n_pred, n_gold),
        "mean_row_f1": _r(sum(per_row) / len(per_row)) if per_row else None,
        "mean_pair_score": _r(sum(scores) / len(scores)) if scores else None,
    }


def _group_order(g: str) -> tuple[str, int]:
    m = re.match(r"([a-z]*)(\d+)$", g)
    return (m.group(1), int(m.group(2))) if m else (g, 0)
