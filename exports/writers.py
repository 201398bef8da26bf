"""Byte-stable writers shared by every export and release.

JSONL: one canonical JSON object per line (sorted keys, UTF-8, ``\\n``), so the same rows give the same
bytes. Files are written to a temporary name and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def jsonl_bytes(rows: Iterable[dict[str, Any]], sort_keys: bool = True) -> bytes:
    return "".join(
        json.dumps(r, ensure_ascii=False, sort_keys=sort_keys, separators=(",", ":")) + "\n" for r in rows
    ).encode("utf-8")


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]], sort_keys: bool = True) -> int:
    rows = list(rows)
    atomic_write_bytes(path, jsonl_bytes(rows, sort_keys))
    return len(rows)


def write_parquet(path: Path, rows: list[dict[str, Any]], schema=None) -> int:
    """Parquet with deterministic settings (no creation timestamp in the metadata that varies)."""
    # Lazy: pyarrow costs ~150 ms to import; the JSON writers here serve commands that write no Parquet.
    from pyarrow import Table, parquet

    table = Table.from_pylist(rows, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    parquet.write_table(table, tmp, compression="zstd", write_statistics=True, store_schema=False)
    os.replace(tmp, path)
    return len(rows)


def write_json(path: Path, value: Any) -> None:
    atomic_write_bytes(
        path, (json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode("utf-8")
    )
