"""Import AlpsBench annotation packets (a folder of ``sess_*.json``) into a project.

Everything in a packet is kept: the dialogue becomes a dialogue with turns, task-1 gold memories become
gold :class:`~prefkit.schemas.alpsbench.MemoryItem` rows (validated strictly: a bad gold memory is an input
error), every model's extraction becomes candidate memories with the model as source (kept whatever
their shape, with their raw form and a validation flag), and the rest of the packet (task 2-4 data,
model output metadata) is kept verbatim so :mod:`prefkit.exports.alpsbench` reproduces the packet.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefkit.curation.store import Dialogue, DialogueTurn, ImportBundle, NewMemory, Packet
from prefkit.schemas.alpsbench import MemoryItem, check_candidate
from prefkit.schemas.common import InputError, check_id, sha256_file, validation_line
from prefkit.schemas.curation import Provenance
from prefkit.schemas.reading import read_json, within
from pydantic import ValidationError

LICENCE = "ODC-BY (AlpsBench reprocessing of WildChat-1M)"


def find_packets(path: Path, follow_symlinks: bool = False) -> list[Path]:
    """The packets under ``path`` (or ``path`` itself); a symbolic link in the folder that leads out of
    it is refused unless ``follow_symlinks``."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError(f"{path}: no such file or directory")
    files = sorted(path.rglob("sess_*.json"))
    if not files:
        raise InputError(f"{path}: no sess_*.json packets found")
    within(path, files, follow_symlinks)
    return files


def locate_evidence(turns: list[DialogueTurn], text: str | None) -> int | None:
    """Index of the first turn containing ``text`` (whitespace-normalised), or None."""
    if not text:
        return None
    needle = " ".join(text.split())
    for t in turns:
        if needle and needle in " ".join(t.content.split()):
            return t.index
    return None


def _turns(where: str, dialogue: Any) -> list[DialogueTurn]:
    if not isinstance(dialogue, list):
        raise InputError(f"{where}: field dialogue: expected a list of turns")
    turns = []
    for i, turn in enumerate(dialogue):
        if not isinstance(turn, dict) or turn.get("role") not in ("user", "assistant", "system"):
            raise InputError(f"{where}: field dialogue.{i}.role: expected user, assistant or system")
        if not isinstance(turn.get("text"), str):
            raise InputError(f"{where}: field dialogue.{i}.text: expected a string")
        extra = {k: v for k, v in turn.items() if k not in ("role", "text")}
        turns.append(DialogueTurn(i, turn["role"], turn["text"], extra or None))
    return turns


@dataclass
class ParsedPacket:
    """One packet as the store takes it: the dialogue, its memories and the packet's other keys."""

    dialogue: Dialogue
    memories: list[NewMemory]
    packet: Packet


def _parse_packet(path: Path, root: Path) -> ParsedPacket:
    where = str(path)
    packet = read_json(path)
    if not isinstance(packet, dict):
        raise InputError(f"{where}: expected a JSON object (an AlpsBench packet)")
    session_id = packet.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise InputError(f"{where}: field session_id: missing or not a string")
    try:
        check_id(session_id, "a session id")
    except ValueError as exc:
        raise InputError(f"{where}: field session_id: {exc}") from None
    task1 = packet.get("task1")
    if not isinstance(task1, dict):
        raise InputError(f"{where}: field task1: missing or not an object")
    turns = _turns(where, packet.get("dialogue"))
    rel = path.relative_to(root).as_posix() if root.is_dir() else path.name

    golds = task1.get("ground_truth_memories", [])
    if not isinstance(golds, list):
        raise InputError(f"{where}: field task1.ground_truth_memories: expected a list of memories")
    memories: list[NewMemory] = []
    for i, gold in enumerate(golds):
        try:
            item = MemoryItem.model_validate(gold)
        except ValidationError as exc:
            raise InputError(
                f"{where}: task1.ground_truth_memories.{i} field {validation_line(exc)}"
            ) from None
        memories.append(
            NewMemory(
                dialogue_id=session_id,
                origin="gold",
                position=i,
                raw=gold,
                memory_id=item.memory_id,
                record=item.model_dump(mode="json", exclude_unset=True),
                source_model="",
            )
        )

    outputs = task1.get("llm_outputs", {})
    if not isinstance(outputs, dict):
        raise InputError(f"{where}: field task1.llm_outputs: expected an object keyed by model")
    for model, out in outputs.items():
        items = out.get("memory_items") if isinstance(out, dict) else None
        if items is None:
            continue
        if not isinstance(items, list):
            raise InputError(f"{where}: field task1.llm_outputs.{model}.memory_items: expected a list")
        for i, raw in enumerate(items):
            problems = check_candidate(raw)
            record = None
            if not problems:
                ev_index = locate_evidence(turns, raw.get("evidence_text"))
                record = {
                    "memory_id": raw["memory_id"],
                    "type": raw["type"],
                    "label": raw["label"],
                    "value": raw["value"],
                    "confidence": raw["confidence"],
                    "evidence": {
                        "session_id": session_id,
                        "utterance_index": ev_index,
                        "text": raw["evidence_text"],
                    },
                    "evidence_flags": [] if ev_index is not None else ["evidence_not_found"],
                }
            memories.append(
                NewMemory(
                    dialogue_id=session_id,
                    origin="candidate",
                    position=i,
                    raw=raw,
                    memory_id=raw.get("memory_id")
                    if isinstance(raw, dict) and isinstance(raw.get("memory_id"), str)
                    else None,
                    record=record,
                    problems=problems or None,
                    source_model=model,
                )
            )

    # What is not held in rows above is kept verbatim, so the export reproduces the packet.
    extra = copy.deepcopy(packet)
    extra.pop("dialogue", None)
    extra["task1"].pop("ground_truth_memories", None)
    extra["task1"]["_has_ground_truth"] = "ground_truth_memories" in task1
    for out in extra["task1"].get("llm_outputs", {}).values():
        if isinstance(out, dict) and isinstance(out.get("memory_items"), list):
            out["memory_items"] = len(out["memory_items"])  # a count placeholder, refilled on export
    dialogue = Dialogue(
        dialogue_id=session_id,
        origin="alpsbench",
        persona_id=None,
        session_index=None,
        needs_reverification=False,
        meta={"relpath": rel, "dialogue_source": packet.get("dialogue_source")},
        turns=turns,
    )
    return ParsedPacket(dialogue, memories, Packet(session_id, session_id, extra))


def build_bundle(path: Path, follow_symlinks: bool = False) -> ImportBundle:
    """Parse and validate every packet under ``path`` before anything is written."""
    path = Path(path)
    files = find_packets(path, follow_symlinks)
    root = path if path.is_dir() else path.parent
    digest = hashlib.sha256()
    bundle = ImportBundle(
        kind="alpsbench",
        path=str(path),
        sha256="",
        rows=len(files),
        licence=LICENCE,
        provenance=Provenance(source="import.alpsbench", licence=LICENCE),
    )
    seen: dict[str, Path] = {}
    for f in files:
        digest.update(f.relative_to(root).as_posix().encode() + b"\0" + sha256_file(f).encode())
        parsed = _parse_packet(f, root)
        sid = parsed.packet.session_id
        if sid in seen:
            raise InputError(f"{f}: session_id {sid!r} also appears in {seen[sid]}")
        seen[sid] = f
        bundle.dialogues.append(parsed.dialogue)
        bundle.memories += parsed.memories
        bundle.packets.append(parsed.packet)
    bundle.sha256 = digest.hexdigest()
    return bundle
