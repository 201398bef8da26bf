"""Export benchmark instances in the exact CUPID row format: JSONL or Parquet, or one JSON file per
instance (the ``--data_dir`` layout of CUPID's evaluator)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from prefkit.curation.quality.verification import SessionVerification, instance_verification, session_statuses
from prefkit.exports.writers import atomic_write_bytes, write_jsonl, write_parquet
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


@dataclass(frozen=True)
class CupidInstanceRow:
    """One instance as a CUPID row rebuilt from its sessions as they stand now, or (``row`` None) why
    verification left it out."""

    instance_id: str
    row: dict[str, Any] | None
    dropped: str | None = None


def instance_rows(
    store: ProjectStore, verified_only: bool = False, statuses: dict[str, SessionVerification] | None = None
) -> Iterator[CupidInstanceRow]:
    """Every instance, in the store's order, rebuilt from its sessions (rewrites applied); with
    ``verified_only`` an instance whose relevant sessions are not all verified comes without its row,
    with the reason. The one builder of verified CUPID rows: ``prefkit export cupid --verified`` and the
    release's ``cupid`` config both read it (``statuses``: :func:`session_statuses`, when at hand)."""
    links = store.content.instance_links()
    sessions = {s.session_id: s for s in store.content.sessions()} if links else {}
    if verified_only and statuses is None:
        statuses = session_statuses(store)
    for inst in store.content.instances():
        mine = links.get(inst.instance_id, [])
        if verified_only and statuses is not None:
            ok, why = instance_verification(mine, statuses)
            if not ok:
                yield CupidInstanceRow(inst.instance_id, None, why)
                continue
        yield CupidInstanceRow(inst.instance_id, rebuilt_instance(inst.record, mine, sessions))


def cupid_rows(store: ProjectStore, verified_only: bool = False) -> list[dict[str, Any]]:
    """Instances as CUPID rows, rebuilt from their sessions as they stand now (rewrites applied);
    ``verified_only`` keeps the instances whose every relevant session is verified."""
    return [r.row for r in instance_rows(store, verified_only) if r.row is not None]


def export_cupid(store: ProjectStore, out: Path, verified_only: bool = False) -> int:
    rows = cupid_rows(store, verified_only)
    suffix = out.suffix.lower()
    if suffix == ".jsonl":
        return write_jsonl(out, rows, sort_keys=False)
    if suffix == ".parquet":
        return write_parquet(out, rows, schema=cupid_arrow_schema())
    raise InputError(f"{out}: unsupported output type {suffix!r}; use .jsonl or .parquet")


#: Characters a per-instance file name keeps. CUPID's evaluator names an instance by the part of its
#: file name before the first ".", and its results file by that name: nothing else may be in it.
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


def instance_file_names(keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """A unique ``<persona>__<instance_type>.json`` per (persona_id, instance_type): the three instances
    of a persona share its id, which CUPID's evaluator would use as one result file name. A persona id
    with other characters than letters, digits, ``_`` and ``-`` is cleaned and given a short hash of the
    original, so two ids that clean to the same text never share a file."""
    out: dict[tuple[str, str], str] = {}
    for pid, itype in keys:
        stem = _SAFE.sub("_", pid).strip("_") or "persona"
        if stem != pid:
            stem = f"{stem}_{hashlib.sha256(pid.encode()).hexdigest()[:8]}"
        out[(pid, itype)] = f"{stem}__{itype}.json"
    if len(set(out.values())) != len(out):  # the same (persona, type) twice
        seen: dict[str, tuple[str, str]] = {}
        for key, name in out.items():
            if name in seen:
                raise InputError(f"instances {seen[name]} and {key} would share the file {name}")
            seen[name] = key
    return out


def export_per_instance(store: ProjectStore, out_dir: Path, verified_only: bool = False) -> dict[str, dict]:
    """One JSON file per instance in ``out_dir`` (the layout CUPID's ``evaluation/run.py --data_dir``
    reads: every file in the folder is an instance); returns ``{file name: row}``. The folder must be
    new or empty, since the evaluator would read any other file in it as an instance."""
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise InputError(f"{out_dir}: not empty; CUPID's evaluator reads every file in it as an instance")
    rows = cupid_rows(store, verified_only)
    names = instance_file_names([(r["persona_id"], r["instance_type"]) for r in rows])
    written: dict[str, dict] = {}
    for row in rows:
        name = names[(row["persona_id"], row["instance_type"])]
        text = json.dumps(row, ensure_ascii=False, indent=2) + "\n"
        atomic_write_bytes(out_dir / name, text.encode("utf-8"))
        written[name] = row
    return written
