"""Export benchmark instances in the exact CUPID row format (JSONL or Parquet)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from prefkit.curation.quality.verification import instance_verification, session_statuses
from prefkit.exports.writers import write_jsonl, write_parquet
from prefkit.schemas.common import InputError
from prefkit.schemas.cupid import BenchmarkInstance

if TYPE_CHECKING:
    from prefkit.curation.project import ProjectStore
    from prefkit.curation.store.content import InstanceLink

CUPID_COLUMNS = (
    "persona_id",
    "instance_type",
    "current_request",
    "current_context_factor",
    "current_contextual_preference",
    "current_checklist",
    "prior_interactions",
)


def cupid_arrow_schema():
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    prior = pa.struct(
        [
            ("context_factor", pa.string()),
            ("contextual_preference", pa.string()),
            ("dialogue", pa.list_(message)),
        ]
    )
    return pa.schema(
        [
            ("persona_id", pa.string()),
            ("instance_type", pa.string()),
            ("current_request", pa.string()),
            ("current_context_factor", pa.string()),
            ("current_contextual_preference", pa.string()),
            ("current_checklist", pa.list_(pa.string())),
            ("prior_interactions", pa.list_(prior)),
        ]
    )


def rebuilt_instance(
    instance: BenchmarkInstance, links: list[InstanceLink], sessions: dict
) -> dict[str, Any]:
    """The instance as its sessions stand now: each linked prior interaction takes the session's
    current turns (rewrites applied); the preference and factor texts stay as the instance has them.
    Keys come back in CUPID's order at every level."""
    record = instance.model_dump(mode="json")
    priors = record["prior_interactions"]
    for link in links:
        session = sessions.get(link.session_id)
        if session is not None and link.position < len(priors):
            priors[link.position]["dialogue"] = [
                {"role": t.role, "content": t.content} for t in session.turns
            ]
    return BenchmarkInstance.model_validate({**record, "prior_interactions": priors}).model_dump(mode="json")


def cupid_rows(store: ProjectStore, verified_only: bool = False) -> list[dict[str, Any]]:
    """Instances as CUPID rows, rebuilt from their sessions as they stand now (rewrites applied);
    ``verified_only`` keeps the instances whose every relevant session is verified."""
    links = store.content.instance_links()
    sessions = {s.session_id: s for s in store.content.sessions()} if links else {}
    statuses = session_statuses(store) if verified_only else {}
    rows = []
    for inst in store.content.instances():
        mine = links.get(inst.instance_id, [])
        if verified_only and not instance_verification(mine, statuses)[0]:
            continue
        rows.append(rebuilt_instance(inst.record, mine, sessions))
    return rows


def export_cupid(store: ProjectStore, out: Path, verified_only: bool = False) -> int:
    rows = cupid_rows(store, verified_only)
    suffix = out.suffix.lower()
    if suffix == ".jsonl":
        return write_jsonl(out, rows, sort_keys=False)
    if suffix == ".parquet":
        return write_parquet(out, rows, schema=cupid_arrow_schema())
    raise InputError(f"{out}: unsupported output type {suffix!r}; use .jsonl or .parquet")
