"""What the maintainer dashboard shows, as plain rows: progress, throughput, label distributions,
agreement with confidence intervals, gold accuracy, flagged items and sessions to re-verify.

Only reads; the Streamlit page turns these rows into tables and charts, tests call them directly.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.overlap import beyond_overlap
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.annotation.workflow import gold_accuracy
from prefkit.curation.quality.agreement import agreement_rows, annotator_stats
from prefkit.curation.quality.cost import CostReport, cost_report
from prefkit.schemas.common import PrefkitError
from prefkit.schemas.config import ReleasePolicy

if TYPE_CHECKING:
    from prefkit.curation.store import FlaggedLabel, ProgressRow, ProjectStore, ReverifyDialogue, Throughput
    from prefkit.schemas.config import AnnotationSection


def progress(store: ProjectStore) -> list[ProgressRow]:
    """Per (annotator, task kind): assigned, done, labels, skips, flags, mean seconds per label."""
    return store.progress.progress_table()


def throughput(store: ProjectStore, per: str = "day") -> list[Throughput]:
    """Items finished per ``day`` or ``hour`` (UTC) per annotator and task kind."""
    if per not in ("day", "hour"):
        raise ValueError("per must be 'day' or 'hour'")
    return store.labels.throughput(10 if per == "day" else 13)


def label_distribution(store: ProjectStore, kind: str | None = None) -> list[dict[str, Any]]:
    """How often each value of each agreement field was given, over live labels."""
    counts: Counter[tuple[str, str, Any]] = Counter()
    for ev in store.labels.effective_events(kind):
        if ev.action != "label":
            continue
        for (_unit, field), value in get_kind(ev.kind).units(ev.values).items():
            counts[(ev.kind, field, str(value))] += 1
    return [
        {"task_kind": k, "field": f, "value": v, "n": n}
        for (k, f, v), n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[1]))
    ]


def agreement(
    store: ProjectStore, policy: ReleasePolicy, kind: str | None = None, n_boot: int = 200
) -> list[dict[str, Any]]:
    """Krippendorff's alpha per task kind and field with bootstrap intervals (prefkit.curation.quality.agreement);
    each row's ``alpha_min`` is that field's threshold under the release policy."""
    return agreement_rows(store, kind=kind, n_boot=n_boot, alpha_min=policy.alpha_min)


def annotator_quality(
    store: ProjectStore, kind: str | None = None, fast_s: float = 0.0, policy: ReleasePolicy = ReleasePolicy()
) -> list[dict[str, Any]]:
    """Per (annotator, kind): labels, leave-one-out agreement with the others, gold accuracy, mean
    time, self-consistency α (repeats) and an outlier flag with its reasons
    (prefkit.curation.quality.agreement), ready for a table."""
    keep = (
        "annotator task_kind n_labels loo_agreement gold_accuracy mean_time_s reliability self_alpha outlier"
    )
    gold_min, self_min = policy.gold_accuracy_min, policy.self_alpha_min
    stats = annotator_stats(store, kind=kind, gold_min=gold_min, fast_s=fast_s, self_alpha_min=self_min)
    return [{**{k: s[k] for k in keep.split()}, "why": s["outlier_reason"]} for s in stats]


def cost(store: ProjectStore, annotation: AnnotationSection) -> CostReport:
    """LLM dollars and annotator minutes per verified unit and the forecast: the report ``prefkit
    cost`` prints and the dataset card states (:func:`prefkit.curation.quality.cost.cost_report`)."""
    return cost_report(store, annotation)


def confusion_matrices(store: ProjectStore, kind: str | None = None) -> list[dict[str, Any]]:
    """One row per (annotator, kind, field, true value): P(the annotator says each value), from the
    reliability model ``prefkit agreement --annotators`` reports."""
    rows = []
    for s in annotator_stats(store, kind=kind):
        for field, matrix in s["confusion"].items():
            for truth, said in matrix.items():
                rows.append(
                    {
                        "annotator": s["annotator"],
                        "task_kind": s["task_kind"],
                        "field": field,
                        "truth": truth,
                        **{f"says {k}": v for k, v in said.items()},
                    }
                )
    return rows


def flagged(store: ProjectStore) -> list[FlaggedLabel]:
    """Items annotators reported as broken, with who and why."""
    return store.labels.flagged()


def reverification(store: ProjectStore) -> list[ReverifyDialogue]:
    """Dialogues with a rewritten turn, waiting to be verified again."""
    return store.content.dialogues_to_reverify()


def overview(store: ProjectStore) -> dict[str, Any]:
    """Headline numbers: tasks, finished labels, annotators (people who gave at least one label, not
    accounts), items complete (k labels), items past their overlap."""
    summaries = store.progress.task_summaries()
    return {
        "tasks": sum(r.tasks for r in summaries),
        "complete": sum(r.complete or 0 for r in summaries),
        "labels": store.count("label_events", action="label"),
        "annotators": store.labels.labelled_by(),
        "gold": gold_accuracy(store),
        "beyond_overlap": beyond_overlap(store),
    }


# -- the tables as people read them ------------------------------------------------------------------
def _num(value: Any, digits: int = 2) -> str:
    """A number for a table cell: fixed decimals, ``–`` for a value that is undefined (never "None")."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def kind_title(kind: str) -> str:
    """A task kind's title (``preference_match`` → ``Preference matching``)."""
    try:
        return get_kind(kind).title
    except PrefkitError:
        return kind


def agreement_table(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """:func:`agreement` rows as the dashboard's table: a few readable columns, kind titles, the
    interval as one cell, ``–`` where a statistic is undefined. The interval method is the same for
    every row; the page states it once."""
    out = []
    for r in rows:
        out.append(
            {
                "task kind": kind_title(r["task_kind"]),
                "field": r["field"],
                "compared": "people"
                if r["comparison"] == "human-vs-human"
                else f"judge {r['judge']}"
                if r["judge"]
                else r["comparison"],
                "alpha": _num(r["alpha"], 3),
                "95% interval": "–"
                if r["ci_low"] is None or r["ci_high"] is None
                else f"{r['ci_low']:.3f} to {r['ci_high']:.3f}",
                "needed": _num(r["alpha_min"], 3),
                "units": _num(r["n_units"]),
                "labels": _num(r["n_labels"]),
                "raters": _num(r["n_raters"]),
                "AC1": _num(r["ac1"], 3),
                "agreement": "–" if r["percent_agreement"] is None else f"{r['percent_agreement']:.0%}",
            }
        )
    return out


def quality_table(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """:func:`annotator_quality` rows as the dashboard's table (outliers first)."""
    out = [
        {
            "annotator": r["annotator"],
            "task kind": kind_title(r["task_kind"]),
            "labels": _num(r["n_labels"]),
            "agrees with the others": "–" if r["loo_agreement"] is None else f"{r['loo_agreement']:.0%}",
            "gold accuracy": "–" if r["gold_accuracy"] is None else f"{r['gold_accuracy']:.0%}",
            "seconds per item": _num(r["mean_time_s"], 1),
            "self-consistency α": _num(r["self_alpha"]),
            "outlier": "outlier" if r["outlier"] else "",
            "why": r["why"] or "",
        }
        for r in rows
    ]
    return sorted(out, key=lambda r: r["outlier"] == "")


def progress_table(rows: list[ProgressRow]) -> list[dict[str, str]]:
    """:func:`progress` rows as the dashboard's table."""
    return [
        {
            "annotator": r.annotator,
            "task kind": kind_title(r.task_kind),
            "assigned": str(r.assigned),
            "done": str(r.done),
            "labels": str(r.labels),
            "skips": str(r.skips),
            "flags": str(r.flags),
            "seconds per label": _num(r.mean_time_s, 1),
        }
        for r in rows
    ]
