"""Inter-annotator agreement of a project: α with a bootstrap interval, AC1, percent agreement and
pairwise κ per (task kind, field), judge-vs-human rows, and per-annotator quality statistics.

Labels become rater × unit matrices through the task kinds' interface: ``TaskKind.units(values)``
splits a label into ``{(sub_unit, field): value}`` and a unit is ``(task_id, sub_unit)``. Only the
live label per (task, annotator) counts (``store.labels.effective_events``); skips and flags carry no rating;
gold tasks are left out (they measure annotators, not the data). Ordinal choices become their ranks.

A *judge* is an LLM labeller recorded as an annotator: named with ``judges=`` or writing events with
``source="judge"``. Judges are kept out of the human-vs-human numbers and compared with the human
consensus instead. This module reads the store and never writes to it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from statistics import median
from typing import TYPE_CHECKING, Any

import numpy as np
from prefkit.curation.annotation.annotator_model import annotator_reliability, fit_kind
from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, FieldSpec, TaskKind, get_kind
from prefkit.curation.annotation.workflow import gold_scores
from prefkit.curation.quality.reliability import (
    bootstrap_alpha,
    cohen_kappa_pairwise,
    gwet_ac1,
    krippendorff_alpha,
    percent_agreement,
)
from prefkit.schemas.config import FINAL_ALPHA_MIN, TENTATIVE_ALPHA_MIN, alpha_threshold

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore
    from prefkit.schemas.curation import AnnotationTask, LabelEvent

Unit = tuple[str, str]  # (task_id, sub_unit)
JUDGE_SOURCE = "judge"
#: The ``comparison`` of the row of a question agreement does not measure (a declared kind's text).
NOT_MEASURED = "not measured (free text)"


@dataclass
class FieldRatings:
    """Every rating of one field of one task kind: ``ratings[unit][rater] = code``."""

    kind: str
    spec: FieldSpec
    ratings: dict[Unit, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))

    def matrix(self, raters: list[str]) -> np.ndarray:
        """Rater × unit matrix over units sorted by id; ``NaN`` where a rater did not rate a unit."""
        units = sorted(self.ratings)
        out = np.full((len(raters), len(units)), np.nan)
        index = {r: i for i, r in enumerate(raters)}
        for j, unit in enumerate(units):
            for rater, code in self.ratings[unit].items():
                if rater in index:
                    out[index[rater], j] = code
        return out

    def raters(self) -> list[str]:
        return sorted({r for by_rater in self.ratings.values() for r in by_rater})


def code_value(spec: FieldSpec, value: Any) -> float:
    """A label value as a number: its position in the field's choices (the rank, for ordinal fields),
    else the value itself for interval and ratio fields."""
    if spec.choices is not None and value in spec.choices:
        return float(spec.choices.index(value))
    return float(value)


def _live_labels(store: ProjectStore, kind: str | None, batch: str | None) -> tuple[dict, list[LabelEvent]]:
    tasks = {t.task_id: t for t in store.labels.tasks(kind=kind, batch=batch)}
    events = [e for e in store.labels.effective_events(kind) if e.action == "label" and e.task_id in tasks]
    return tasks, events


def field_ratings(
    tasks: dict[str, AnnotationTask], events: list[LabelEvent], kinds: list[str]
) -> dict[tuple[str, str], FieldRatings]:
    """One :class:`FieldRatings` per (kind, field) of ``kinds``, filled from non-gold label events."""
    out = {(k, f.name): FieldRatings(k, f) for k in kinds for f in get_kind(k).fields}
    for ev in events:
        if tasks[ev.task_id].is_gold or ev.kind not in kinds:
            continue
        specs = {f.name: f for f in get_kind(ev.kind).fields}
        for (sub_unit, name), value in get_kind(ev.kind).item_units(ev.values, tasks[ev.task_id]).items():
            if name in specs:
                out[(ev.kind, name)].ratings[(ev.task_id, sub_unit)][ev.annotator] = code_value(
                    specs[name], value
                )
    return out


def consensus(by_rater: dict[str, float], exclude: set[str] | frozenset[str] = frozenset()) -> float | None:
    """The value most raters gave (leaving out ``exclude``); ``None`` on a tie or with no ratings."""
    top = Counter(v for r, v in by_rater.items() if r not in exclude).most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def judge_names(events: list[LabelEvent], judges: tuple[str, ...] | list[str]) -> set[str]:
    return set(judges) | {e.annotator for e in events if e.source == JUDGE_SOURCE}


def _nan_to_none(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def reliability_row(
    matrix: np.ndarray, spec: FieldSpec, n_boot: int, seed: int, alpha_min: float
) -> dict[str, Any]:
    """Every statistic of one rater × unit matrix, JSON-ready (undefined values are ``None``)."""
    rated = ~np.isnan(matrix)
    pairable = rated.sum(axis=0) >= 2
    q = len(spec.choices) if spec.choices else None
    low, high, p_below = bootstrap_alpha(matrix, spec.level, n_boot, seed, alpha_min)
    return {
        "level": spec.level,
        "n_units": int(pairable.sum()),
        "n_labels": int(rated[:, pairable].sum()),
        "n_raters": int(rated[:, pairable].any(axis=1).sum()),
        "alpha": _nan_to_none(krippendorff_alpha(matrix, spec.level)),
        "ci_low": _nan_to_none(low),
        "ci_high": _nan_to_none(high),
        "p_below_min": _nan_to_none(p_below),
        "alpha_min": alpha_min,
        "ac1": _nan_to_none(gwet_ac1(matrix, q) if spec.level in ("nominal", "ordinal") else float("nan")),
        "percent_agreement": _nan_to_none(percent_agreement(matrix)),
        "mean_pairwise_kappa": _nan_to_none(cohen_kappa_pairwise(matrix)),
        "ci_method": f"non-parametric bootstrap over units, {n_boot} replicates",
    }


def _judge_row(fr: FieldRatings, humans: list[str], judge: str, args: tuple) -> dict[str, Any]:
    """The judge against the human consensus (two raters), plus α with the judge as one more rater."""
    units = sorted(fr.ratings)
    pair = np.full((2, len(units)), np.nan)
    for j, unit in enumerate(units):
        by_rater = fr.ratings[unit]
        human_view = consensus({r: v for r, v in by_rater.items() if r in humans})
        if human_view is not None and judge in by_rater:
            pair[:, j] = (human_view, by_rater[judge])
    row = reliability_row(pair, fr.spec, *args)
    row["alpha_judge_as_rater"] = _nan_to_none(krippendorff_alpha(fr.matrix([*humans, judge]), fr.spec.level))
    return row


def _kinds(kind: str | None, events: list[LabelEvent]) -> list[str]:
    if kind is not None:
        return [get_kind(kind).name]
    return [k for k in TASK_KIND_REGISTRY if any(e.kind == k for e in events)]


def agreement_rows(
    store: ProjectStore,
    kind: str | None = None,
    batch: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    alpha_min: float | dict[str, float] = FINAL_ALPHA_MIN,
    judges: tuple[str, ...] | list[str] = (),
    by_guidelines: bool = False,
) -> list[dict[str, Any]]:
    """One human-vs-human row per (task kind, field), followed by one judge-vs-human row per judge
    who labelled that kind. ``kind=None`` covers every kind with labels; ``batch=None`` every batch.
    ``alpha_min`` is one threshold or ``[release] alpha_min``'s table (``default`` / ``"kind.field"``).

    For a kind under adaptive overlap the human-vs-human row is measured on the audit share (``share
    = "audit"``: items that always went to ``max`` annotators); a second row, ``comparison =
    "human-vs-human, all items"``, gives α over every item for reference.

    ``by_guidelines``: every row once per version of the kind's guidelines (``guidelines_version``;
    None for labels made before versions were recorded), over the labels made under it; a version
    with too little to measure still gets its rows (α None)."""
    tasks, events = _live_labels(store, kind, batch)
    judge_set = judge_names(events, judges)
    args = (tasks, judge_set, batch, n_boot, seed, alpha_min)
    if not by_guidelines:
        return _rows(events, _kinds(kind, events), *args)
    versions: dict[str, list[str | None]] = {}
    for v in store.guidelines.versions(kind):
        versions.setdefault(v.kind, []).append(v.version)
    rows = []
    for k in _kinds(kind, events):
        for version in versions.get(k, [None]):
            mine = [e for e in events if e.kind == k and e.guidelines_version == version]
            rows += [{**r, "guidelines_version": version} for r in _rows(mine, [k], *args)]
    return rows


def _rows(events: list[LabelEvent], kinds: list[str], tasks: dict[str, AnnotationTask], *opts) -> list[dict]:
    """The rows of :func:`agreement_rows` over ``events`` of ``kinds`` (``opts``: its judges, batch,
    bootstrap replicates, seed and thresholds)."""
    judge_set, batch, n_boot, seed, alpha_min = opts
    adaptive = {t.kind for t in tasks.values() if t.overlap_max is not None}
    audit = {tid: t for tid, t in tasks.items() if t.audit or t.kind not in adaptive}
    on_audit = field_ratings(audit, [e for e in events if e.task_id in audit], kinds)
    rows = []
    for (kind_name, field_name), fr in field_ratings(tasks, events, kinds).items():
        args = (n_boot, seed, alpha_threshold(alpha_min, kind_name, field_name))
        raters = fr.raters()
        humans = [r for r in raters if r not in judge_set]
        head = {"task_kind": kind_name, "field": field_name, "batch": batch or "all"}
        if kind_name in adaptive:
            # Adaptive overlap gives uncertain items more annotators, which biases α over all items:
            # the row gates and cards read is the audit share's (always max annotators).
            mine = on_audit[(kind_name, field_name)]
            row = reliability_row(
                mine.matrix([r for r in mine.raters() if r not in judge_set]), fr.spec, *args
            )
            rows.append({**head, "comparison": "human-vs-human", "judge": None, **row, "share": "audit"})
            row = reliability_row(fr.matrix(humans), fr.spec, *args)
            rows.append(
                {**head, "comparison": "human-vs-human, all items", "judge": None, **row, "share": "all"}
            )
        else:
            row = reliability_row(fr.matrix(humans), fr.spec, *args)
            rows.append({**head, "comparison": "human-vs-human", "judge": None, **row, "share": "all"})
        for judge in sorted(judge_set & set(raters)):
            rows.append(
                {
                    **head,
                    "comparison": "judge-vs-human",
                    "judge": judge,
                    **_judge_row(fr, humans, judge, args),
                    "share": "all",
                }
            )
    for kind_name in kinds:  # a declared kind's free-text questions: said, not measured
        for name in getattr(get_kind(kind_name), "unmeasured", ()):
            answered = sum(1 for e in events if e.kind == kind_name and e.values.get(name))
            stats = dict.fromkeys(_STATS) | {"level": "text", "n_labels": answered, "alpha_min": None}
            rows.append(
                {
                    "task_kind": kind_name,
                    "field": name,
                    "batch": batch or "all",
                    "comparison": NOT_MEASURED,
                    "judge": None,
                    **stats,
                    "share": "all",
                }
            )
    return rows


#: The statistics of a row (:func:`reliability_row`), all None on a row of a question not measured.
_STATS = tuple(
    """level n_units n_labels n_raters alpha ci_low ci_high p_below_min alpha_min ac1
    percent_agreement mean_pairwise_kappa ci_method""".split()
)


def agreement_timeline(store: ProjectStore, kind: str | None = None) -> list[dict[str, Any]]:
    """Agreement over time: per (task kind, field) and UTC day, α over the units whose last live label
    came that day (``n_units`` of them; α None below two). The guidelines versions to mark on it are
    ``store.guidelines.versions()``'s ``first_used_at``."""
    tasks, events = _live_labels(store, kind, None)
    humans = [e for e in events if e.annotator not in judge_names(events, ())]
    done: dict[str, str] = {}
    for ev in humans:
        done[ev.task_id] = max(done.get(ev.task_id, ""), ev.created_at[:10])
    rows = []
    for (kind_name, field_name), fr in field_ratings(tasks, humans, _kinds(kind, humans)).items():
        for day in sorted({done[tid] for tid, _ in fr.ratings}):
            day_fr = FieldRatings(
                kind_name, fr.spec, {u: r for u, r in fr.ratings.items() if done[u[0]] == day}
            )
            matrix = day_fr.matrix(day_fr.raters())
            n_units = int(((~np.isnan(matrix)).sum(axis=0) >= 2).sum())
            alpha = _nan_to_none(krippendorff_alpha(matrix, fr.spec.level)) if n_units >= 2 else None
            rows.append(
                {"task_kind": kind_name, "field": field_name, "day": day, "alpha": alpha, "n_units": n_units}
            )
    return rows


# -- self-consistency ----------------------------------------------------------------------------------
def within_rows(
    store: ProjectStore, kind=None, n_boot=1000, seed=0, self_alpha_min=TENTATIVE_ALPHA_MIN
) -> list[dict]:
    """Each annotator's self-consistency per (task kind, field): α at the field's level over the units of
    their (first label, repeat) pairs with its bootstrap CI (the first label: their first event of the
    item); ``n_pairs``: items with both answers; ``flagged``: α below ``self_alpha_min``."""
    tasks = {t.task_id: t for t in store.labels.tasks(kind=get_kind(kind).name if kind else None)}
    labels = [e for e in store.labels.events(kind=kind) if e.action == "label" and e.supersedes is None]
    firsts = {(e.task_id, e.annotator): e for e in reversed(labels)}  # the earliest wins
    pairs: dict[tuple[str, str], list[LabelEvent]] = defaultdict(list)  # two raters: "first", "repeat"
    for again in store.repeats.events(kind=kind):
        if (first := firsts.get((again.task_id, again.annotator))) is not None:
            pairs[(again.annotator, again.kind)] += [first.model_copy(update={"annotator": "first"}), again]
    rows = []
    for (who, kind_name), events in sorted(pairs.items()):
        for (_, name), fr in field_ratings(tasks, events, [kind_name]).items():
            row = reliability_row(fr.matrix(["first", who]), fr.spec, n_boot, seed, self_alpha_min)
            both = {task_id for (task_id, _), by in fr.ratings.items() if len(by) == 2}
            ci = None if row["ci_low"] is None else [row["ci_low"], row["ci_high"]]
            head = {"annotator": who, "task_kind": kind_name, "field": name, "alpha": row["alpha"], "ci": ci}
            keep = {k: row[k] for k in ("level", "n_units", "ci_method", "alpha_min")}
            flagged = row["alpha"] is not None and row["alpha"] < self_alpha_min
            rows.append(head | {"n_pairs": len(both), **keep, "flagged": flagged})
    return [r for r in rows if r["n_pairs"]]


def self_alphas(store: ProjectStore, kind: str | None, self_alpha_min: float) -> dict[tuple[str, str], dict]:
    """Per (annotator, kind): the :func:`within_rows` row of their lowest self-consistency α over the
    kind's fields (any row when none is defined; one bootstrap replicate: no CI is shown)."""
    rows = within_rows(store, kind, n_boot=1, self_alpha_min=self_alpha_min)
    rows.sort(key=lambda r: (r["alpha"] is not None, -(r["alpha"] or 0)))  # the lowest α last: it stays
    return {(r["annotator"], r["task_kind"]): r for r in rows}


def self_alpha_reason(row: dict | None) -> str | None:
    """The flag's words for a :func:`self_alphas` row below ``self_alpha_min`` (None: not flagged)."""
    if row is None or not row["flagged"]:
        return None
    return f"self-consistency α {row['alpha']:.2f} < {row['alpha_min']:.2f} on {row['field']}"


# -- annotator statistics ------------------------------------------------------------------------------
@dataclass
class _Tally:
    n_labels: int = 0
    compared: int = 0
    matched: int = 0
    gold: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    distribution: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))


def _tally(tasks: dict[str, AnnotationTask], events: list[LabelEvent], judge_set: set[str]) -> dict:
    tallies: dict[tuple[str, str], _Tally] = defaultdict(_Tally)
    for ev in events:
        t, kind = tallies[(ev.annotator, ev.kind)], get_kind(ev.kind)
        t.n_labels += 1
        if ev.time_spent_s is not None:
            t.times.append(ev.time_spent_s)
        for (_, name), value in kind.units(ev.values).items():
            t.distribution[name][str(value)] += 1
    gold = {tid: (t.kind, t.gold_answer) for tid, t in tasks.items() if t.is_gold and t.gold_answer}
    for key, scores in gold_scores(events, gold, tasks).items():
        tallies[key].gold = scores
    kinds = sorted({e.kind for e in events})
    for fr in field_ratings(tasks, events, kinds).values():
        for by_rater in fr.ratings.values():
            for rater, value in by_rater.items():
                others = consensus(by_rater, exclude=judge_set | {rater})
                if others is not None:
                    tallies[(rater, fr.kind)].compared += 1
                    tallies[(rater, fr.kind)].matched += int(value == others)
    return tallies


def _outlier_reasons(
    stat: dict[str, Any], cohort: list[dict[str, Any]], gold_min: float, fast_s: float = 0.0
) -> list[str]:
    reasons = []
    if stat["gold_accuracy"] is not None and stat["gold_accuracy"] < gold_min:
        reasons.append(f"gold accuracy {stat['gold_accuracy']:.2f} < {gold_min:.2f}")
    # Too fast to have read the item, however fast the others are (a team of two has no median).
    if stat["mean_time_s"] is not None and stat["mean_time_s"] < fast_s:
        reasons.append(f"mean time {stat['mean_time_s']:.1f}s per item is under the {fast_s:g}s floor")
    loos = [s["loo_agreement"] for s in cohort if s["loo_agreement"] is not None]
    if stat["loo_agreement"] is not None and len(loos) >= 3 and stat["loo_agreement"] < median(loos) - 0.2:
        reasons.append(
            f"agreement with the others {stat['loo_agreement']:.2f} is far below the median {median(loos):.2f}"
        )
    times = [s["mean_time_s"] for s in cohort if s["mean_time_s"] is not None]
    if stat["mean_time_s"] is not None and len(times) >= 3 and stat["mean_time_s"] < 0.25 * median(times):
        reasons.append(
            f"mean time {stat['mean_time_s']:.1f}s is under a quarter of the median {median(times):.1f}s"
        )
    for name, counts in stat["label_distribution"].items():
        total = sum(counts.values())
        if (
            total >= 20
            and len(counts) == 1
            and any(len(s["label_distribution"].get(name, {})) > 1 for s in cohort)
        ):
            reasons.append(f"gave one {name} value to all {total} labels")
    return reasons


def annotator_stats(
    store: ProjectStore,
    kind: str | None = None,
    judges: tuple[str, ...] | list[str] = (),
    gold_min: float = 0.8,
    fast_s: float = 0.0,
    self_alpha_min: float = TENTATIVE_ALPHA_MIN,
) -> list[dict[str, Any]]:
    """Per (annotator, task kind): labels, agreement with the leave-one-out consensus of the other
    human annotators, gold accuracy, label distribution, mean time, an outlier flag with reasons, and
    the reliability and confusion matrices (``{field: {truth: {said: p}}}``) of a Dawid–Skene model
    (MACE when ``[release] consensus = "mace"``) fitted on every label of the kind, gold included.
    An LLM judge has none (it is no vote).
    ``fast_s``: a mean time per item below it is a reason on its own (config ``annotation.fast_item_s``).
    ``self_alpha``: their lowest self-consistency α over the kind's fields (:func:`self_alphas`); below
    ``self_alpha_min`` it is a reason too (a flag, never a gate)."""
    tasks, events = _live_labels(store, kind, None)
    selves = self_alphas(store, kind, self_alpha_min)
    judge_set = judge_names(events, judges)
    method = "dawid_skene" if store.consensus_method == "majority" else store.consensus_method
    models = {k: annotator_reliability(fit_kind(store, k, method)) for k in sorted({e.kind for e in events})}
    stats = []
    for (annotator, kind_name), t in sorted(_tally(tasks, events, judge_set).items()):
        fitted = models.get(kind_name, {}).get(annotator, {})
        stats.append(
            {
                "annotator": annotator,
                "task_kind": kind_name,
                "judge": annotator in judge_set,
                "n_labels": t.n_labels,
                "loo_agreement": t.matched / t.compared if t.compared else None,
                "loo_units": t.compared,
                "gold_accuracy": sum(t.gold) / len(t.gold) if t.gold else None,
                "label_distribution": {k: dict(sorted(c.items())) for k, c in sorted(t.distribution.items())},
                "mean_time_s": sum(t.times) / len(t.times) if t.times else None,
                "reliability": fitted.get("reliability"),
                "reliability_model": method,
                "confusion": fitted.get("confusion", {}),
                "self_alpha": selves.get((annotator, kind_name), {}).get("alpha"),
            }
        )
    for stat in stats:
        cohort = [
            s for s in stats if s["task_kind"] == stat["task_kind"] and s is not stat and not s["judge"]
        ]
        reasons = _outlier_reasons(stat, cohort, gold_min, fast_s)
        reasons += [r for r in [self_alpha_reason(selves.get((stat["annotator"], stat["task_kind"])))] if r]
        stat["outlier"] = bool(reasons)
        stat["outlier_reason"] = "; ".join(reasons) or None
    return stats


def span_f1(
    kind: TaskKind, task: AnnotationTask, question: str, a: dict[str, Any], b: dict[str, Any]
) -> float | None:
    """Pairwise span F1 of two labels of ``task`` on span question ``question``, over the (word, label)
    units each marks, as agreement counts them: 2·|both| / (|a's| + |b's|); None when neither marks any."""

    def marked(values: dict[str, Any]) -> set[tuple[str, str]]:
        units = kind.item_units({question: values.get(question) or []}, task)
        return {u for u, v in units.items() if v == "yes" and u[1].partition(":")[0] == question}

    x, y = marked(a), marked(b)
    return 2 * len(x & y) / (len(x) + len(y)) if x or y else None
