"""Export AlpsBench annotation packets from the project, reproducing the imported packets.

The dialogue comes from the turns table (as originally imported, before human revisions unless
``revised=True``), gold memories from their validated records, model extractions from their raw form,
and everything else from the packet's verbatim remainder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefkit.exports.writers import atomic_write_bytes

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore


def packet(
    store: ProjectStore, session_id: str, extra: dict[str, Any], revised: bool = False
) -> dict[str, Any]:
    turns = store.content.dialogue(session_id).turns if revised else store.content.original_turns(session_id)
    out = json.loads(json.dumps(extra))
    task1 = out["task1"]
    has_gt = task1.pop("_has_ground_truth", True)
    mems = store.content.memories(dialogue_id=session_id)
    gold = [m.record for m in mems if m.origin == "gold"]
    by_model: dict[str, list[Any]] = {}
    for m in mems:
        if m.origin == "candidate":
            by_model.setdefault(m.source_model, []).append(m.raw)
    dialogue_rows = []
    for t in turns:
        row = {"role": t.role, "text": t.content}
        row.update(t.extra or {})
        dialogue_rows.append(row)
    result: dict[str, Any] = {}
    for key in ("session_id", "available_tasks"):
        if key in out:
            result[key] = out.pop(key)
    result["dialogue"] = dialogue_rows
    result.update(out)
    if has_gt:
        task1["ground_truth_memories"] = gold
    for model, o in task1.get("llm_outputs", {}).items():
        if isinstance(o, dict) and isinstance(o.get("memory_items"), int):
            o["memory_items"] = by_model.get(model, [])
    return result


def export_packets(store: ProjectStore, out_dir: Path, revised: bool = False) -> int:
    """Write one ``sess_*.json`` per packet under ``out_dir``, in the layout it was imported from."""
    n = 0
    for p in store.content.packets():
        meta = store.content.dialogue(p.dialogue_id).meta
        rel = meta.get("relpath") or f"{p.session_id}.json"
        data = packet(store, p.session_id, p.extra, revised=revised)
        atomic_write_bytes(
            out_dir / rel, (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        )
        n += 1
    return n
