"""The ``matching`` release config, the one ``preference_match`` feeds (its declaration names
:func:`matching_config` under ``hooks.release``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from prefkit.curation.quality.consensus import final_labels, live_labels
from prefkit.exports.release_data import ConfigData, _schema
from prefkit.schemas.common import canonical_json

if TYPE_CHECKING:
    from prefkit.curation.annotation.task_kinds import TaskKind
    from prefkit.curation.store import ProjectStore


def matching_config(store: ProjectStore, kind: TaskKind, pseudonym: Callable[[str], str]) -> ConfigData:
    """The preference-matching set: pairs with a final human coverage label, each annotator's label
    and how many of them agree with the final one. Pairs without a final label are dropped."""
    cfg = ConfigData(
        "matching",
        "Checklist item / candidate preference pairs with their final human coverage label, every "
        "annotator's label (pseudonymous) and the share of annotators agreeing with the final label.",
        _schema(
            "id task_id instance_id origin checklist_item candidate coverage",
            "decided_by n_labels:int labels agreement:float",
        ),
        needs=(kind.name,),
    )
    finals = final_labels(store, kind.name)
    labels = live_labels(store, kind.name)
    for t in store.labels.tasks(kind=kind.name):
        fl, p = finals[t.task_id], t.payload
        if t.is_gold:
            cfg.drop("gold item (used to score annotators)")
            continue
        coverage = (fl.values or {}).get("coverage")
        if coverage is None:
            cfg.drop("no final label (unlabelled or a tie not adjudicated)")
            continue
        mine = {pseudonym(a): v.get("coverage") for a, v in labels.get(t.task_id, {}).items()}
        agree = sum(v == coverage for v in mine.values())
        cfg.add(
            "test",
            {
                "id": p["pair_id"],
                "task_id": t.task_id,
                "instance_id": p.get("instance_id"),
                "origin": p.get("origin"),
                "checklist_item": p["checklist_item"],
                "candidate": p["candidate"],
                "coverage": coverage,
                "decided_by": fl.decided_by,
                "n_labels": fl.n_labels,
                "labels": canonical_json(dict(sorted(mine.items()))),
                "agreement": round(agree / len(mine), 4) if mine else None,
            },
        )
    return cfg.finish()
