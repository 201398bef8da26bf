"""Recalibration after a guidelines change (``prefkit tasks recalibrate``): decided items queued again
for every active annotator, and their answers compared with the decisions, per annotator.

An answer is a ``recalibrate`` label event: never a vote, an edit or a decision (the live labels,
consensus, agreement, the gates and releases never read it; ``store.labels.effective_events`` leaves
it out), and it does not count towards an item's overlap."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.quality.consensus import final_labels
from prefkit.schemas.common import utcnow

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore


def recalibrate(store: ProjectStore, kind: str, n: int, seed: int = 0) -> dict[str, int]:
    """Queue ``n`` decided items of ``kind`` (not gold) again for each active annotator, drawn per
    annotator with ``seed`` among the items they never had; ``{annotator: items queued}``."""
    kind = get_kind(kind).name
    gold = {t.task_id for t in store.labels.tasks(kind=kind) if t.is_gold}
    decided = sorted(tid for tid, f in final_labels(store, kind).items() if f.decided and tid not in gold)
    round_id = f"recalibrate:{utcnow()}"
    out = {}
    for user in store.accounts.users(role="annotator"):
        if user.active:
            pool = random.Random(f"{seed}:{user.username}").sample(decided, len(decided))
            out[user.username] = store.assignments.queue_again(user.username, kind, pool, n, round_id)
    return out


def report(store: ProjectStore, kind: str) -> list[dict[str, Any]]:
    """Per annotator: recalibration answers, the decided units they covered, and the share of those
    units answered as decided (``agreement``, None without any)."""
    task_kind = get_kind(kind)
    finals = final_labels(store, task_kind.name)
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for ev in store.labels.events(kind=task_kind.name):
        decided = finals[ev.task_id].values if ev.action == "recalibrate" else None
        if decided is not None:
            want, said = task_kind.units(decided), task_kind.units(ev.values)
            counts = tally[ev.annotator]
            counts[0] += 1
            counts[1] += len(want)
            counts[2] += sum(said.get(unit) == value for unit, value in want.items())
    return [
        {
            "annotator": who,
            "task_kind": task_kind.name,
            "answers": n,
            "units": units,
            "agreement": round(same / units, 4) if units else None,
        }
        for who, (n, units, same) in sorted(tally.items())
    ]
