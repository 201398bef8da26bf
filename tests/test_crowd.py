"""Dawid–Skene and MACE (curation/annotation/reliability_models.py) against hand-computed cases and a simulation with
known annotators."""

from __future__ import annotations

import numpy as np
import pytest
from prefkit.curation.annotation.reliability_models import fit, unit_posterior


def test_with_every_item_gold_the_matrices_are_the_smoothed_counts_by_hand():
    # 4 items, truths 0 0 1 1 (all gold); worker 0 always right; worker 1 says 0 every time.
    items = [0, 1, 2, 3, 0, 1, 2, 3]
    workers = [0, 0, 0, 0, 1, 1, 1, 1]
    labels = [0, 0, 1, 1, 0, 0, 0, 0]
    f = fit(items, workers, labels, 4, 2, 2, gold={0: 0, 1: 0, 2: 1, 3: 1}, smoothing=0.5)
    # worker 0: truth 0 -> said 0 twice: (2 + .5) / (2 + 1) ; truth 1 -> said 1 twice
    assert f.confusion[0] == pytest.approx(np.array([[2.5 / 3, 0.5 / 3], [0.5 / 3, 2.5 / 3]]))
    # worker 1: truth 1 -> said 0 twice
    assert f.confusion[1] == pytest.approx(np.array([[2.5 / 3, 0.5 / 3], [2.5 / 3, 0.5 / 3]]))
    assert f.priors == pytest.approx([0.5, 0.5])  # (2 + .5) / (4 + 1) each
    assert f.reliability == pytest.approx([2.5 / 3, 0.5 * 2.5 / 3 + 0.5 * 0.5 / 3])


def test_a_units_posterior_is_bayes_rule_by_hand():
    priors = np.array([0.8, 0.2])
    good = np.array([[0.9, 0.1], [0.2, 0.8]])
    coin = np.array([[0.5, 0.5], [0.5, 0.5]])
    post = unit_posterior([(0, 1), (1, 0)], priors, {0: good, 1: coin})
    # P(1 | good says 1, coin says 0) = .2*.8*.5 / (.2*.8*.5 + .8*.1*.5) = .08 / .12
    assert post[1] == pytest.approx(0.08 / 0.12)


def _simulate(seed: int, n: int = 1500):
    rng = np.random.default_rng(seed)
    truth = (rng.random(n) < 0.7).astype(int)
    acc = np.array([0.95, 0.9, 0.85, 0.8, 0.75, 0.6, 0.55, 0.15])  # the last one is adversarial
    rows = []
    for i in range(n):
        for w in rng.choice(len(acc), 3, replace=False):
            rows.append((i, w, truth[i] if rng.random() < acc[w] else 1 - truth[i]))
    items, workers, labels = (np.array(c) for c in zip(*rows, strict=True))
    return truth, acc, items, workers, labels


@pytest.mark.parametrize("method", ["dawid_skene", "mace"])
def test_both_models_recover_the_annotators_and_beat_the_majority(method):
    truth, acc, items, workers, labels = _simulate(0)
    n, w = len(truth), len(acc)
    f = fit(items, workers, labels, n, w, 2, method)
    votes = np.zeros((n, 2))
    np.add.at(votes, (items, labels), 1)
    assert (f.posteriors.argmax(1) == truth).mean() > (votes.argmax(1) == truth).mean() + 0.03
    honest = slice(0, 7)
    assert np.corrcoef(f.reliability[honest], acc[honest])[0, 1] > 0.95
    assert f.reliability[7] < 0.5  # the adversary is found out


def test_dawid_skene_models_the_adversary_as_a_flipper():
    truth, acc, items, workers, labels = _simulate(1)
    f = fit(items, workers, labels, len(truth), len(acc), 2, "dawid_skene")
    assert f.confusion[7][0, 1] > 0.7 and f.confusion[7][1, 0] > 0.7
    assert abs(f.reliability[:7] - acc[:7]).max() < 0.08


# -- issue 32, item 5: a zero probability is well defined arithmetic, with no warning -------------------
def test_a_zero_confusion_entry_rules_its_class_out_without_a_warning():
    import warnings

    priors = np.array([0.5, 0.5])
    sure = np.array([[1.0, 0.0], [0.2, 0.8]])  # says 1 only when the truth is 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "divide by zero encountered in log" would raise here
        post = unit_posterior([(0, 1)], priors, {0: sure})
        assert post == pytest.approx([0.0, 1.0])
        # two labels that rule out every class between them say nothing: the priors, never nan
        blind = np.array([[0.0, 1.0], [1.0, 0.0]])  # always wrong
        assert unit_posterior([(0, 1), (1, 1)], np.array([0.3, 0.7]), {0: sure, 1: blind}) == pytest.approx(
            [0.3, 0.7]
        )
        assert unit_posterior([(0, 0)], np.array([1.0, 0.0]), {0: sure}) == pytest.approx([1.0, 0.0])


def test_a_fit_with_a_class_nobody_uses_stays_finite_without_a_warning():
    import warnings

    items = np.array([0, 0, 1, 1])
    workers = np.array([0, 1, 0, 1])
    labels = np.array([0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("dawid_skene", "mace"):
            result = fit(items, workers, labels, n_items=2, n_workers=2, n_classes=3, method=method)
            assert np.isfinite(result.posteriors).all() and np.isfinite(result.confusion).all()
