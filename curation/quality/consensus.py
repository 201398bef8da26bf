"""Consensus and adjudication: the final label of every task, derived from the event logs alone.

The rule: a maintainer's adjudication (the latest one for the task; a second decision supersedes the
first) is final. Otherwise each agreement unit (``TaskKind.units``) is decided by majority over the
annotators' live labels; when the most frequent value of any unit is tied, the task is ``undecided``
and waits in the adjudication queue. Unanimous tasks are marked ``unanimous``. Decided units are then
assembled back into the task kind's value shape, so the result validates like any label.

Nothing here reads the clock or a random source: the same logs always give the same final labels.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.schemas.common import PrefkitError, canonical_json, utcnow
from prefkit.schemas.curation import Adjudication, LabelEvent

if TYPE_CHECKING:
    from prefkit.curation.project import ProjectStore

DECIDED_BY = ("unanimous", "majority", "adjudicated", "undecided")


class AdjudicationError(PrefkitError):
    """An adjudication was refused (unknown task, not a maintainer, invalid values)."""


# -- reading the logs ---------------------------------------------------------------------------------
def live_labels(store: ProjectStore, kind: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """``{task_id: {annotator: values}}`` of live ``label`` events (skips and flags carry no label).
    An LLM judge's labels (``source="judge"``) are measured against people, never counted as votes."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for ev in store.labels.effective_events(kind):
        if ev.action == "label" and ev.source != "judge":
            out.setdefault(ev.task_id, {})[ev.annotator] = ev.values
    return out


def live_flags(store: ProjectStore, kind: str | None = None) -> list[LabelEvent]:
    """Flag events that are still an annotator's live event for the task."""
    return [ev for ev in store.labels.effective_events(kind) if ev.action == "flag"]


def effective_adjudications(store: ProjectStore) -> dict[str, Adjudication]:
    """The decision in force per task: the latest adjudication (each new one supersedes the last)."""
    latest: dict[str, Adjudication] = {}
    for adj in store.labels.adjudications():
        latest[adj.task_id] = adj
    return latest


# -- deciding -----------------------------------------------------------------------------------------
def decide_units(kind_name: str, labels: dict[str, dict[str, Any]]) -> tuple[dict, list, str]:
    """``(decided units, tied units, decided_by)`` for one task's labels, by majority per unit."""
    kind = get_kind(kind_name)
    votes: dict[tuple[str, str], Counter] = {}
    for values in labels.values():
        for unit, value in kind.units(values).items():
            votes.setdefault(unit, Counter())[canonical_json(value)] += 1
    decided: dict[tuple[str, str], Any] = {}
    tied: list[tuple[str, str]] = []
    unanimous = bool(votes) and all(len(c) == 1 for c in votes.values())
    for unit in sorted(votes):
        (top, n), *rest = sorted(votes[unit].items(), key=lambda kv: (-kv[1], kv[0]))
        if rest and rest[0][1] == n:
            tied.append(unit)
        else:
            decided[unit] = _value(top)
    if not votes or tied:
        return decided, tied, "undecided"
    return decided, tied, "unanimous" if unanimous else "majority"


def _value(encoded: str) -> Any:
    return json.loads(encoded)


def final_label(kind_name: str, labels: dict[str, dict[str, Any]], adjudication: Adjudication | None) -> dict:
    """The final label of one task: ``{values, decided_by, n_labels, tied}``."""
    if adjudication is not None:
        return {
            "values": adjudication.values,
            "decided_by": "adjudicated",
            "n_labels": len(labels),
            "tied": [],
        }
    units, tied, decided_by = decide_units(kind_name, labels)
    values = None if decided_by == "undecided" else get_kind(kind_name).assemble(units, labels)
    return {
        "values": values,
        "decided_by": decided_by,
        "n_labels": len(labels),
        "tied": [list(u) for u in tied],
    }


def final_labels(store: ProjectStore, kind: str) -> dict[str, dict[str, Any]]:
    """``{task_id: {values, decided_by, n_labels, tied}}`` for every task of ``kind``.

    ``decided_by`` is one of ``unanimous``, ``majority``, ``adjudicated``, ``undecided`` (a tie, or no
    label yet); ``values`` is ``None`` when undecided.
    """
    get_kind(kind)  # an unknown kind is an error, not an empty result
    labels = live_labels(store, kind)
    adjs = effective_adjudications(store)
    return {
        t.task_id: final_label(kind, labels.get(t.task_id, {}), adjs.get(t.task_id))
        for t in store.labels.tasks(kind=kind)
    }


def disagreements(store: ProjectStore, kind: str | None = None) -> list[dict[str, Any]]:
    """Tasks whose annotators do not all agree, ties first (they need a maintainer's decision).

    Each: ``task_id, kind, item_ref, labels {annotator: values}, adjudicated, decided_by, tied``.
    """
    if kind is not None:
        get_kind(kind)
    labels = live_labels(store, kind)
    adjs = effective_adjudications(store)
    out = []
    for task in store.labels.tasks(kind=kind):
        mine = labels.get(task.task_id, {})
        if len(mine) < 2:
            continue
        _units, tied, decided_by = decide_units(task.kind, mine)
        if decided_by == "unanimous":
            continue
        out.append(
            {
                "task_id": task.task_id,
                "kind": task.kind,
                "item_ref": task.item_ref,
                "labels": dict(sorted(mine.items())),
                "adjudicated": task.task_id in adjs,
                "decided_by": "adjudicated" if task.task_id in adjs else decided_by,
                "tied": [list(u) for u in tied],
            }
        )
    return sorted(out, key=lambda d: (d["adjudicated"], d["decided_by"] != "undecided", d["task_id"]))


def adjudicate(
    store: ProjectStore, task_id: str, maintainer: str, values: dict[str, Any], note: str = ""
) -> Adjudication:
    """Record a maintainer's final decision for ``task_id``; a later decision supersedes this one."""
    user = store.accounts.user(maintainer)
    if user is None or user.role != "maintainer" or not user.active:
        raise AdjudicationError(f"{maintainer!r} is not an active maintainer; only maintainers adjudicate")
    task = store.labels.task(task_id)
    clean = get_kind(task.kind).validate(values, task)
    previous = effective_adjudications(store).get(task_id)
    adj = Adjudication(
        adjudication_id="adj_" + uuid.uuid4().hex,
        task_id=task_id,
        maintainer=maintainer,
        values=clean,
        note=note,
        supersedes=previous.adjudication_id if previous else None,
        created_at=utcnow(),
    )
    store.labels.add_adjudication(adj)
    return adj
