"""The hooks of ``preference_match`` (declared in ``preference_match.toml`` beside this module): how
much of a gold checklist item does a candidate preference cover?

One task per preference pair (``prefkit tasks pairs import`` / ``from-instances``); a pair imported
with a known answer (``gold`` in the pairs file) makes its task a gold item.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.declared import own_kind

if TYPE_CHECKING:
    from prefkit.curation.store import PreferencePair, ProjectStore

KIND = "preference_match"


def item_ref(pair_id: str) -> str:
    """The item a ``preference_match`` task is about: one preference pair."""
    return f"pair:{pair_id}"


def pair_payload(p: PreferencePair) -> dict[str, Any]:
    """What an annotator sees of one preference pair."""
    return {
        "pair_id": p.pair_id,
        "checklist_item": p.checklist_item,
        "candidate": p.candidate,
        "instance_id": p.instance_id,
        "origin": p.origin,
    }


def items(store: ProjectStore) -> Iterator[tuple[str, dict[str, Any]]]:
    """``hooks.items``: every preference pair, read a page at a time."""
    for p in store.content.iter_preference_pairs():
        yield item_ref(p.pair_id), pair_payload(p)


def gold(store: ProjectStore) -> dict[str, dict[str, Any]]:
    """``hooks.gold``: pairs imported with a known answer make their task a gold item."""
    pairs = store.content.iter_preference_pairs()
    return {item_ref(p.pair_id): p.meta["gold_answer"] for p in pairs if p.meta and p.meta.get("gold_answer")}


#: The kind, as pyproject.toml's ``prefkit.task_kinds`` entry point names it.
TASK_KIND = own_kind(__file__)
