"""CUPID's official arithmetic and failure accounting (protocols ``cupid-official``, ``cupid-prefmatcher``),
written here from reading ``evaluation/pipeline/evaluate.py`` and ``result.py`` of kixlab/CUPID.

Inference is pooled over the instances: precision = Σ predicted credit / Σ n_predicted (0 when there is
none), recall = Σ true credit / Σ n_true, F1 = 2PR / (P + R), credits the matcher's labels (Fully 1,
Partially 0.5, Not 0). What each failure does on the official and the strict line, and where prefkit
counts what the official code crashes on, is the table in docs/eval.md (*Protocols*). This module never
calls a model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefkit.pipelines.eval.cupid_metrics import INSTANCE_TYPES, Gold, Sums, as_record, key_name, only_known
from prefkit.pipelines.eval.release import CupidKey, EvalInputError
from prefkit.schemas.evaluation import COVERAGE_CREDIT

CONTEXT_LENGTH = "context_length_exceeded"  # the official code looks for this text in the error


def outcome(pred: Mapping[str, Any] | None, task: str = "inference") -> str:
    """``missing``, ``model_failed``, ``context_length``, ``judge_failed``, ``empty`` or ``scored``."""
    if pred is None:
        return "missing"
    error = pred.get("error")
    if error is not None:
        if CONTEXT_LENGTH in error:
            return "context_length"
        return "judge_failed" if error.startswith("judge:") else "model_failed"
    if task == "inference" and not ((pred.get("inferred") or "").strip() and _checklist(pred)):
        return "empty"
    return "scored"


def _checklist(pred: Mapping[str, Any]) -> list[str]:
    """The inferred preference's questions (the decomposer's checklist, else the labelled items)."""
    if pred.get("checklist") is not None:
        return list(pred["checklist"])
    return [lab["item"] for lab in (pred.get("labels") or {}).get("inferred") or []]


@dataclass
class Counts(Sums):
    n_instances: int = 0
    n_counted: int = 0
    n_dropped: int = 0
    gold_items: int = 0
    gold_credit: float = 0.0
    inferred_items: int = 0
    inferred_credit: float = 0.0

    def row(self) -> dict[str, Any]:
        # result.calculate_prf: a zero denominator gives 0, not "undefined"
        p = self.inferred_credit / self.inferred_items if self.inferred_items > 0 else 0
        r = self.gold_credit / self.gold_items if self.gold_items > 0 else 0
        f1 = 2 * p * r / (p + r) if p + r > 0 else 0
        return {
            **self.__dict__,
            "precision": round(float(p), 6),
            "recall": round(float(r), 6),
            "f1": round(float(f1), 6),
            "precision_exact": p,
            "recall_exact": r,
            "f1_exact": f1,
        }


def inference_counts(key: CupidKey, gold: Gold, pred: Mapping[str, Any] | None, strict: bool) -> Counts:
    """What one instance adds to the official (or strict) pooled counts."""
    kind = outcome(pred)
    c = Counts(n_instances=1)
    if kind in ("missing", "model_failed") and not strict:
        c.n_dropped = 1
        return c
    c.n_counted, c.gold_items = 1, len(gold.checklist)
    if pred is None:
        return c
    if kind == "judge_failed":
        c.inferred_items = len(_checklist(pred))
    elif kind == "scored":
        labels = pred.get("labels")
        if labels is None:
            raise EvalInputError(f"({key_name(key)}): an inference with no matcher labels")
        c.inferred_items = len(_checklist(pred))
        c.gold_credit = sum(COVERAGE_CREDIT[lab["coverage"]] for lab in labels.get("gold") or [])
        c.inferred_credit = sum(COVERAGE_CREDIT[lab["coverage"]] for lab in labels.get("inferred") or [])
    return c


def score_inference(golds: Mapping[CupidKey, Gold], preds: Mapping[CupidKey, Any]) -> list[dict[str, Any]]:
    """Rows ``inference`` (official line) and ``inference_strict``, per instance type and overall,
    with the count of each outcome."""
    only_known(golds, preds)
    lines: dict[bool, dict[str, Counts]] = {False: {}, True: {}}
    kinds: dict[str, Counter[str]] = {}
    for key in sorted(golds):
        pred, t = as_record(preds.get(key)), golds[key].instance_type
        kind = outcome(pred)
        for group in (t, "overall"):
            kinds.setdefault(group, Counter())[kind] += 1
        for strict in (False, True):
            c = inference_counts(key, golds[key], pred, strict)
            for group in (t, "overall"):
                lines[strict].setdefault(group, Counts()).add(c)
    order = [g for g in INSTANCE_TYPES if g in kinds] + ["overall"]
    return [
        {"task": task, "group": g, **lines[strict][g].row(), **_kind_counts(kinds[g])}
        for strict, task in ((False, "inference"), (True, "inference_strict"))
        for g in order
    ]


def _kind_counts(k: Counter) -> dict[str, int]:
    return {
        f"n_{name}": k.get(name, 0)
        for name in ("missing", "model_failed", "context_length", "judge_failed", "empty", "scored")
    }


def score_generation(golds: Mapping[CupidKey, Gold], preds: Mapping[CupidKey, Any]) -> list[dict[str, Any]]:
    """Rows ``generation`` (official mean) and ``generation_strict`` per instance type and overall."""
    only_known(golds, preds)
    rows = []
    for strict, task in ((False, "generation"), (True, "generation_strict")):
        scores: dict[str, list[float]] = {}
        kinds: dict[str, Counter] = {}
        for key in sorted(golds):
            pred = as_record(preds.get(key))
            kind = outcome(pred, "generation")
            t = golds[key].instance_type
            for group in (t, "overall"):
                kinds.setdefault(group, Counter())[kind] += 1
            if kind in ("missing", "model_failed") and not strict:
                continue
            value = 0.0
            if kind == "scored" and pred is not None:
                if pred.get("score") is None:
                    raise EvalInputError(f"({key_name(key)}): a response with no judge score")
                value = float(pred["score"])
            for group in (t, "overall"):
                scores.setdefault(group, []).append(value)
        for group in [g for g in INSTANCE_TYPES if g in kinds] + ["overall"]:
            s = scores.get(group, [])
            hist = Counter(int(x) for x in s)
            mean = sum(s) / len(s) if s else 0  # result.aggregate_results: 0 with no instance
            rows.append(
                {
                    "task": task,
                    "group": group,
                    "n_instances": sum(kinds[group].values()),
                    "n_counted": len(s),
                    "mean": round(float(mean), 6),
                    "mean_exact": mean,
                    "distribution": {str(i): hist.get(i, 0) for i in range(0, 11)},
                    **_kind_counts(kinds[group]),
                }
            )
    return rows


def parse_score(text: str) -> float | None:
    """The judge's score as the official ``process_generation_result`` reads the text after the score
    header (``7/10`` -> 7, ``8.5`` -> 8, ``**9**`` -> 9); None when it is not a number."""
    s = text.strip()
    for sep in ("/", ".", "\n\n"):
        if sep in s:
            s = s.split(sep)[0]
    s = s.replace("**", "")
    try:
        return float(s)
    except ValueError:
        return None
