"""Preference-matching pairs: (gold checklist item, candidate preference statement).

The evaluation harness will supply candidates inferred by models; until then — and for calibrating
annotators — :func:`pairs_from_instances` builds pairs from a project's own CUPID instances: each
checklist item of an instance's gold preference paired with (a) that same preference (expected to cover
it fully), and (b) the preference the same persona held for the conflicting or contrastive case (expected
not to cover it). The expected relation is kept in the pair's metadata, never shown to annotators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefkit.curation.store import Instance, PreferencePair
from prefkit.schemas.common import content_hash
from prefkit.schemas.curation import Provenance

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

PROVENANCE = Provenance(
    source="pipelines.matching.pairs_from_instances"
)  # a stable label stored with each pair (not an import path)


def _pair(item: str, candidate: str, instance_id: str, relation: str) -> PreferencePair:
    return PreferencePair(
        pair_id="pair_" + content_hash([item, candidate], 16),
        checklist_item=item,
        candidate=candidate,
        origin="instances",
        instance_id=instance_id,
        meta={"relation": relation},
    )


def pairs_from_instances(instances: list[Instance]) -> list[PreferencePair]:
    """Pairs from stored instances (``store.content.instances()``), deduplicated, in a stable order."""
    by_persona: dict[str, dict[str, Instance]] = {}
    for inst in instances:
        rec = inst.record
        by_persona.setdefault(rec.persona_id, {})[rec.instance_type] = inst
    pairs: dict[str, PreferencePair] = {}
    for kinds in by_persona.values():
        for kind, inst in sorted(kinds.items()):
            rec = inst.record
            others = [k.record.current_contextual_preference for t, k in kinds.items() if t != kind]
            for item in rec.current_checklist:
                same = _pair(item, rec.current_contextual_preference, inst.instance_id, "same_preference")
                pairs.setdefault(same.pair_id, same)
                for other in others:
                    if other != rec.current_contextual_preference:
                        p = _pair(item, other, inst.instance_id, "other_preference")
                        pairs.setdefault(p.pair_id, p)
    return sorted(pairs.values(), key=lambda p: p.pair_id)


def add_pairs_from_instances(store: ProjectStore) -> tuple[int, list[PreferencePair]]:
    """Build the pairs of the store's CUPID instances and add them; ``(pairs added, all pairs built)``
    (pairs already present are not added twice)."""
    pairs = pairs_from_instances(store.content.instances())
    return store.content.add_preference_pairs(pairs, PROVENANCE), pairs
