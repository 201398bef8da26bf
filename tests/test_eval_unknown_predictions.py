"""Each CUPID scorer (prefkit's and the official protocol's, inference and generation) refuses a
prediction for an instance the release config does not hold, in one sentence naming it."""

from __future__ import annotations

import pytest
from prefkit.pipelines.eval import cupid_metrics, cupid_official
from prefkit.pipelines.eval.cupid_metrics import Gold
from prefkit.pipelines.eval.release import EvalInputError

GOLDS = {("p1", "consistent"): Gold("consistent", ("Is it short?",), 1)}
PREDS = {("p1", "consistent"): {"error": "model: timeout"}, ("p9", "changing"): {"error": "model: timeout"}}


@pytest.mark.parametrize(
    "score",
    [
        cupid_metrics.score_inference,
        cupid_metrics.score_generation,
        cupid_official.score_inference,
        cupid_official.score_generation,
    ],
)
def test_a_prediction_for_an_instance_not_in_the_config_is_refused(score):
    with pytest.raises(EvalInputError) as refused:
        score(GOLDS, PREDS)
    assert str(refused.value) == "prediction for (p9|changing), which is not in the release config"
    assert score(GOLDS, {k: v for k, v in PREDS.items() if k in GOLDS})  # the known one alone scores
