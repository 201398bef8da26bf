"""Import CUPID benchmark rows (JSONL or Parquet in the exact CUPID release format)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curation.store_content import ImportBundle
from schemas.common import canonical_json, content_hash
from schemas.cupid import BenchmarkInstance
from schemas.curation import Provenance
from schemas.reading import iter_rows, no_records, sha256_file, validate_row


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


def build_bundle(path: Path, licence: str | None = None) -> ImportBundle:
    path = Path(path)
    instances = [validate_row(BenchmarkInstance, value, f"{path}:{n}") for n, value in iter_rows(path)]
    if not instances:
        raise no_records(path)
    return ImportBundle(
        kind="cupid",
        path=str(path),
        sha256=sha256_file(path),
        rows=len(instances),
        licence=licence,
        provenance=Provenance(source="import.cupid", licence=licence),
        instances=instance_rows(instances),
    )
