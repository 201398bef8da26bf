"""Consensus and adjudication: the final label of every task, derived from the event logs alone.

The rule: a maintainer's adjudication (the latest one for the task; a second decision supersedes the
first) is final. Otherwise each agreement unit (``TaskKind.units``) is decided by majority over the
annotators' live labels; when the most frequent value of any unit is tied, the task is ``undecided``
and waits in the adjudication queue. Unanimous tasks are marked ``unanimous``. Decided units are then
assembled back into the task kind's value shape, so the result validates like any label.

Nothing here reads the clock or a random source: the same logs always give the same final labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from prefkit.curation.annotation.annotator_model import KindModel, fit_kind, live_labels
from prefkit.curation.annotation.reliability_models import settled_value
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.schemas.common import PrefkitError, canonical_json, content_hash, utcnow
from prefkit.schemas.config import Consensus
from prefkit.schemas.curation import Adjudication, LabelEvent

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore
    from prefkit.schemas.curation import AnnotationTask

DecidedBy = Literal["unanimous", "majority", "dawid_skene", "mace", "adjudicated", "undecided"]
Unit = tuple[str, str]  # (sub-unit, field) of TaskKind.units


@dataclass(frozen=True)
class FinalLabel:
    """The final label of one task: its ``values`` (``None`` while undecided), how they were decided
    (``unanimous``, ``majority``, a reliability model's ``dawid_skene`` / ``mace``, ``adjudicated``,
    or ``undecided``: a tie or no label yet), the live labels counted and the units left tied."""

    values: dict[str, Any] | None
    decided_by: DecidedBy
    n_labels: int
    tied: tuple[Unit, ...] = ()

    @property
    def decided(self) -> bool:
        return self.decided_by != "undecided"

    def enough(self, task: AnnotationTask, min_labels: int | None = None) -> bool:
        """Whether the task is verified: adjudicated, or decided on the labels it needed."""
        return self.decided_by == "adjudicated" or (
            self.decided and self.n_labels >= labels_needed(task, min_labels)
        )

    @property
    def shown_decided_by(self) -> str:
        """``decided_by`` as ``final_labels`` and a declared kind's rows state it: ``single`` for a
        decision on one person's label (a lone label is trivially ``unanimous``)."""
        return (
            "single"
            if self.n_labels == 1 and self.decided_by not in ("adjudicated", "undecided")
            else self.decided_by
        )


@dataclass(frozen=True)
class Disagreement:
    """A task whose annotators do not all agree: their labels, whether a maintainer decided it, how
    it stands (``decided_by``, as in :class:`FinalLabel`) and the units tied."""

    task_id: str
    kind: str
    item_ref: str
    labels: dict[str, dict[str, Any]]
    adjudicated: bool
    decided_by: DecidedBy
    tied: tuple[Unit, ...]


__all__ = ["live_labels"]  # re-exported: the one reading of live human labels


class AdjudicationError(PrefkitError):
    """An adjudication was refused (unknown task, not a maintainer, invalid values)."""


# -- reading the logs ---------------------------------------------------------------------------------
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
def decide_units(
    kind_name: str, labels: dict[str, dict[str, Any]], task: AnnotationTask | None = None
) -> tuple[dict, list, DecidedBy]:
    """``(decided units, tied units, decided_by)`` for one task's labels, by the kind's rule
    (``TaskKind.decide``: majority per unit unless the kind says otherwise)."""
    kind = get_kind(kind_name)
    votes: dict[tuple[str, str], list[Any]] = {}
    for values in labels.values():
        for unit, value in kind.item_units(values, task).items():
            votes.setdefault(unit, []).append(value)
    decided, tied = kind.decide(votes)
    unanimous = bool(votes) and all(len({canonical_json(v) for v in vs}) == 1 for vs in votes.values())
    if not votes or tied:
        return decided, tied, "undecided"
    return decided, tied, "unanimous" if unanimous else "majority"


def decide_units_by_model(
    task: AnnotationTask,
    kind_name: str,
    labels: dict[str, dict[str, Any]],
    model: KindModel,
    confidence: float,
) -> tuple[dict, list, DecidedBy]:
    """``(decided units, undecided units, decided_by)`` by the units' posteriors under ``model``: a
    unit is decided when its most probable value reaches ``confidence`` and some annotator gave it;
    otherwise (a tie, low confidence, a value nobody gave) it waits for adjudication."""
    kind = get_kind(kind_name)
    given: dict[tuple[str, str], set[str]] = {}
    for values in labels.values():
        for unit, value in kind.item_units(values, task).items():
            given.setdefault(unit, set()).add(canonical_json(value))
    decided: dict[tuple[str, str], Any] = {}
    tied: list[tuple[str, str]] = []
    for unit in sorted(given):
        fm = model.fields[unit[1]]
        top = settled_value(fm.posteriors[(task.task_id, unit[0])], fm.classes, given[unit], confidence)
        if top is None:
            tied.append(unit)
        else:
            decided[unit] = fm.value(top)
    if not given or tied:
        return decided, tied, "undecided"
    return decided, tied, "unanimous" if all(len(v) == 1 for v in given.values()) else model.method


def decided_part(
    kind_name: str, labels: dict[str, dict[str, Any]], task: AnnotationTask | None = None
) -> dict[str, Any]:
    """What a majority decides of a tied task: the values of every sub-unit whose fields all have a
    majority, assembled like a final label but partial (a tied sub-unit is left out). The adjudication
    form starts from it, so a maintainer decides only what the annotators did not agree on."""
    kind = get_kind(kind_name)
    units, tied, _ = decide_units(kind_name, labels, task)
    if not units:
        return {}
    try:  # a kind whose assemble takes any decided fields (one field per sub-unit, or per field)
        return kind.assemble(units, labels)
    except (KeyError, IndexError):  # one that needs every field of a sub-unit: leave tied sub-units out
        open_subs = {sub for sub, _field in tied}
        kept = {unit: value for unit, value in units.items() if unit[0] not in open_subs}
        return kind.assemble(kept, labels) if kept else {}


def final_label(
    kind_name: str,
    labels: dict[str, dict[str, Any]],
    adjudication: Adjudication | None,
    decided: tuple[dict, list, DecidedBy] | None = None,
) -> FinalLabel:
    """The final label of one task (``decided``: the units already decided by a reliability model,
    else by majority)."""
    if adjudication is not None:
        return FinalLabel(adjudication.values, "adjudicated", len(labels))
    units, tied, decided_by = decide_units(kind_name, labels) if decided is None else decided
    values = None if decided_by == "undecided" else get_kind(kind_name).assemble(units, labels)
    return FinalLabel(values, decided_by, len(labels), tuple(tied))


def labels_needed(task: AnnotationTask, min_labels: int | None) -> int:
    """The live labels a task needs to be decided by enough people: ``[release] min_labels_per_item``
    where set, else its overlap; under adaptive overlap always the target it settled on."""
    return task.overlap if min_labels is None or task.overlap_max is not None else min_labels


def final_labels(store: ProjectStore, kind: str) -> dict[str, FinalLabel]:
    """``{task_id: FinalLabel}`` for every task of ``kind``."""
    get_kind(kind)  # an unknown kind is an error, not an empty result
    labels = live_labels(store, kind)
    adjs = effective_adjudications(store)
    decide = decider(store, kind)
    out = {}
    for t in store.labels.tasks(kind=kind):
        mine = labels.get(t.task_id, {})
        out[t.task_id] = final_label(kind, mine, adjs.get(t.task_id), decide(t, mine))
    return out


def decider(store: ProjectStore, kind: str):
    """``(task_id, labels) -> (decided, undecided, decided_by)`` under the store's consensus rule
    (``[release] consensus``): majority per unit, or the posterior of a Dawid–Skene / MACE model
    fitted once on every label of the kind."""
    method: Consensus = getattr(store, "consensus_method", "majority")
    if method == "majority":
        return lambda task, labels: decide_units(kind, labels, task)
    model = fit_kind(store, kind, method)
    confidence = store.consensus_confidence
    return lambda task, labels: decide_units_by_model(task, kind, labels, model, confidence)


def disagreements(store: ProjectStore, kind: str | None = None) -> list[Disagreement]:
    """Tasks whose annotators do not all agree, ties first (they need a maintainer's decision)."""
    if kind is not None:
        get_kind(kind)
    labels = live_labels(store, kind)
    adjs = effective_adjudications(store)
    deciders: dict[str, Any] = {}
    out = []
    for task in store.labels.tasks(kind=kind):
        mine = labels.get(task.task_id, {})
        if len(mine) < 2:
            continue
        if task.kind not in deciders:
            deciders[task.kind] = decider(store, task.kind)
        _units, tied, decided_by = deciders[task.kind](task, mine)
        if decided_by == "unanimous":
            continue
        out.append(
            Disagreement(
                task.task_id,
                task.kind,
                task.item_ref,
                dict(sorted(mine.items())),
                task.task_id in adjs,
                "adjudicated" if task.task_id in adjs else decided_by,
                tuple(tied),
            )
        )
    return sorted(out, key=lambda d: (d.adjudicated, d.decided_by != "undecided", d.task_id))


def adjudication_id(store: ProjectStore, adj: Adjudication) -> str:
    """The id of a decision, made from what was decided (ids reach the released ``adjudications``
    config, so a release depends on the decisions, not on a random draw): the task, the decider's
    pseudonym (never the user name, which the released id would let anyone confirm by guessing), the
    values, the note and the decision it supersedes. Two decisions in one task's chain never share an
    id (each supersedes a different one); the same decision recorded twice on top of the same one is
    one decision."""
    decided = {
        "task_id": adj.task_id,
        "decider": store.releases.pseudonym(adj.maintainer),
        "values": adj.values,
        "note": adj.note,
        "supersedes": adj.supersedes,
    }
    return "adj_" + content_hash(decided, 32)


def adjudicate(
    store: ProjectStore, task_id: str, maintainer: str, values: dict[str, Any], note: str = ""
) -> Adjudication:
    """Record a maintainer's final decision for ``task_id``; a later decision supersedes this one.
    Deciding again what is already in force (same maintainer, values and note) records nothing and
    returns the decision in force, so a script that decides twice leaves one decision."""
    user = store.accounts.user(maintainer)
    if user is None or user.role != "maintainer" or not user.active:
        raise AdjudicationError(f"{maintainer!r} is not an active maintainer; only maintainers adjudicate")
    task = store.labels.task(task_id)
    clean = get_kind(task.kind).validate(values, task)
    previous = effective_adjudications(store).get(task_id)
    decision = (maintainer, clean, note)
    if previous is not None and (previous.maintainer, previous.values, previous.note) == decision:
        return previous  # already in force
    adj = Adjudication(
        adjudication_id="",
        task_id=task_id,
        maintainer=maintainer,
        values=clean,
        note=note,
        supersedes=previous.adjudication_id if previous else None,
        created_at=utcnow(),
    )
    adj = adj.model_copy(update={"adjudication_id": adjudication_id(store, adj)})
    store.labels.add_adjudication(adj)  # False: the same decision, recorded meanwhile by another process
    return adj
