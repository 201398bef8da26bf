"""CUPID scoring arithmetic, separate from running models: predictions + judge labels -> numbers.

Inference (CUPID's matcher, both directions): every gold checklist item gets the coverage of the
inferred statement (fully 1, partially 0.5, not covered 0); the inferred statement is decomposed into
items, each with its coverage by the gold preference. Pooled over the instances of a group:

    recall    = Σ coverage of gold items     / number of gold items
    precision = Σ coverage of inferred items / number of inferred items
    F1        = 2PR / (P + R)              (0 when P + R = 0)

An instance with no inference (empty, failed call or missing from the predictions) adds its gold items
to the recall denominator and nothing to precision. Generation: the mean and distribution of the
judge's 1-10 scores; a failed or missing answer is counted, not scored. Results are keyed by
(persona_id, instance_type). This module never calls a model and never writes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from prefkit.pipelines.eval.release import (
    CupidKey,
    EvalInputError,
    check_line_protocol,
    model_lines,
    sessions_ago,
)
from prefkit.schemas.cupid import BenchmarkInstance
from prefkit.schemas.evaluation import (
    COVERAGE_CREDIT,
    CupidLabelLine,
    CupidLabels,
    CupidPrediction,
    ItemLabel,
)

INSTANCE_TYPES = ("consistent", "contrastive", "changing")


@dataclass(frozen=True)
class Gold:
    """What scoring needs of one instance: the type, the checklist and where its relevant session is."""

    instance_type: str
    checklist: tuple[str, ...]
    sessions_ago: int | None = None

    @classmethod
    def of(cls, inst: BenchmarkInstance) -> Gold:
        return cls(inst.instance_type, tuple(inst.current_checklist), sessions_ago(inst))


@dataclass
class Sums:
    """Counts that add up field by field (a group's tally is the sum of its instances')."""

    def add(self, other: Sums) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class Tally(Sums):
    """The counts behind one row of P/R/F1."""

    n_instances: int = 0
    n_inferred: int = 0
    n_empty: int = 0
    n_failed: int = 0
    n_missing: int = 0
    gold_items: int = 0
    gold_credit: float = 0.0
    inferred_items: int = 0
    inferred_credit: float = 0.0

    def row(self) -> dict[str, Any]:
        recall = self.gold_credit / self.gold_items if self.gold_items else None
        precision = self.inferred_credit / self.inferred_items if self.inferred_items else None
        p, r = precision or 0.0, recall or 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        return {
            **asdict(self),
            "recall": _round(recall),
            "precision": _round(precision),
            "f1": _round(f1 if (recall is not None or precision is not None) else None),
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def key_name(key: CupidKey) -> str:
    return f"{key[0]}|{key[1]}"


def only_known(golds: Mapping[CupidKey, Any], preds: Mapping[CupidKey, Any]) -> None:
    """A prediction for an instance the release config does not hold is refused, naming it."""
    extra = sorted(set(preds) - set(golds))
    if extra:
        raise EvalInputError(f"prediction for ({key_name(extra[0])}), which is not in the release config")


def _gold_credit(key: CupidKey, gold: Gold, labels: list[dict[str, str]]) -> float:
    """Σ coverage over the gold checklist; every gold item needs exactly one label."""
    by_item = {lab["item"]: lab["coverage"] for lab in labels}
    if len(by_item) != len(labels):
        raise EvalInputError(f"({key_name(key)}): a gold checklist item is labelled twice")
    if len(by_item) != len(gold.checklist) or any(item not in by_item for item in gold.checklist):
        unknown = [item for item in by_item if item not in gold.checklist]
        if unknown:
            raise EvalInputError(
                f"({key_name(key)}): label for {unknown[0]!r}, which is not a gold checklist item"
            )
        missing = next(item for item in gold.checklist if item not in by_item)
        raise EvalInputError(f"({key_name(key)}): no judge label for gold checklist item {missing!r}")
    return sum(COVERAGE_CREDIT[c] for c in by_item.values())


def with_fields(pred: CupidPrediction, fields: dict[str, Any]) -> CupidPrediction:
    """``pred`` with ``fields`` replaced (already-validated values; cheaper than ``model_copy``)."""
    return CupidPrediction.model_construct(**{**dict(pred), **fields})


def as_record(pred: CupidPrediction | dict[str, Any] | None) -> dict[str, Any] | None:
    """A prediction in its JSON shape (stored runs keep that shape; files are validated first)."""
    if pred is None or isinstance(pred, dict):
        return pred
    return pred.model_dump(mode="json", exclude_none=True)


def instance_tally(key: CupidKey, gold: Gold, pred: dict[str, Any] | None) -> Tally:
    """The counts one instance adds to its groups (``pred`` in its JSON shape, see :func:`as_record`)."""
    t = Tally(n_instances=1, gold_items=len(gold.checklist))
    if pred is None:
        t.n_missing = 1
    elif pred.get("error") is not None:
        t.n_failed = 1
    elif not (pred.get("inferred") or "").strip():
        t.n_empty = 1
    else:
        labels = pred.get("labels")
        if labels is None:
            raise EvalInputError(
                f"({key_name(key)}): an inference with no judge labels; give a labels file or run "
                "`prefkit eval cupid --predictions FILE` to have the judge label it"
            )
        t.n_inferred = 1
        t.gold_credit = _gold_credit(key, gold, labels.get("gold") or [])
        inferred = labels.get("inferred") or []
        t.inferred_items = len(inferred)
        t.inferred_credit = sum(COVERAGE_CREDIT[lab["coverage"]] for lab in inferred)
    return t


def score_inference(
    golds: Mapping[CupidKey, Gold], preds: Mapping[CupidKey, CupidPrediction | dict[str, Any]]
) -> list[dict[str, Any]]:
    """Rows: one per instance type present, ``overall``, then one per relevant-session position."""
    only_known(golds, preds)
    by_type: dict[str, Tally] = {}
    by_pos: dict[str, Tally] = {}
    overall = Tally()
    for key in sorted(golds):
        gold = golds[key]
        t = instance_tally(key, gold, as_record(preds.get(key)))
        by_type.setdefault(gold.instance_type, Tally()).add(t)
        pos = "none" if gold.sessions_ago is None else str(gold.sessions_ago)
        by_pos.setdefault(pos, Tally()).add(t)
        overall.add(t)
    rows = [{"task": "inference", "group": g, **by_type[g].row()} for g in INSTANCE_TYPES if g in by_type]
    rows.append({"task": "inference", "group": "overall", **overall.row()})
    order = sorted(by_pos, key=lambda p: (p == "none", int(p) if p != "none" else 0))
    rows += [{"task": "inference_by_position", "group": p, **by_pos[p].row()} for p in order]
    return rows


@dataclass
class ScoreTally:
    scores: list[int] = field(default_factory=list)
    n_instances: int = 0
    n_failed: int = 0
    n_missing: int = 0

    def row(self) -> dict[str, Any]:
        hist = Counter(self.scores)
        return {
            "n_instances": self.n_instances,
            "n_scored": len(self.scores),
            "n_failed": self.n_failed,
            "n_missing": self.n_missing,
            "mean": _round(sum(self.scores) / len(self.scores)) if self.scores else None,
            "distribution": {str(s): hist.get(s, 0) for s in range(1, 11)},
        }


def score_generation(
    golds: Mapping[CupidKey, Gold], preds: Mapping[CupidKey, CupidPrediction | dict[str, Any]]
) -> list[dict[str, Any]]:
    """Rows: mean and 1-10 distribution of judge scores per instance type and overall."""
    only_known(golds, preds)
    by_type: dict[str, ScoreTally] = {}
    overall = ScoreTally()
    for key in sorted(golds):
        pred = as_record(preds.get(key))
        for t in (by_type.setdefault(golds[key].instance_type, ScoreTally()), overall):
            t.n_instances += 1
            if pred is None:
                t.n_missing += 1
            elif pred.get("error") is not None or not (pred.get("response") or "").strip():
                t.n_failed += 1
            elif pred.get("score") is None:
                raise EvalInputError(f"({key_name(key)}): a response with no judge score; give a labels file")
            else:
                t.scores.append(pred["score"])
    rows = [{"task": "generation", "group": g, **by_type[g].row()} for g in INSTANCE_TYPES if g in by_type]
    rows.append({"task": "generation", "group": "overall", **overall.row()})
    return rows


# -- files ----------------------------------------------------------------------------------------------
def read_predictions(path: Path, protocol: str | None = None) -> dict[CupidKey, CupidPrediction]:
    """A predictions JSONL keyed by (persona_id, instance_type); a repeated key is an error, and so is
    a line made under another protocol than ``protocol``."""
    path = Path(path)
    if not path.is_file():
        raise EvalInputError(f"{path}: no such predictions file")
    out: dict[CupidKey, CupidPrediction] = {}
    for lineno, pred in model_lines(path, CupidPrediction):
        check_line_protocol(f"{path}:{lineno}", pred.protocol, protocol)
        key = (pred.persona_id, pred.instance_type)
        if key in out:
            raise EvalInputError(f"{path}:{lineno}: a second prediction for ({key_name(key)})")
        out[key] = pred
    return out


def apply_labels(preds: dict[CupidKey, CupidPrediction], path: Path) -> dict[CupidKey, CupidPrediction]:
    """Predictions with the labels of a judge-labels JSONL (replacing labels they carried)."""
    path = Path(path)
    if not path.is_file():
        raise EvalInputError(f"{path}: no such labels file")
    labels: dict[CupidKey, CupidLabels] = {}
    scores: dict[CupidKey, int] = {}
    for lineno, line in model_lines(path, CupidLabelLine):
        key = (line.persona_id, line.instance_type)
        if key not in preds:
            raise EvalInputError(f"{path}:{lineno}: no prediction for ({key_name(key)})")
        if line.direction is None:
            if line.score is None:
                raise EvalInputError(f"{path}:{lineno}: give direction + item + coverage, or a score")
            scores[key] = line.score
            continue
        if line.item is None or line.coverage is None:
            raise EvalInputError(f"{path}:{lineno}: a {line.direction} label needs item and coverage")
        bucket = labels.setdefault(key, CupidLabels())
        target = bucket.gold if line.direction == "gold" else bucket.inferred
        if line.direction == "gold" and any(lab.item == line.item for lab in target):
            raise EvalInputError(f"{path}:{lineno}: a second label for gold item {line.item!r}")
        target.append(ItemLabel(item=line.item, coverage=line.coverage))
    out = dict(preds)
    for labelled, lab in labels.items():
        out[labelled] = with_fields(out[labelled], {"labels": lab})
    for scored, s in scores.items():
        out[scored] = with_fields(out[scored], {"score": s})
    return out
