"""Reading untrusted input files: JSON Lines, JSON, Parquet.

Every problem becomes one :class:`InputError` naming the file, the line (or packet) and the field, and
nothing is written: readers return fully parsed data before any store write starts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from schemas.common import PrefkitError

#: Refuse single files larger than this (bytes) unless the caller raises the limit.
MAX_FILE_BYTES = 2 * 1024**3
#: Refuse single JSONL lines larger than this (bytes): a line this long is almost always a broken file.
MAX_LINE_BYTES = 64 * 1024**2


class InputError(PrefkitError):
    """Bad input: the message names file, line/packet and field."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_size(path: Path, limit: int | None = None) -> None:
    limit = limit or MAX_FILE_BYTES
    if not path.exists():
        raise InputError(f"{path}: no such file")
    size = path.stat().st_size
    if size > limit:
        raise InputError(f"{path}: file is {size:,} bytes, over the {limit:,}-byte limit")


def validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "<record>"
    more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
    return f"field {where}: {first['msg']}{more}"


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line; errors name file and line."""
    check_size(path)
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if len(raw) > MAX_LINE_BYTES:  # read at call time so a caller can lower it
                raise InputError(
                    f"{path}:{lineno}: line is {len(raw):,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{path}:{lineno}: not valid UTF-8 (byte {exc.start}: {raw[exc.start : exc.start + 1]!r})"
                ) from None
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{path}:{lineno}: malformed JSON at column {exc.colno}: {exc.msg}"
                ) from None


def read_json(path: Path) -> Any:
    check_size(path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not valid UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: malformed JSON at column {exc.colno}: {exc.msg}") from None


def iter_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """Rows of a JSONL or Parquet file as ``(row_number, dict)``; row numbers are 1-based lines."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        check_size(path)
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a broken file
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
        yield from enumerate(table.to_pylist(), start=1)
    elif suffix in (".jsonl", ".ndjson", ".json"):
        yield from iter_jsonl(path)
    else:
        raise InputError(f"{path}: unsupported file type {suffix!r}; use .jsonl or .parquet")


def validate_row(model: type[BaseModel], value: Any, where: str) -> BaseModel:
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise InputError(f"{where}: {validation_message(exc)}") from None
