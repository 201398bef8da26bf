"""Export benchmark instances in the exact CUPID row format (JSONL or Parquet)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from exports.writers import write_jsonl, write_parquet
from schemas.cupid import BenchmarkInstance
from schemas.reading import InputError

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
    import pyarrow as pa

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


def cupid_rows(store) -> list[dict[str, Any]]:
    """Instances as CUPID rows, keys in CUPID's order at every level (the store keeps sorted JSON)."""
    return [
        BenchmarkInstance.model_validate(inst["record"]).model_dump(mode="json") for inst in store.instances()
    ]


def export_cupid(store, out: Path) -> int:
    rows = cupid_rows(store)
    suffix = out.suffix.lower()
    if suffix == ".jsonl":
        return write_jsonl(out, rows, sort_keys=False)
    if suffix == ".parquet":
        return write_parquet(out, rows, schema=cupid_arrow_schema())
    raise InputError(f"{out}: unsupported output type {suffix!r}; use .jsonl or .parquet")
