"""Annotator reliability models on categorical labels: Dawid–Skene and MACE, fitted by EM with numpy,
and the posterior of one unit's true value given its labels.

Pure functions on integer codes (``items × workers → class``); nothing here touches the store.

* **Dawid–Skene** (Dawid & Skene 1979): each worker ``w`` has a confusion matrix ``π[w, k, l]`` =
  P(worker says ``l`` | the truth is ``k``); the classes have priors ``p[k]``. EM from majority-vote
  posteriors; the M-step adds ``smoothing`` pseudo-counts to every confusion cell and prior (a
  Dirichlet prior, so a worker with few labels is not judged perfect or hopeless).
* **MACE** (Hovy et al. 2013): each worker knows the answer with probability ``θ[w]`` and otherwise
  "spams" from their own distribution ``ξ[w]``; its confusion matrix is therefore
  ``θ·I + (1 − θ)·ξ``, which needs far fewer parameters per worker. Fitted with the same EM loop.

Items with a known answer (gold) keep it fixed in the E-step, so they anchor each worker's matrix:
the models learn reliability from every label, gold ones included. crowd-kit implements the same
models, but it brings transformers and scikit-learn with it; these ~150 lines need only numpy and
are checked against hand-computed cases (tests/test_crowd.py).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Method = Literal["dawid_skene", "mace"]
METHODS: tuple[str, ...] = ("dawid_skene", "mace")


@dataclass(frozen=True)
class CrowdFit:
    """A fitted model: per-item posteriors over the classes, class priors, each worker's confusion
    matrix (rows: truth, columns: what they said) and reliability (expected accuracy under the priors)."""

    method: str
    posteriors: np.ndarray  # items × classes
    priors: np.ndarray  # classes
    confusion: np.ndarray  # workers × classes × classes
    iterations: int

    @property
    def reliability(self) -> np.ndarray:
        """P(a worker's label is right) = Σ_k p[k] π[w, k, k]."""
        return np.einsum("k,wkk->w", self.priors, self.confusion)


def _onehot_votes(items: np.ndarray, labels: np.ndarray, n_items: int, n_classes: int) -> np.ndarray:
    votes = np.zeros((n_items, n_classes))
    np.add.at(votes, (items, labels), 1.0)
    return votes


def _clamp(post: np.ndarray, gold: dict[int, int]) -> np.ndarray:
    for i, k in gold.items():
        post[i] = 0.0
        post[i, k] = 1.0
    return post


def _log(p: np.ndarray) -> np.ndarray:
    """``log p`` with ``log 0 = -inf`` on purpose: a zero probability rules its class out."""
    with np.errstate(divide="ignore"):
        return np.log(p)


def _normalised(log: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Rows of log scores (up to a constant) as probabilities; a row whose every class was ruled out
    (all ``-inf``) is the priors instead: contradictory labels say nothing about the unit."""
    log = np.atleast_2d(log)
    top = log.max(axis=1, keepdims=True)
    dead = ~np.isfinite(top[:, 0])
    post = np.exp(log - np.where(np.isfinite(top), top, 0.0))
    post[dead] = priors
    return post / post.sum(axis=1, keepdims=True)


def _e_step(items, workers, labels, priors, confusion, n_items, gold) -> np.ndarray:
    log = np.tile(_log(priors), (n_items, 1))
    np.add.at(log, items, _log(confusion[workers, :, labels]))
    return _clamp(_normalised(log, priors), gold)


def _confusion_counts(items, workers, labels, post, n_workers, n_classes) -> np.ndarray:
    counts = np.zeros((n_workers, n_classes, n_classes))
    # numpy's stub for ufunc.at leaves slices out of a tuple index (numpy accepts them)
    np.add.at(counts, (workers, slice(None), labels), post[items])  # type: ignore[arg-type]
    return counts


def _mace_step(items, workers, labels, post, theta, xi, smoothing):
    """MACE's M-step: a label the worker gave is *known* with probability
    ``T[i, l] θ / (θ + (1 − θ) ξ_l)`` (it matches the truth and was not a lucky spam), otherwise spam;
    θ is the expected share known, ξ the distribution of the spam."""
    n_workers, n_classes = xi.shape
    share = theta[workers] / (theta[workers] + (1 - theta[workers]) * xi[workers, labels])
    knew = post[items, labels] * share
    n = np.bincount(workers, minlength=n_workers).astype(float)
    theta = (np.bincount(workers, weights=knew, minlength=n_workers) + smoothing) / (n + 2 * smoothing)
    spam = np.zeros((n_workers, n_classes))
    np.add.at(spam, (workers, labels), 1.0 - knew)
    xi = spam + smoothing
    return theta, xi / xi.sum(axis=1, keepdims=True)


def _mace_matrix(theta: np.ndarray, xi: np.ndarray) -> np.ndarray:
    n_classes = xi.shape[1]
    return theta[:, None, None] * np.eye(n_classes)[None] + (1 - theta)[:, None, None] * xi[:, None, :]


def fit(
    items: np.ndarray,
    workers: np.ndarray,
    labels: np.ndarray,
    n_items: int,
    n_workers: int,
    n_classes: int,
    method: Method = "dawid_skene",
    gold: dict[int, int] | None = None,
    smoothing: float = 0.5,
    max_iter: int = 100,
    tol: float = 1e-6,
) -> CrowdFit:
    """Fit ``method`` on labels given as three equal-length integer arrays (item, worker, class);
    ``gold`` fixes the truth of some items. Deterministic: no random start."""
    if method not in METHODS:
        raise ValueError(f"unknown reliability model {method!r}; expected one of {', '.join(METHODS)}")
    items, workers, labels = (np.asarray(a, dtype=np.int64) for a in (items, workers, labels))
    gold = gold or {}
    votes = _onehot_votes(items, labels, n_items, n_classes)
    post = _clamp((votes + 1e-9) / (votes + 1e-9).sum(axis=1, keepdims=True), gold)
    theta, xi = np.full(n_workers, 0.5), np.full((n_workers, n_classes), 1.0 / n_classes)
    confusion = _mace_matrix(theta, xi)
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        priors = post.sum(axis=0) + smoothing
        priors /= priors.sum()
        if method == "dawid_skene":
            confusion = _confusion_counts(items, workers, labels, post, n_workers, n_classes) + smoothing
            confusion /= confusion.sum(axis=2, keepdims=True)
        else:
            theta, xi = _mace_step(items, workers, labels, post, theta, xi, smoothing)
            confusion = _mace_matrix(theta, xi)
        new = _e_step(items, workers, labels, priors, confusion, n_items, gold)
        change = float(np.abs(new - post).max()) if n_items else 0.0
        post = new
        if change < tol:
            break
    return CrowdFit(method, post, priors, confusion, iterations)


def unit_posterior(
    said: Sequence[tuple[Any, int]], priors: np.ndarray, confusion: Mapping[Any, np.ndarray]
) -> np.ndarray:
    """P(truth = k | these labels) for one unit: ``said`` is ``[(worker, class), ...]`` and
    ``confusion[worker]`` that worker's matrix, by worker index or name (the Bayes rule the E-step
    applies)."""
    log = _log(np.asarray(priors, dtype=float)).copy()
    for worker, label in said:
        log += _log(confusion[worker][:, label])
    return _normalised(log, np.asarray(priors, dtype=float))[0]


def settled_value(
    post: np.ndarray, classes: Sequence[str], given: Collection[str], confidence: float
) -> int | None:
    """The index of the value a unit's posterior settles it to, or ``None``: the most probable value
    must be alone at the top, reach ``confidence`` and be one some annotator gave (a value nobody chose
    is never decided by a model). The consensus decides by this rule and adaptive overlap stops an
    item by it, so an item never stops with labels the consensus cannot decide."""
    order = post.argsort()[::-1]
    top = int(order[0])
    if len(order) > 1 and post[order[1]] >= post[top] - 1e-9:
        return None
    if post[top] < confidence or classes[top] not in given:
        return None
    return top
