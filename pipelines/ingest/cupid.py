"""Import CUPID benchmark rows (JSONL or Parquet in the exact CUPID release format)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curation.store.content import ImportBundle
from schemas.common import canonical_json, content_hash, sha256_file
from schemas.cupid import BenchmarkInstance, PriorInteraction
from schemas.curation import Provenance
from schemas.reading import iter_rows, no_records, validate_row


def instance_id(row: dict[str, Any], occurrence: int = 0) -> str:
    """Stable id of a CUPID row: a hash of its content (plus the occurrence of an exact repeat)."""
    base = f"inst_{content_hash(row, 20)}"
    return base if occurrence == 0 else f"{base}_{occurrence}"


def instance_rows(instances: list[BenchmarkInstance], start: int = 0) -> list[dict[str, Any]]:
    rows, seen = [], {}
    for i, inst in enumerate(instances):
        record = inst.model_dump(mode="json")
        key = content_hash(record, 20)
        seen[key] = seen.get(key, -1) + 1
        rows.append(
            {
                "instance_id": instance_id(record, seen[key]),
                "persona_id": inst.persona_id,
                "instance_type": inst.instance_type,
                "position": start + i,
                "record_json": canonical_json(record),
                "schema_version": BenchmarkInstance.SCHEMA_VERSION,
            }
        )
    return rows


def _session_id(persona_id: str, prior: PriorInteraction) -> str:
    return f"cupid_{content_hash([persona_id, prior.model_dump(mode='json')], 20)}"


def sessions_of(instances: list[BenchmarkInstance], rows: list[dict[str, Any]]) -> dict[str, list]:
    """The distinct prior sessions of imported CUPID rows, as store rows, so they can be verified.

    A session's checklist is the ``current_checklist`` of a row of the same persona whose gold
    preference is the session's preference (CUPID releases checklists only for gold preferences, so a
    contrastive partner's sessions have none and get no verification task). An instance depends on
    the priors that carry its gold preference or share its current context factor."""
    checklists = {(i.persona_id, i.current_contextual_preference): i.current_checklist for i in instances}
    out: dict[str, list] = {"dialogues": [], "turns": [], "sessions": [], "instance_sessions": []}
    seen: dict[str, int] = {}
    per_persona: dict[str, int] = {}
    for inst, row in zip(instances, rows, strict=True):
        for pos, prior in enumerate(inst.prior_interactions):
            sid = _session_id(inst.persona_id, prior)
            if sid not in seen:
                per_persona[inst.persona_id] = seen[sid] = per_persona.get(inst.persona_id, 0) + 1
                _add_session(out, sid, inst.persona_id, seen[sid], prior, checklists)
            relevant = (
                prior.contextual_preference == inst.current_contextual_preference
                or prior.context_factor == inst.current_context_factor
            )
            out["instance_sessions"].append(
                {
                    "instance_id": row["instance_id"],
                    "position": pos,
                    "session_id": sid,
                    "role": "",
                    "relevant": relevant,
                }
            )
    return out


def _add_session(out, sid: str, persona_id: str, index: int, prior: PriorInteraction, checklists) -> None:
    checklist = checklists.get((persona_id, prior.contextual_preference), [])
    out["dialogues"].append(
        {
            "dialogue_id": sid,
            "origin": "cupid",
            "persona_id": persona_id,
            "session_index": index,
            "meta_json": canonical_json({"imported_from": "cupid"}),
            "needs_reverification": False,
            "schema_version": BenchmarkInstance.SCHEMA_VERSION,
        }
    )
    out["turns"] += [
        {"dialogue_id": sid, "turn_index": k, "role": m.role, "content": m.content, "extra_json": None}
        for k, m in enumerate(prior.dialogue)
    ]
    record = {
        "session_id": sid,
        "persona_id": persona_id,
        "index": index,
        "context_factor": {"name": prior.context_factor},
        "preference": {"text": prior.contextual_preference},
        "checklist": [{"question": q} for q in checklist],
    }
    out["sessions"].append(
        {
            "session_id": sid,
            "persona_id": persona_id,
            "session_index": index,
            "record_json": canonical_json(record),
            "schema_version": BenchmarkInstance.SCHEMA_VERSION,
        }
    )


def build_bundle(path: Path, licence: str | None = None) -> ImportBundle:
    path = Path(path)
    instances = [validate_row(BenchmarkInstance, value, f"{path}:{n}") for n, value in iter_rows(path)]
    if not instances:
        raise no_records(path)
    rows = instance_rows(instances)
    return ImportBundle(
        kind="cupid",
        path=str(path),
        sha256=sha256_file(path),
        rows=len(instances),
        licence=licence,
        provenance=Provenance(source="import.cupid", licence=licence),
        instances=rows,
        **sessions_of(instances, rows),
    )
