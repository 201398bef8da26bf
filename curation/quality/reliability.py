"""Pure reliability statistics on a rater × unit matrix (``NaN`` = the rater did not rate the unit).

Krippendorff's α comes from the ``krippendorff`` package, always with the level of measurement
spelled out (the package defaults to interval). Gwet's AC1, percent agreement and the bootstrap are
implemented here with numpy, Cohen's κ per rater pair too (its closed form: (p_o − p_e) / (1 − p_e)).

The bootstrap resamples units with replacement. What a unit with at least two ratings adds to α's
coincidences depends only on its *pattern* (how many ratings of each value it holds), so resampling N
units is the same as drawing a multinomial over the distinct patterns. A replicate then costs one
multinomial draw and a few small matrix products, whatever the number of units, and all replicates
are computed together. This module must never touch the store.
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

import krippendorff
import numpy as np
from prefkit.schemas.common import PrefkitError

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
_DENSE_LIMIT = 20_000_000  # cells of a float64 work array kept in memory at once (~160 MB)


class ReliabilityError(PrefkitError, ValueError):
    """The data cannot be used for a reliability statistic (wrong shape or level)."""


def as_matrix(matrix) -> np.ndarray:
    """A float rater × unit matrix; ``None`` becomes ``NaN``."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ReliabilityError(f"expected a 2-D rater × unit matrix, got {m.ndim} dimension(s)")
    return m


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ReliabilityError(f"unknown level of measurement {level!r}; expected one of {', '.join(LEVELS)}")


def value_counts(matrix) -> tuple[np.ndarray, np.ndarray]:
    """``(values, counts)``: the sorted distinct values and a unit × value count matrix."""
    m = as_matrix(matrix)
    values, idx = np.unique(m[~np.isnan(m)], return_inverse=True)
    unit = np.nonzero(~np.isnan(m))[1]
    flat = np.bincount(unit * len(values) + idx, minlength=m.shape[1] * len(values))
    return values, flat.reshape(m.shape[1], len(values))


# -- Krippendorff's alpha -----------------------------------------------------------------------------
def krippendorff_alpha(matrix, level: Level) -> float:
    """Krippendorff's α (the ``krippendorff`` package); ``NaN`` when fewer than two values occur in the
    units with two ratings, or no unit has two (α is undefined there)."""
    _check_level(level)
    m = as_matrix(matrix)
    _, counts = value_counts(m)
    pairable = counts[counts.sum(axis=1) >= 2]
    if (pairable.sum(axis=0) > 0).sum() < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=m, level_of_measurement=level))


def _delta(values: np.ndarray, level: str) -> np.ndarray:
    """The squared difference δ²(c, k) between two values at a fixed level (not ordinal)."""
    c, k = values[:, None], values[None, :]
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        d = ((c - k) / (c + k)) ** 2
    return np.nan_to_num(d, nan=0.0, posinf=0.0)


def _patterns(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of the pairable part of ``counts`` (units with two ratings or more) and how often
    each occurs."""
    pairable = counts[counts.sum(axis=1) >= 2]
    if pairable.size == 0:
        return pairable, np.zeros(0, dtype=np.int64)
    base = int(pairable.max()) + 1
    if base ** pairable.shape[1] < 2**62:  # encode each row as one integer: much faster than axis=0
        weights = base ** np.arange(pairable.shape[1], dtype=np.int64)
        _, first, freq = np.unique(pairable @ weights, return_index=True, return_counts=True)
        return pairable[first], freq
    patterns, freq = np.unique(pairable, axis=0, return_counts=True)
    return patterns, freq


def _squared_spread(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``Σ_c Σ_k w_c w_k (x_c − x_k)²`` per row, from first and second moments (no V × V array)."""
    return 2 * weights.sum(axis=-1) * (weights * x**2).sum(axis=-1) - 2 * (weights * x).sum(axis=-1) ** 2


def _alpha_of_draws(draws: np.ndarray, patterns: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """α for each row of ``draws`` (B × P: how many units of each pattern a sample holds).

    α = 1 − (n − 1) D_o / D_e with D_o = Σ o_ck δ_ck from the coincidences o and D_e = Σ n_c n_k δ_ck
    from their marginals. A unit's coincidences are (n nᵀ − diag n) / (m − 1), so D_o is a weighted sum
    of one number per pattern for fixed distances. Ordinal δ(c, k) is the difference of mid-ranks
    ``Σ_{g<c} n_g + n_c / 2``, which depend on the sample's marginals, so it is computed per row.
    """
    pats = patterns.astype(float)
    m = pats.sum(axis=1)
    nc = draws @ pats
    n = nc.sum(axis=1)
    if level == "ordinal":
        mid = np.cumsum(nc, axis=1) - nc / 2
        per_pattern = (2 * m * ((mid**2) @ pats.T) - 2 * (mid @ pats.T) ** 2) / (m - 1)
        d_o = (draws * per_pattern).sum(axis=1)
        d_e = _squared_spread(nc, mid)
    elif level == "nominal":
        d_o = draws @ ((m**2 - (pats**2).sum(axis=1)) / (m - 1))
        d_e = n**2 - (nc**2).sum(axis=1)
    elif level == "interval":
        d_o = draws @ (_squared_spread(pats, values[None, :]) / (m - 1))
        d_e = _squared_spread(nc, values[None, :])
    else:
        delta = _delta(values, level)
        d_o = draws @ (np.einsum("pc,ck,pk->p", pats, delta, pats) / (m - 1))
        d_e = np.einsum("bc,ck,bk->b", nc, delta, nc)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1) * d_o / d_e
    return np.where(d_e > 1e-12 * np.maximum(n, 1) ** 2, alpha, np.nan)


def pattern_alpha(matrix, level: Level) -> float:
    """α computed with the same arithmetic the bootstrap uses (equal to :func:`krippendorff_alpha`)."""
    _check_level(level)
    values, counts = value_counts(matrix)
    patterns, freq = _patterns(counts)
    if len(values) < 2 or len(freq) == 0:
        return float("nan")
    return float(_alpha_of_draws(freq[None, :], patterns, values, level)[0])


def bootstrap_alpha(
    matrix, level: Level, n_boot: int = 1000, seed: int = 0, alpha_min: float = 0.8
) -> tuple[float, float, float]:
    """``(ci_low, ci_high, p_below)``: the 95% percentile interval of α over ``n_boot`` bootstrap
    replicates that resample units with replacement, and the share of replicates with α < ``alpha_min``.

    Units with fewer than two ratings carry no information on agreement and are not resampled.
    Replicates where α is undefined (a single value drawn) are left out. ``NaN``s when α is undefined.
    """
    _check_level(level)
    if n_boot < 1:
        raise ReliabilityError(f"n_boot must be at least 1, got {n_boot}")
    values, counts = value_counts(matrix)
    patterns, freq = _patterns(counts)
    nan = float("nan")
    if len(values) < 2 or len(freq) == 0:
        return nan, nan, nan
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_boot, _DENSE_LIMIT // (3 * max(len(freq), len(values)))))
    reps = np.concatenate(
        [
            _alpha_of_draws(
                rng.multinomial(int(freq.sum()), freq / freq.sum(), size=min(chunk, n_boot - start)).astype(
                    float
                ),
                patterns,
                values,
                level,
            )
            for start in range(0, n_boot, chunk)
        ]
    )
    reps = reps[~np.isnan(reps)]
    if reps.size == 0:
        return nan, nan, nan
    low, high = np.percentile(reps, [2.5, 97.5])
    return float(low), float(high), float(np.mean(reps < alpha_min))


# -- agreement coefficients that are not alpha ---------------------------------------------------------
def percent_agreement(matrix) -> float:
    """Share of agreeing rating pairs per unit, averaged over units with at least two ratings."""
    _, counts = value_counts(matrix)
    m = counts.sum(axis=1)
    ok = m >= 2
    if not ok.any():
        return float("nan")
    per_unit = (counts[ok] * (counts[ok] - 1)).sum(axis=1) / (m[ok] * (m[ok] - 1))
    return float(per_unit.mean())


def gwet_ac1(matrix, n_categories: int | None = None) -> float:
    """Gwet's AC1 for any number of raters with missing ratings (Gwet 2008; Handbook, 4th ed.).

    ``p_a`` is :func:`percent_agreement`; ``p_e = Σ π_k (1 − π_k) / (q − 1)`` with ``π_k`` the mean share
    of category k over units rated at least once and ``q`` the number of categories of the scale
    (``n_categories``; default: the categories observed).
    """
    _, counts = value_counts(matrix)
    q = n_categories if n_categories is not None else counts.shape[1]
    m = counts.sum(axis=1)
    if q < 2 or not (m >= 2).any():
        return float("nan")
    pi = (counts[m >= 1] / m[m >= 1, None]).mean(axis=0)
    p_e = float((pi * (1 - pi)).sum() / (q - 1))
    p_a = percent_agreement(matrix)
    return (p_a - p_e) / (1 - p_e) if p_e < 1 else float("nan")


def cohen_kappa_pairwise(matrix, min_shared: int = 2) -> float:
    """Mean unweighted Cohen's κ over rater pairs that share at least ``min_shared`` units; pairs
    whose κ is undefined (one value only: p_e = 1) are left out. ``NaN`` when none."""
    m = as_matrix(matrix)
    values = np.unique(m[~np.isnan(m)])
    kappas = []
    for a, b in combinations(range(m.shape[0]), 2):
        both = ~np.isnan(m[a]) & ~np.isnan(m[b])
        if both.sum() < min_shared:
            continue
        ia, ib = np.searchsorted(values, m[a, both]), np.searchsorted(values, m[b, both])
        table = np.zeros((len(values), len(values)))
        np.add.at(table, (ia, ib), 1)
        n = table.sum()
        p_o = np.trace(table) / n
        p_e = float((table.sum(axis=1) * table.sum(axis=0)).sum() / n**2)
        if p_e < 1:
            kappas.append(float((p_o - p_e) / (1 - p_e)))
    return float(np.mean(kappas)) if kappas else float("nan")
