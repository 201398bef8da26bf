"""Import CUPID benchmark rows (JSONL or Parquet in the exact CUPID release format)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefkit.curation.store import CupidSession, DialogueTurn, ImportBundle, Instance, InstanceLink
from prefkit.schemas.common import content_hash, sha256_file
from prefkit.schemas.cupid import BenchmarkInstance, PriorInteraction
from prefkit.schemas.curation import Provenance
from prefkit.schemas.reading import iter_rows, no_records, validate_row


def instance_id(row: dict[str, Any], occurrence: int = 0) -> str:
    """Stable id of a CUPID row: a hash of its content (plus the occurrence of an exact repeat)."""
    base = f"inst_{content_hash(row, 20)}"
    return base if occurrence == 0 else f"{base}_{occurrence}"


def instance_records(instances: list[BenchmarkInstance]) -> list[Instance]:
    """The instances with their stable ids (an exact repeat gets the next occurrence number)."""
    out: list[Instance] = []
    seen: dict[str, int] = {}
    for inst in instances:
        record = inst.model_dump(mode="json")
        key = content_hash(record, 20)
        seen[key] = seen.get(key, -1) + 1
        out.append(Instance(instance_id(record, seen[key]), inst))
    return out


def _session_id(persona_id: str, prior: PriorInteraction) -> str:
    return f"cupid_{content_hash([persona_id, prior.model_dump(mode='json')], 20)}"


@dataclass
class CupidSessions:
    """The distinct prior sessions of imported CUPID rows and the links of each instance to them."""

    sessions: list[CupidSession]
    instance_links: dict[str, list[InstanceLink]]


def sessions_of(instances: list[Instance]) -> CupidSessions:
    """The distinct prior sessions of imported CUPID rows, so they can be verified.

    A session's checklist is the ``current_checklist`` of a row of the same persona whose gold
    preference is the session's preference (CUPID releases checklists only for gold preferences, so a
    contrastive partner's sessions have none and get no verification task). An instance depends on
    the priors that carry its gold preference or share its current context factor."""
    records = [x.record for x in instances]
    checklists = {(i.persona_id, i.current_contextual_preference): i.current_checklist for i in records}
    out = CupidSessions([], {})
    seen: dict[str, int] = {}
    per_persona: dict[str, int] = {}
    for x in instances:
        inst = x.record
        links = out.instance_links.setdefault(x.instance_id, [])
        for pos, prior in enumerate(inst.prior_interactions):
            sid = _session_id(inst.persona_id, prior)
            if sid not in seen:
                per_persona[inst.persona_id] = seen[sid] = per_persona.get(inst.persona_id, 0) + 1
                out.sessions.append(_session(sid, inst.persona_id, seen[sid], prior, checklists))
            relevant = (
                prior.contextual_preference == inst.current_contextual_preference
                or prior.context_factor == inst.current_context_factor
            )
            links.append(InstanceLink(pos, sid, "", relevant))
    return out


def _session(sid: str, persona_id: str, index: int, prior: PriorInteraction, checklists) -> CupidSession:
    return CupidSession(
        session_id=sid,
        persona_id=persona_id,
        index=index,
        factor_name=prior.context_factor,
        preference_text=prior.contextual_preference,
        questions=list(checklists.get((persona_id, prior.contextual_preference), [])),
        turns=[DialogueTurn(k, m.role, m.content) for k, m in enumerate(prior.dialogue)],
    )


def build_bundle(path: Path, licence: str | None = None) -> ImportBundle:
    path = Path(path)
    records = [validate_row(BenchmarkInstance, value, f"{path}:{n}") for n, value in iter_rows(path)]
    if not records:
        raise no_records(path)
    instances = instance_records(records)
    found = sessions_of(instances)
    return ImportBundle(
        kind="cupid",
        path=str(path),
        sha256=sha256_file(path),
        rows=len(records),
        licence=licence,
        provenance=Provenance(source="import.cupid", licence=licence),
        instances=instances,
        sessions=found.sessions,
        instance_links=found.instance_links,
    )
