"""The metrics of protocol ``prefkit-declared-v1``, by the target's type, each with a bootstrap 95 % CI.

label: accuracy, macro-F1 over the union of reference and predicted labels, per-class F1 (as
scikit-learn's ``accuracy_score`` / ``f1_score``); multi_label: micro- and macro-F1 over the labels
either side uses; rating: MAE and Spearman's ρ (SciPy's, midranks for ties); ranking: Kendall's τ-b
per item (SciPy's ``kendalltau``) averaged, and top-1 accuracy; span: precision, recall and F1 over
words and labels, pooled. Each metric is a function of sums of per-item statistics, so the point
value and every bootstrap resample (items drawn with replacement, a fixed seed) are one matrix
product. Items with no usable answer are counted beside the score, never scored. Pure functions.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

N_BOOT = 1000
Metrics = Callable[[np.ndarray], dict[tuple[str, str], np.ndarray]]


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)


def _onehot(codes: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros((len(codes), width))
    out[np.arange(len(codes)), codes] = 1
    return out


def _label(golds: list, preds: list, choices: list) -> tuple[np.ndarray, Metrics]:
    labels = [c for c in choices if c in set(golds) | set(preds)]
    at, k = {c: i for i, c in enumerate(labels)}, len(labels)

    def metrics(s: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
        conf = s.reshape(*s.shape[:-1], k, k)
        tp = np.diagonal(conf, axis1=-2, axis2=-1)
        f1 = _div(2 * tp, conf.sum(-1) + conf.sum(-2))  # NaN: a label absent from a resample
        out = {("all", "accuracy"): tp.sum(-1) / s.sum(-1), ("all", "macro_f1"): np.nanmean(f1, -1)}
        return out | {(str(c), "f1"): f1[..., i] for i, c in enumerate(labels)}

    return _onehot(
        np.array([at[g] * k + at[p] for g, p in zip(golds, preds, strict=True)], int), k * k
    ), metrics


def _multi(golds: list, preds: list, choices: list) -> tuple[np.ndarray, Metrics]:
    labels = [c for c in choices if any(c in x for x in golds + preds)]
    g = np.array([[c in x for c in labels] for x in golds], float).reshape(-1, len(labels))
    p = np.array([[c in x for c in labels] for x in preds], float).reshape(-1, len(labels))

    def metrics(s: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
        tp, fp, fn = np.split(s[..., 1:], 3, axis=-1)
        micro = _div(2 * tp.sum(-1), (2 * tp + fp + fn).sum(-1))
        return {
            ("all", "micro_f1"): micro,
            ("all", "macro_f1"): np.nanmean(_div(2 * tp, 2 * tp + fp + fn), -1),
        }

    return np.hstack([np.ones((len(g), 1)), g * p, (1 - g) * p, g * (1 - p)]), metrics


def _rating(golds: list, preds: list, choices: list) -> tuple[np.ndarray, Metrics]:
    at, k = {c: i for i, c in enumerate(choices)}, len(choices)
    codes = np.array([at[g] * k + at[p] for g, p in zip(golds, preds, strict=True)], int)
    errors = np.abs(np.array(golds, float) - np.array(preds, float))

    def metrics(s: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
        conf, n = s[..., 1:].reshape(*s.shape[:-1], k, k), s[..., 1:].sum(-1)

        def midranks(counts: np.ndarray) -> np.ndarray:  # each level's rank among n values, ties averaged
            return np.cumsum(counts, -1) - counts + (counts + 1) / 2 - ((n + 1) / 2)[..., None]

        rg, rp = midranks(conf.sum(-1)), midranks(conf.sum(-2))
        cov = np.einsum("...ij,...i,...j->...", conf, rg, rp)
        var = np.einsum("...i,...i->...", conf.sum(-1), rg**2) * np.einsum(
            "...j,...j->...", conf.sum(-2), rp**2
        )
        return {("all", "mae"): s[..., 0] / n, ("all", "spearman"): _div(cov, np.sqrt(var))}

    return np.hstack([errors[:, None], _onehot(codes, k * k)]), metrics


def _ranking(golds: list, preds: list, choices: list) -> tuple[np.ndarray, Metrics]:
    rows = []  # per item: the predicted place of each value in the reference's order (no ties: τ-b = τ-a)
    for g, p in zip(golds, preds, strict=True):
        at = {v: i for i, v in enumerate(p)}
        places = [at[v] for v in g]
        pairs = [(a < b) - (a > b) for i, a in enumerate(places) for b in places[i + 1 :]]
        rows.append((1.0, sum(pairs) / len(pairs) if pairs else 1.0, float(g[0] == p[0])))

    def metrics(s: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
        return {
            ("all", "kendall_tau_b"): s[..., 1] / s[..., 0],
            ("all", "top1_accuracy"): s[..., 2] / s[..., 0],
        }

    return np.array(rows, float).reshape(-1, 3), metrics


def _span(counts: list) -> tuple[np.ndarray, Metrics]:
    def metrics(s: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
        tp, fp, fn = s[..., 0], s[..., 1], s[..., 2]
        return {
            ("all", "precision"): _div(tp, tp + fp),
            ("all", "recall"): _div(tp, tp + fn),
            ("all", "f1"): _div(2 * tp, 2 * tp + fp + fn),
        }

    return np.array(counts, float).reshape(-1, 3), metrics


def _grades(grades: list, scale: list) -> tuple[np.ndarray, Metrics]:
    """A judged text target: the mean grade (a label scale's by position, from 1) and each grade's share."""
    at = {g: i for i, g in enumerate(scale)}
    value = [float(g) if isinstance(g, int) else at[g] + 1.0 for g in grades]

    def metrics(s: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
        out = {("all", "mean_grade"): s[..., 1] / s[..., 0]}
        return out | {(str(g), "share"): s[..., 2 + i] / s[..., 0] for i, g in enumerate(scale)}

    codes = np.array([at[g] for g in grades], int)
    return np.column_stack([np.ones(len(codes)), value or np.zeros(0), _onehot(codes, len(scale))]), metrics


def boot_sums(stats: np.ndarray, n_boot: int = N_BOOT, seed: int = 0) -> np.ndarray:
    """The column sums of ``n_boot`` resamples of the rows of ``stats`` (rows drawn with replacement)."""
    n, rng, out = len(stats), np.random.default_rng(seed), []
    for lo in range(0, n_boot, 100):
        m = min(100, n_boot - lo)
        draws = rng.integers(0, n, (m, n)) + (np.arange(m) * n)[:, None]
        out.append(np.bincount(draws.ravel(), minlength=m * n).reshape(m, n) @ stats)
    return np.vstack(out)


def score(
    kind: str, target: dict[str, Any], records: list[dict[str, Any]], n_boot: int = N_BOOT
) -> list[dict]:
    """The report rows of one run: per metric the value, its bootstrap 95 % CI, and the counts."""
    judged = target["type"] == "text"
    done = [r for r in records if r["prediction"] is not None and (not judged or r.get("grade") is not None)]
    golds, preds = [r["gold"] for r in done], [r["prediction"]["answer"] for r in done]
    if target["type"] == "span":
        stats, metrics = _span([r["counts"] for r in done])
    elif judged:
        stats, metrics = _grades([r["grade"] for r in done], target["choices"])
    else:
        by_type = {"label": _label, "multi_label": _multi, "rating": _rating, "ranking": _ranking}
        stats, metrics = by_type[target["type"]](golds, preds, target["choices"])
    task = f"{kind}.{target['name']}"
    counts = {"n_items": len(records), "n_scored": len(done), "n_failed": len(records) - len(done)}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a label no resample holds: NaN, left out
        point = metrics(stats.sum(0)) if done else {}
        boots = metrics(boot_sums(stats, n_boot)) if done else {}
        cis = {k: np.nanpercentile(b, [2.5, 97.5]) for k, b in boots.items()}
    rows = []
    for (group, metric), value in point.items():
        if metric in target["metrics"]:
            cells = dict(zip(("value", "ci_low", "ci_high"), (value, *cis[(group, metric)]), strict=True))
            shown = {k: None if np.isnan(v) else float(v) for k, v in cells.items()}
            rows.append({"task": task, "group": group, "metric": metric, **shown, **counts})
            rows[-1] |= {"judge": "NOT VALIDATED"} if judged else {}
    empty = {"value": None, "ci_low": None, "ci_high": None}
    return rows or [{"task": task, "group": "all", "metric": m, **empty, **counts} for m in target["metrics"]]
