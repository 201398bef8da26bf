"""The annotators' reliability fitted from a project's labels: one Dawid–Skene or MACE model per (task
kind, agreement field), over every unit of every task of the kind, gold items included (their known
answers are fixed, so they anchor each annotator's confusion matrix).

Consensus (``[release] consensus``) decides units by these posteriors, ``prefkit agreement --annotators``
and the dashboard show the matrices and reliabilities, and adaptive overlap reads a stored snapshot of
them (:mod:`prefkit.curation.annotation.overlap`). Reads the store, never writes it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from prefkit.curation.annotation.reliability_models import Method, fit
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.schemas.common import canonical_json

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

Unit = tuple[str, str]  # (task_id, sub_unit)


@dataclass
class FieldModel:
    """One field's fitted model: its classes (canonical JSON of each value, the field's choices
    first), class priors, per-annotator confusion matrices, reliabilities and label counts, and the
    posterior of every unit that has labels."""

    kind: str
    field: str
    classes: list[str]
    priors: np.ndarray
    confusion: dict[str, np.ndarray]
    reliability: dict[str, float]
    n_labels: dict[str, int]
    posteriors: dict[Unit, np.ndarray] = dataclasses.field(default_factory=dict)

    def value(self, index: int) -> Any:
        return json.loads(self.classes[index])

    def matrix_rows(self, annotator: str) -> dict[str, dict[str, float]]:
        """``{truth: {said: probability}}`` of one annotator, JSON-ready."""
        m = self.confusion[annotator]
        names = [str(self.value(i)) for i in range(len(self.classes))]
        return {t: {s: round(float(m[i, j]), 4) for j, s in enumerate(names)} for i, t in enumerate(names)}


@dataclass
class KindModel:
    kind: str
    method: Method
    fields: dict[str, FieldModel]
    gold_labels: dict[str, int]  # labels each annotator gave on gold items of the kind


def _classes(kind: str, name: str, seen: set[str]) -> list[str]:
    spec = next((f for f in get_kind(kind).fields if f.name == name), None)
    first = [canonical_json(c) for c in (spec.choices or ())] if spec else []
    return first + sorted(seen - set(first))


def live_labels(store: ProjectStore, kind: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """``{task_id: {annotator: values}}`` of live ``label`` events (skips and flags carry no label).
    An LLM judge's labels (``source="judge"``) are measured against people, never counted as votes."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for ev in store.labels.effective_events(kind):
        if ev.action == "label" and ev.source != "judge":
            out.setdefault(ev.task_id, {})[ev.annotator] = ev.values
    return out


def fit_kind(store: ProjectStore, kind: str, method: Method = "dawid_skene") -> KindModel:
    """Fit ``method`` on every live human label of ``kind`` (gold answers fixed)."""
    task_kind = get_kind(kind)
    tasks = {t.task_id: t for t in store.labels.tasks(kind=kind)}
    labels = live_labels(store, kind)
    per_field: dict[str, list[tuple[Unit, str, str]]] = {}
    gold_labels: dict[str, int] = {}
    for task_id, by_annotator in labels.items():
        for annotator, values in by_annotator.items():
            if tasks[task_id].is_gold:
                gold_labels[annotator] = gold_labels.get(annotator, 0) + 1
            for (sub, name), value in task_kind.item_units(values, tasks[task_id]).items():
                per_field.setdefault(name, []).append(((task_id, sub), annotator, canonical_json(value)))
    gold_units: dict[str, dict[Unit, str]] = {}
    for t in tasks.values():
        if t.is_gold and t.gold_answer:
            for (sub, name), value in task_kind.item_units(t.gold_answer, t).items():
                gold_units.setdefault(name, {})[(t.task_id, sub)] = canonical_json(value)
    fields = {
        name: _fit_field(kind, name, rows, gold_units.get(name, {}), method)
        for name, rows in sorted(per_field.items())
    }
    return KindModel(kind, method, fields, gold_labels)


def _fit_field(kind: str, name: str, rows, gold: dict[Unit, str], method: Method) -> FieldModel:
    classes = _classes(kind, name, {v for _, _, v in rows} | set(gold.values()))
    c_index = {c: i for i, c in enumerate(classes)}
    units = sorted({u for u, _, _ in rows})
    u_index = {u: i for i, u in enumerate(units)}
    annotators = sorted({a for _, a, _ in rows})
    a_index = {a: i for i, a in enumerate(annotators)}
    items = np.array([u_index[u] for u, _, _ in rows])
    workers = np.array([a_index[a] for _, a, _ in rows])
    said = np.array([c_index[v] for _, _, v in rows])
    known = {u_index[u]: c_index[v] for u, v in gold.items() if u in u_index}
    f = fit(items, workers, said, len(units), len(annotators), len(classes), method, gold=known)
    counts = np.bincount(workers, minlength=len(annotators))
    return FieldModel(
        kind,
        name,
        classes,
        f.priors,
        {a: f.confusion[i] for a, i in a_index.items()},
        {a: float(f.reliability[i]) for a, i in a_index.items()},
        {a: int(counts[i]) for a, i in a_index.items()},
        {u: f.posteriors[i] for u, i in u_index.items()},
    )


def annotator_reliability(model: KindModel) -> dict[str, dict[str, Any]]:
    """Per annotator: the mean reliability over the kind's fields (weighted by their labels) and each
    field's confusion matrix ``{field: {truth: {said: p}}}``."""
    out: dict[str, dict[str, Any]] = {}
    for fm in model.fields.values():
        for a, r in fm.reliability.items():
            row = out.setdefault(a, {"weighted": 0.0, "n": 0, "confusion": {}})
            row["weighted"] += r * fm.n_labels[a]
            row["n"] += fm.n_labels[a]
            row["confusion"][fm.field] = fm.matrix_rows(a)
    return {
        a: {"reliability": round(v["weighted"] / v["n"], 4) if v["n"] else None, "confusion": v["confusion"]}
        for a, v in out.items()
    }
