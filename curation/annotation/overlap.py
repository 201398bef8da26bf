"""Adaptive overlap: how many annotators an item gets.

With ``[annotation] overlap = {min = 2, max = 4}`` a task's ``overlap`` column is its *current target*,
which the queues fill exactly as they fill a fixed overlap. It starts at ``min``; when everyone it went
to has finished it, :func:`review_hook` (run in the transaction that records the last label, the row
locked) raises it by one, up to ``max``, unless the labels are certain under the annotators'
reliabilities; a stable random ``audit_share`` of items starts at ``max`` and stays there. The
reliabilities are a snapshot of a Dawid–Skene (or MACE) model kept in the store's meta table and
refitted when a chunk is handed out and the log has grown enough since: a submit only reads it. The
rules are in docs/annotation.md (*Queues, overlap and gold*).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from prefkit.curation.annotation.annotator_model import fit_kind, live_labels
from prefkit.curation.annotation.reliability_models import Method, settled_value, unit_posterior
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.schemas.common import canonical_json
from prefkit.schemas.config import OverlapRange
from prefkit.schemas.curation import AnnotationTask

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore
    from sqlalchemy import Connection

DEFAULT_ACCURACY = 0.75  # an annotator nobody knows yet, before any model was fitted
REFIT_MIN_EVENTS = 50


def is_audit(task_id: str, share: float) -> bool:
    """A stable draw: the same task is an audit item wherever and whenever it is created."""
    digest = hashlib.sha256(f"audit:{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def apply_overlap(tasks: Iterable[AnnotationTask], overlap: int | OverlapRange) -> list[AnnotationTask]:
    """Set each task's overlap: a fixed number, or the adaptive bounds with ``min`` as the first
    target (``max`` for audit items; gold items go to everyone anyway and are never audit items)."""
    out = []
    for task in tasks:
        if isinstance(overlap, int):
            task.overlap, task.overlap_min, task.overlap_max, task.audit = overlap, None, None, False
        else:
            audit = not task.is_gold and is_audit(task.task_id, overlap.audit_share)
            task.overlap = overlap.max if audit else overlap.min
            task.overlap_min, task.overlap_max, task.audit = overlap.min, overlap.max, audit
        out.append(task)
    return out


def beyond_overlap(store: ProjectStore, kind: str | None = None) -> list[str]:
    """``item (kind): N labels, overlap K`` for every non-gold item with more live labels than its
    overlap: the app never hands an item out past it, but Label Studio and label files can; those
    labels are kept (a person made them) and counted like any other."""
    labels = live_labels(store, kind)
    return [
        f"{t.item_ref} ({t.kind}): {len(labels[t.task_id])} labels, overlap {t.overlap}"
        for t in store.labels.tasks(kind=kind)
        if not t.is_gold and len(labels.get(t.task_id, ())) > t.overlap
    ]


def first_target(overlap: int | OverlapRange) -> int:
    return overlap if isinstance(overlap, int) else overlap.min


def rule_for(overlap: int | OverlapRange, task: AnnotationTask) -> OverlapRange:
    """The stopping rule of an adaptive task: the configured one, or the defaults around the task's
    own bounds (tasks made with ``--overlap 2..4`` in a project whose config says a number)."""
    if isinstance(overlap, OverlapRange):
        return overlap
    return OverlapRange(min=task.overlap_min or task.overlap, max=task.overlap_max or task.overlap)


# -- the reliability snapshot --------------------------------------------------------------------------
@dataclass
class Snapshot:
    """What a submit needs of the fitted model: per field its classes, priors and each annotator's
    confusion matrix, and each annotator's number of gold labels; ``seq`` is the log's last event then."""

    seq: int
    method: str
    fields: dict[str, dict[str, Any]]
    gold: dict[str, int]

    def dumps(self) -> str:
        return json.dumps(
            {
                "seq": self.seq,
                "method": self.method,
                "gold": self.gold,
                "fields": {
                    name: {
                        "classes": f["classes"],
                        "priors": np.asarray(f["priors"]).tolist(),
                        "confusion": {a: np.asarray(m).tolist() for a, m in f["confusion"].items()},
                    }
                    for name, f in self.fields.items()
                },
            }
        )

    @classmethod
    def loads(cls, text: str) -> Snapshot:
        d = json.loads(text)
        fields = {
            name: {
                "classes": f["classes"],
                "priors": np.array(f["priors"]),
                "confusion": {a: np.array(m) for a, m in f["confusion"].items()},
            }
            for name, f in d["fields"].items()
        }
        return cls(d["seq"], d["method"], fields, d["gold"])


def snapshot_key(kind: str) -> str:
    return f"overlap.reliability.{kind}"


def adaptive_key(kind: str) -> str:
    """Meta key set once the kind has tasks under adaptive overlap (queues then keep its snapshot fresh)."""
    return f"overlap.adaptive.{kind}"


def model_method(store: ProjectStore) -> Method:
    """The reliability model adaptive overlap reads: the consensus's, Dawid–Skene under majority."""
    return "mace" if store.consensus_method == "mace" else "dawid_skene"


def read_snapshot(store: ProjectStore, kind: str) -> Snapshot | None:
    return _read(store, kind)


def _read(store: ProjectStore, kind: str) -> Snapshot | None:
    raw = store.get_meta(snapshot_key(kind))
    return None if raw is None else Snapshot.loads(raw)


def refresh(
    store: ProjectStore,
    kind: str,
    method: Method = "dawid_skene",
    force: bool = False,
    setting: int | OverlapRange | None = None,
) -> Snapshot | None:
    """Refit the kind's snapshot when the log grew by a tenth (at least 50 events) since the last fit,
    or with ``force``; returns the snapshot in force. With ``setting`` (``[annotation] overlap``), a
    refit also looks again at every item that stopped below ``max``: one no longer certain under the
    new reliabilities goes to one more annotator."""
    current = _read(store, kind)
    seq = store.labels.last_seq()
    if not force and current is not None and seq - current.seq < max(REFIT_MIN_EVENTS, current.seq // 10):
        return current
    model = fit_kind(store, kind, method)
    snap = Snapshot(
        seq,
        method,
        {
            name: {"classes": fm.classes, "priors": fm.priors, "confusion": fm.confusion}
            for name, fm in model.fields.items()
        },
        model.gold_labels,
    )
    store.set_meta(snapshot_key(kind), snap.dumps())
    if setting is not None:
        _recheck(store, kind, snap, setting)
    return snap


def _recheck(store: ProjectStore, kind: str, snap: Snapshot, setting: int | OverlapRange) -> list[str]:
    """Items at their target below ``max`` whose labels are not certain under ``snap``: decided again
    (each in its own transaction, which checks everything anew under the row lock)."""
    labels = live_labels(store, kind)
    raised = []
    for task in store.labels.tasks(kind=kind):
        if task.overlap_max is None or task.audit or task.overlap >= task.overlap_max:
            continue
        mine, rule = labels.get(task.task_id, {}), rule_for(setting, task)
        if len(mine) < task.overlap or certain(kind, mine, snap, rule):
            continue
        with store.write() as conn:
            if decide(conn, store, task.task_id, kind, rule, snap):
                raised.append(task.task_id)
    return raised


# -- the decision ---------------------------------------------------------------------------------------
def _matrix(field: dict[str, Any], annotator: str) -> np.ndarray:
    known = field["confusion"]
    if annotator in known:
        return known[annotator]
    if known:  # the population's mean annotator
        return np.mean(list(known.values()), axis=0)
    k = len(field["classes"])
    return np.full((k, k), (1 - DEFAULT_ACCURACY) / max(k - 1, 1)) + np.eye(k) * (
        DEFAULT_ACCURACY - (1 - DEFAULT_ACCURACY) / max(k - 1, 1)
    )


def _field_for(snap: Snapshot | None, kind: str, name: str, seen: set[str]) -> dict[str, Any]:
    """The snapshot's field, or an unfitted one over the field's choices and the values seen."""
    if snap is not None and name in snap.fields and seen <= set(snap.fields[name]["classes"]):
        return snap.fields[name]
    spec = next((f for f in get_kind(kind).fields if f.name == name), None)
    classes = [canonical_json(c) for c in (spec.choices or ())] if spec else []
    classes += sorted(seen - set(classes))
    return {"classes": classes, "priors": np.full(len(classes), 1 / len(classes)), "confusion": {}}


def certain(kind: str, labels: dict[str, dict[str, Any]], snap: Snapshot | None, rule: OverlapRange) -> bool:
    """Whether an item's labels settle it: some label, every unit's most probable value reaching
    ``rule.confidence`` (a disagreement between annotators of similar reliability never does) and
    being a value somebody gave (the consensus never decides a value nobody chose, so an item whose
    labels point elsewhere — an annotator known to say the opposite — needs another label), and a
    lone label only from an annotator with ``rule.gold_items`` gold labels."""
    if not labels:
        return False
    if len(labels) == 1:
        (who,) = labels
        if (snap.gold.get(who, 0) if snap else 0) < rule.gold_items:
            return False
    task_kind = get_kind(kind)
    said: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for annotator, values in labels.items():
        for unit, value in task_kind.units(values).items():
            said.setdefault(unit, []).append((annotator, canonical_json(value)))
    if not said:
        return False
    for (_sub, name), given in said.items():
        field = _field_for(snap, kind, name, {v for _, v in given})
        index = {c: i for i, c in enumerate(field["classes"])}
        matrices = {a: _matrix(field, a) for a, _ in given}
        post = unit_posterior([(a, index[v]) for a, v in given], field["priors"], matrices)
        if settled_value(post, field["classes"], {v for _, v in given}, rule.confidence) is None:
            return False
    return True


def review_hook(
    store: ProjectStore, task_id: str, kind: str, rule: OverlapRange, snap: Snapshot | None
) -> Callable[[Connection], None]:
    """What a submit of an adaptive task runs in its own transaction: lock the task, and when every
    annotator it went to has finished it and their labels are not :func:`certain`, raise its target."""

    def review(conn: Connection) -> None:
        decide(conn, store, task_id, kind, rule, snap)

    return review


def decide(
    conn: Connection, store: ProjectStore, task_id: str, kind: str, rule: OverlapRange, snap: Snapshot | None
) -> bool:
    """One adaptive decision in the caller's transaction; True when the target went up."""
    target = store.submits.lock_target(conn, task_id)
    if target is None or target.overlap_max is None or target.audit or target.overlap >= target.overlap_max:
        return False
    finished = store.labels.task_finishers(conn, task_id)
    if target.open or len(finished) < target.overlap:
        return False  # someone still holds it, or it is short of its target: nothing to decide yet
    labels = {a: ev.values for a, ev in finished.items() if ev.action == "label"}
    if certain(kind, labels, snap, rule):
        return False
    return store.submits.raise_target(conn, task_id, target.overlap + 1)


def review_tasks(
    store: ProjectStore, task_ids: Iterable[str], overlap: int | OverlapRange, method: Method = "dawid_skene"
) -> list[str]:
    """Decide, each in its own short transaction, every adaptive task of ``task_ids`` (after labels
    came in from elsewhere: a Label Studio pull, a label file). Returns the tasks whose target went up."""
    raised, snaps = [], {}
    for task_id in sorted(set(task_ids)):
        task = store.labels.task(task_id)
        if task.overlap_max is None:
            continue
        if task.kind not in snaps:
            snaps[task.kind] = refresh(store, task.kind, method)
        rule, snap = rule_for(overlap, task), snaps[task.kind]
        with store.write() as conn:
            if decide(conn, store, task_id, task.kind, rule, snap):
                raised.append(task_id)
    return raised
