"""The pure reliability statistics against published worked examples and the krippendorff package."""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
import pytest
from prefkit.curation.quality.reliability import (
    ReliabilityError,
    bootstrap_alpha,
    cohen_kappa_pairwise,
    gwet_ac1,
    krippendorff_alpha,
    pattern_alpha,
    percent_agreement,
)
from prefkit.schemas.common import PrefkitError

nan = np.nan

# Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), section E: 4 observers × 12 units,
# values 1..5, missing values blank. The paper reports α = 0.743 / 0.815 / 0.849 / 0.797.
# Gwet's irrCAC ships the same table as cac.raw4raters (AC1 = 0.775, p_a = 0.818, p_e = 0.190).
FOUR_BY_TWELVE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]
# Krippendorff's 3 coders × 15 units example with missing values: nominal 0.691, interval 0.811.
THREE_BY_FIFTEEN = [
    [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
    [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
    [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
]
# irrCAC's cont3x3abstractors: 100 abstracts, 2 raters, 3 categories; AC1 = 0.849, p_a = 0.89, κ = 0.796.
ABSTRACTORS = [(0, 0)] * 13 + [(1, 1)] * 20 + [(1, 2)] * 7 + [(2, 1)] * 4 + [(2, 2)] * 56


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_alpha_matches_krippendorff_four_observer_example(level, published):
    assert round(krippendorff_alpha(FOUR_BY_TWELVE, level), 3) == published
    assert pattern_alpha(FOUR_BY_TWELVE, level) == pytest.approx(
        krippendorff_alpha(FOUR_BY_TWELVE, level), abs=1e-12
    )


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.691), ("interval", 0.811)])
def test_alpha_matches_krippendorff_three_coder_example_with_missing_values(level, published):
    assert round(krippendorff_alpha(THREE_BY_FIFTEEN, level), 3) == published
    assert round(pattern_alpha(THREE_BY_FIFTEEN, level), 3) == published


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pattern_alpha_equals_the_package_on_random_data_with_missing_values(level, seed):
    rng = np.random.default_rng(seed)
    data = rng.integers(1, 6, size=(4, 60)).astype(float)
    data[:, :20] = data[0, :20]  # some agreement, so alpha is not near zero everywhere
    data[rng.random(data.shape) < 0.3] = nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert pattern_alpha(data, level) == pytest.approx(expected, abs=1e-10)


def test_ac1_matches_gwet_raw4raters_example():
    assert round(percent_agreement(FOUR_BY_TWELVE), 3) == 0.818
    assert round(gwet_ac1(FOUR_BY_TWELVE), 3) == 0.775


def test_ac1_and_kappa_match_irrcac_abstractors_table():
    matrix = np.array(ABSTRACTORS, dtype=float).T
    assert round(gwet_ac1(matrix), 4) == 0.8493
    assert percent_agreement(matrix) == pytest.approx(0.89)
    assert round(cohen_kappa_pairwise(matrix), 3) == 0.796


def test_ac1_stays_high_on_skewed_labels_where_alpha_collapses():
    # 100 units, 2 raters: 96 agree on "yes", 4 split. p_a = 0.96; by hand AC1 = (0.96 - 0.0392) / 0.9608.
    matrix = np.array([(1, 1)] * 96 + [(1, 0)] * 2 + [(0, 1)] * 2, dtype=float).T
    assert gwet_ac1(matrix) == pytest.approx((0.96 - 0.0392) / 0.9608)
    assert krippendorff_alpha(matrix, "nominal") < 0.0
    assert cohen_kappa_pairwise(matrix) == pytest.approx((0.96 - 0.9608) / (1 - 0.9608))


def test_ac1_uses_the_number_of_scale_categories_when_given():
    matrix = np.array([(1, 1)] * 8 + [(1, 0)] * 2, dtype=float).T
    assert gwet_ac1(matrix, n_categories=3) > gwet_ac1(matrix)  # chance agreement is lower with 3 categories


def test_undefined_statistics_are_nan_not_errors():
    one_value = [[1, 1, 1], [1, 1, nan]]
    assert np.isnan(krippendorff_alpha(one_value, "nominal"))
    assert all(np.isnan(x) for x in bootstrap_alpha(one_value, "nominal", 50, 0))
    no_pairs = [[1, nan], [nan, 2]]
    assert np.isnan(percent_agreement(no_pairs))
    assert np.isnan(gwet_ac1(no_pairs))
    assert np.isnan(cohen_kappa_pairwise(no_pairs))


def test_unknown_level_is_a_user_error():
    with pytest.raises(PrefkitError, match="level of measurement"):
        krippendorff_alpha(FOUR_BY_TWELVE, "interval-ish")
    with pytest.raises(ReliabilityError, match="2-D"):
        percent_agreement([1, 2, 3])


def test_bootstrap_is_seeded_and_brackets_the_point_estimate():
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 3, 300)
    data = np.where(rng.random((3, 300)) < 0.8, truth, rng.integers(0, 3, (3, 300))).astype(float)
    low, high, p_below = bootstrap_alpha(data, "nominal", 500, seed=3, alpha_min=0.8)
    assert (low, high, p_below) == bootstrap_alpha(data, "nominal", 500, seed=3, alpha_min=0.8)
    assert low < krippendorff_alpha(data, "nominal") < high
    assert bootstrap_alpha(data, "nominal", 200, seed=3, alpha_min=1.01)[2] == 1.0
    assert bootstrap_alpha(data, "nominal", 200, seed=3, alpha_min=-1.0)[2] == 0.0


def _simulate(rng, n_units: int, p_true: np.ndarray, accuracy: float) -> np.ndarray:
    """3 raters: each reports the unit's true class with prob ``accuracy``, else a uniform class; 10% missing."""
    truth = rng.choice(len(p_true), size=n_units, p=p_true)
    noise = rng.integers(0, len(p_true), size=(3, n_units))
    data = np.where(rng.random((3, n_units)) < accuracy, truth, noise).astype(float)
    data[rng.random(data.shape) < 0.1] = nan
    return data


def test_bootstrap_ci_covers_the_true_alpha_in_simulation():
    p_true, accuracy = np.array([0.5, 0.3, 0.2]), 0.7
    # Population alpha of this process: two ratings of one unit agree with prob 0.8² + 2·0.1² = 0.66;
    # ratings are distributed r = 0.7·p + 0.1, so two ratings of different units differ with 1 − Σ r².
    r = accuracy * p_true + (1 - accuracy) / 3
    true_alpha = 1 - 0.34 / (1 - (r**2).sum())
    rng = np.random.default_rng(2024)
    covered = 0
    for i in range(100):
        low, high, _ = bootstrap_alpha(_simulate(rng, 150, p_true, accuracy), "nominal", 400, seed=i)
        covered += low <= true_alpha <= high
    assert covered >= 85


def test_bootstrap_handles_ordinal_and_continuous_values():
    rng = np.random.default_rng(5)
    truth = rng.normal(size=200)
    data = truth + rng.normal(scale=0.3, size=(3, 200))
    low, high, _ = bootstrap_alpha(data, "interval", 300, seed=0)
    assert low < pattern_alpha(data, "interval") < high
    ranks = np.clip(np.round(data + 2), 0, 4)
    low, high, _ = bootstrap_alpha(ranks, "ordinal", 300, seed=0)
    assert low < krippendorff_alpha(ranks, "ordinal") < high


def test_alpha_is_undefined_without_a_warning_when_the_paired_units_hold_one_value():
    # "yes" three times in the one unit with two ratings; "no" only in a unit rated once (a declared
    # multi_label question answered by one annotator): α is undefined, said as NaN, not a division warning.
    matrix = np.array([[1.0, 0.0], [1.0, np.nan], [1.0, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(krippendorff_alpha(matrix, "nominal"))
