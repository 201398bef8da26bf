"""What suggestions do to labels: the assisted arm against the control arm, per task kind.

``prefkit agreement --assist``, the dashboard's *Suggestions* panel, the release card and the
``assist_anchoring`` gate all read :func:`assist_report`; the protocol (live human labels that record
an arm; bootstrap intervals; the Agresti–Caffo test of the anchoring rates) is in docs/assist.md
(*Measuring what the suggestions do*). This module reads the store and never writes to it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from prefkit.curation.annotation.suggestions import ARMS
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.quality.agreement import JUDGE_SOURCE, field_ratings
from prefkit.curation.quality.consensus import effective_adjudications
from prefkit.curation.quality.reliability import bootstrap_alpha, krippendorff_alpha

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore
    from prefkit.schemas.curation import LabelEvent

PROTOCOL = (
    "live human labels by arm (assisted: suggestion shown; control: withheld, stable hash of annotator, "
    "kind and item); anchoring = share of gold units with a wrong suggestion where the label kept the "
    "suggested value; 95% percentile intervals, non-parametric bootstrap over labels; the difference "
    "tested one-sided at 5% on Agresti-Caffo adjusted rates"
)


@dataclass
class Estimate:
    """A figure with its 95% bootstrap interval and the number of observations behind it."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    def text(self, digits: int = 3) -> str:
        if self.value is None:
            return f"- (n={self.n})"
        if self.ci_low is None:
            return f"{self.value:.{digits}f} (n={self.n})"
        return f"{self.value:.{digits}f} [{self.ci_low:.{digits}f}, {self.ci_high:.{digits}f}] (n={self.n})"


@dataclass
class ArmFigures:
    kind: str
    arm: str
    n_labels: int
    time_median: Estimate
    time_p90: Estimate
    gold_agreement: Estimate
    adjudicated_agreement: Estimate
    anchoring_rate: Estimate
    alpha: dict[str, Estimate] = field(default_factory=dict)


@dataclass
class KindAssist:
    """Both arms of one kind, and the anchoring difference assisted − control."""

    kind: str
    arms: dict[str, ArmFigures]
    anchoring_difference: Estimate
    p05_difference: float | None  # one-sided 95% lower bound of the difference (anchoring_test)
    significantly_worse: bool | None  # None: nothing to compare (an arm without wrong suggestions on gold)
    suggestion_gold_accuracy: Estimate  # share of gold units the suggestions got right


@dataclass
class AssistReport:
    kinds: dict[str, KindAssist]
    n_assisted: int  # live human labels made with a suggestion on screen
    n_control: int
    n_boot: int
    seed: int
    protocol: str = PROTOCOL

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- the arithmetic (pure) ----------------------------------------------------------------------------
def _ci(reps: np.ndarray) -> tuple[float | None, float | None]:
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        return None, None
    return float(np.percentile(reps, 2.5)), float(np.percentile(reps, 97.5))


#: Resampled values held at once (a bootstrap over 100,000 labels draws in chunks of replicates).
_DRAWS_AT_ONCE = 2_000_000


def _draw_chunks(n: int, n_boot: int, rng):
    """Index matrices ``(replicates, n)`` of resamples, ``n_boot`` rows in all, a bounded size each."""
    step = max(1, _DRAWS_AT_ONCE // max(n, 1))
    for start in range(0, n_boot, step):
        yield rng.integers(0, n, size=(min(step, n_boot - start), n))


def estimate(values: list[float], stat: Callable[[np.ndarray], float], n_boot: int, rng) -> Estimate:
    """``stat`` of ``values`` with a percentile interval over ``n_boot`` resamples of them."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return Estimate(None, None, None, 0)
    reps = np.concatenate([np.apply_along_axis(stat, 1, x[idx]) for idx in _draw_chunks(x.size, n_boot, rng)])
    low, high = _ci(reps)
    return Estimate(float(stat(x)), low, high, int(x.size))


def ratio_reps(pairs: list[tuple[int, int]], n_boot: int, rng) -> tuple[float | None, np.ndarray]:
    """Σ kept / Σ wrong over labels ``(kept, wrong)``, and its bootstrap replicates (labels resampled)."""
    x = np.asarray(pairs, dtype=float).reshape(-1, 2)
    if x.size == 0 or x[:, 1].sum() == 0:
        return None, np.array([])
    kept, wrong = [], []
    for idx in _draw_chunks(len(x), n_boot, rng):
        kept.append(x[idx, 0].sum(axis=1))
        wrong.append(x[idx, 1].sum(axis=1))
    k, w = np.concatenate(kept), np.concatenate(wrong)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = np.where(w > 0, k / np.where(w > 0, w, 1), np.nan)
    return float(x[:, 0].sum() / x[:, 1].sum()), reps


def anchoring_units(kind: str, label: dict, suggestion: dict, gold: dict) -> tuple[int, int]:
    """``(kept, wrong)`` of one label: gold units where the suggestion is wrong, and of those the ones
    where the label has the suggestion's value."""
    units = get_kind(kind).units
    s, g, lab = units(suggestion), units(gold), units(label)
    wrong = [u for u, v in g.items() if u in s and s[u] != v]
    return sum(lab.get(u) == s[u] for u in wrong), len(wrong)


# -- reading the project ------------------------------------------------------------------------------
def arm_events(store: ProjectStore, kind: str | None = None) -> list[LabelEvent]:
    """Live human labels that record an arm (also while a release leaves the assisted ones out)."""
    return [
        e
        for e in store.labels.effective_events(kind, every_arm=True)
        if e.action == "label" and e.source != JUDGE_SOURCE and e.assist_arm in ARMS
    ]


def _alpha(tasks, events, kind: str, n_boot: int, seed: int) -> dict[str, Estimate]:
    out = {}
    for (_k, name), fr in field_ratings(tasks, events, [kind]).items():
        raters = fr.raters()
        m = fr.matrix(raters)
        n_units = int(((~np.isnan(m)).sum(axis=0) >= 2).sum()) if m.size else 0
        if n_units == 0:
            out[name] = Estimate(None, None, None, 0)
            continue
        with warnings.catch_warnings():  # α undefined (one value only) is None below, not a warning
            warnings.simplefilter("ignore", RuntimeWarning)
            a = krippendorff_alpha(m, fr.spec.level)
            low, high, _p = bootstrap_alpha(m, fr.spec.level, n_boot, seed)
        fin = lambda v: float(v) if v is not None and np.isfinite(v) else None  # noqa: E731
        out[name] = Estimate(fin(a), fin(low), fin(high), n_units)
    return out


def assist_report(
    store: ProjectStore, kind: str | None = None, n_boot: int = 1000, seed: int = 0
) -> AssistReport:
    """Both arms' figures for every kind with labels that record an arm (or ``kind`` alone)."""
    events = arm_events(store, kind)
    tasks = {t.task_id: t for t in store.labels.tasks(kind=kind)}
    suggestions = store.suggestions.by_ids({e.suggestion_id for e in events if e.suggestion_id})
    adjudicated = {t: a.values for t, a in effective_adjudications(store).items()}
    rng = np.random.default_rng(seed)
    kinds: dict[str, KindAssist] = {}
    for k in sorted({e.kind for e in events}):
        score = get_kind(k).gold_score
        arms, anchoring = {}, {}
        for arm in ARMS:
            mine = [e for e in events if e.kind == k and e.assist_arm == arm and e.task_id in tasks]
            times = [e.time_spent_s for e in mine if e.time_spent_s is not None]
            gold = [
                score(e.values, tasks[e.task_id].gold_answer or {}) for e in mine if tasks[e.task_id].is_gold
            ]
            adj = [score(e.values, adjudicated[e.task_id]) for e in mine if e.task_id in adjudicated]
            pairs = [
                anchoring_units(
                    k, e.values, suggestions[e.suggestion_id].values, tasks[e.task_id].gold_answer or {}
                )
                for e in mine
                if tasks[e.task_id].is_gold and e.suggestion_id in suggestions
            ]
            pairs = [p for p in pairs if p[1] > 0]
            rate, reps = ratio_reps(pairs, n_boot, rng)
            anchoring[arm] = (rate, reps, pairs)
            low, high = _ci(reps) if rate is not None else (None, None)
            arms[arm] = ArmFigures(
                k,
                arm,
                len(mine),
                estimate(times, np.median, n_boot, rng),
                estimate(times, lambda x: np.percentile(x, 90), n_boot, rng),
                estimate(gold, np.mean, n_boot, rng),
                estimate(adj, np.mean, n_boot, rng),
                Estimate(rate, low, high, sum(p[1] for p in pairs)),
                _alpha(tasks, mine, k, n_boot, seed),
            )
        kinds[k] = _kind_summary(k, arms, anchoring, tasks, suggestions, events, n_boot, rng)
    return AssistReport(
        kinds,
        sum(e.assist_arm == "assisted" for e in events),
        sum(e.assist_arm == "control" for e in events),
        n_boot,
        seed,
    )


def anchoring_test(
    a: tuple[int, int], c: tuple[int, int], reps_a: np.ndarray, reps_c: np.ndarray
) -> tuple[float, float, float]:
    """``(low, high, p05)`` of the anchoring difference assisted − control: the Agresti–Caffo adjusted
    difference (one kept and one not-kept unit added to each arm) with, per arm, the larger of the
    adjusted binomial variance and the bootstrap variance over labels (units of one label are not
    independent). A 95% interval, and its one-sided 5% bound ``p05``. The adjustment keeps an arm
    with no kept unit (every replicate 0) from looking certain."""
    (ka, na), (kc, nc) = a, c
    pa, pc = (ka + 1) / (na + 2), (kc + 1) / (nc + 2)
    var = [
        max(p * (1 - p) / (n + 2), float(np.nanvar(reps)) if np.isfinite(reps).any() else 0.0)
        for p, n, reps in ((pa, na, reps_a), (pc, nc, reps_c))
    ]
    d, se = pa - pc, float(np.sqrt(sum(var)))
    return d - 1.959964 * se, d + 1.959964 * se, d - 1.644854 * se


def _kind_summary(k, arms, anchoring, tasks, suggestions, events, n_boot, rng) -> KindAssist:
    (ra, reps_a, pairs_a), (rc, reps_c, pairs_c) = anchoring["assisted"], anchoring["control"]
    if ra is None or rc is None:
        diff, p05, worse = Estimate(None, None, None, 0), None, None
    else:
        (ka, na), (kc, nc) = (np.asarray(p).reshape(-1, 2).sum(axis=0) for p in (pairs_a, pairs_c))
        low, high, p05 = anchoring_test((int(ka), int(na)), (int(kc), int(nc)), reps_a, reps_c)
        n = arms["assisted"].anchoring_rate.n + arms["control"].anchoring_rate.n
        diff, worse = Estimate(ra - rc, low, high, n), p05 > 0
    units = get_kind(k).units
    right: list[float] = []
    seen = set()
    for e in events:
        if e.kind != k or e.suggestion_id not in suggestions or e.suggestion_id in seen:
            continue
        task = tasks.get(e.task_id)
        if task is None or not task.is_gold:
            continue
        seen.add(e.suggestion_id)
        s, g = units(suggestions[e.suggestion_id].values), units(task.gold_answer)
        right += [float(s.get(u) == v) for u, v in g.items()]
    return KindAssist(k, arms, diff, p05, worse, estimate(right, np.mean, n_boot, rng))


VERDICTS = {
    None: "not measurable (an arm has no gold unit with a wrong suggestion)",
    True: "significantly worse than control",
    False: "not significantly worse than control",
}


def report_rows(report: AssistReport) -> list[dict[str, Any]]:
    """One display row per (kind, arm): the figures as ``value [low, high] (n=…)`` text."""
    return [
        {
            "task_kind": k,
            "arm": arm,
            "labels": f.n_labels,
            "time_median_s": f.time_median.text(1),
            "time_p90_s": f.time_p90.text(1),
            "gold_agreement": f.gold_agreement.text(),
            "adjudicated_agreement": f.adjudicated_agreement.text(),
            "alpha": "; ".join(f"{name} {e.text()}" for name, e in f.alpha.items()),
            "anchoring_rate": f.anchoring_rate.text(),
        }
        for k, ka in report.kinds.items()
        for arm, f in ka.arms.items()
    ]


def difference_lines(report: AssistReport) -> list[str]:
    """Per kind: the anchoring difference assisted − control, its verdict, the suggestions' accuracy."""
    return [
        f"{k}: anchoring assisted - control {ka.anchoring_difference.text()}: {VERDICTS[ka.significantly_worse]}; "
        f"suggestions right on gold units {ka.suggestion_gold_accuracy.text()}"
        for k, ka in report.kinds.items()
    ]
