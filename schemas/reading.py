"""The one reading layer for untrusted input files: JSON, JSON Lines, CSV, Parquet.

Every file the CLI accepts is read here, so every importer gets the same rules (UTF-8 only, strict
JSON, nesting at most :data:`MAX_DEPTH`, an input without records is an error, every problem one
:class:`InputError` line naming file, line and field; docs/bad_input.md) and validates everything
before the first store write, so a bad input writes nothing.

How an importer uses it::

    from prefkit.schemas.common import InputError
    from prefkit.schemas.reading import check_unique, read_jsonl, validate_row

    lines = read_jsonl(path)                                  # [(line_number, value)], never empty
    rows = [(n, validate_row(MyContract, v, f"{path}:{n}")) for n, v in lines]
    check_unique(((n, r.row_id) for n, r in rows), path, "row_id")   # a repeated id names both lines

``read_json`` reads one JSON document (a packet), ``iter_rows`` JSONL or Parquet rows, ``read_text``
decodes a text file (CSV) with the same UTF-8 rule, and ``parse_timestamp`` is the one rule for times.
It imports nothing of prefkit outside `schemas` (so `curation/` can use it too) and never writes anything.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from prefkit.schemas.common import InputError, validation_line
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

#: Refuse single files larger than this (bytes) unless the caller raises the limit.
MAX_FILE_BYTES = 2 * 1024**3
#: Refuse single JSONL lines larger than this (bytes): a line this long is almost always a broken file.
MAX_LINE_BYTES = 64 * 1024**2
#: Deepest nesting of objects and arrays accepted in one record (AlpsBench packets need about 6).
MAX_DEPTH = 64


def within(directory: Path, files: Iterable[Path], follow_symlinks: bool = False) -> None:
    """Refuse a file found under ``directory`` that is a symbolic link (or lies under one) leading out
    of it, unless ``follow_symlinks``: an ingest reads what the operator pointed it at, not what a link
    inside reaches (``/etc/passwd``). A file named on the command line is read wherever it is."""
    if follow_symlinks:
        return
    top = Path(directory).resolve()
    for f in files:
        if not f.resolve().is_relative_to(top):
            raise InputError(
                f"{f}: a symbolic link to {f.resolve()}, outside {directory}; pass --follow-symlinks to read it"
            )


def check_size(path: Path, limit: int | None = None) -> None:
    limit = limit or MAX_FILE_BYTES
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > limit:
        raise InputError(f"{path}: file is {size:,} bytes, over the {limit:,}-byte limit")


def printable(text: str) -> str:
    """``text`` as is when printable, else its repr: an error message stays one line whatever the input."""
    return text if text.isprintable() else repr(text)


# -- strict JSON -----------------------------------------------------------------------------------------
class _NonFinite:
    """Stands in for NaN/Infinity while parsing, so the field holding it can be named."""

    def __init__(self, text: str):
        self.text = text


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _check_tree(value: Any, where: str) -> None:
    """Walk without recursion: refuse nesting past MAX_DEPTH and NaN/Infinity, naming the field."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _NonFinite):
            field = printable(".".join(map(str, path))) or "<record>"
            raise InputError(
                f"{where}: field {field}: {node.text} is not a JSON number (NaN/Infinity refused)"
            )
        if isinstance(node, dict | list):
            if len(path) >= MAX_DEPTH:
                field = printable(".".join(map(str, path[:3]))) + ".…"
                raise InputError(f"{where}: field {field}: nested deeper than {MAX_DEPTH} levels")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((child, (*path, key)) for key, child in items)


def loads(text: str, where: str, multiline: bool = False) -> Any:
    """Parse one JSON document strictly; ``where`` (``file:line``, or ``file`` with ``multiline``, when
    the error adds the line) starts every error message."""
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_NonFinite, parse_float=_float)
    except json.JSONDecodeError as exc:
        at = f"{where}:{exc.lineno}" if multiline else where
        raise InputError(f"{at}: malformed JSON at column {exc.colno}: {exc.msg}") from None
    except _DuplicateKey as exc:
        raise InputError(f"{where}: field {printable(exc.key)}: key appears twice in one object") from None
    except RecursionError:
        raise InputError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4,300 by default)
        raise InputError(f"{where}: a number too long to read ({str(exc).split(';')[0]})") from None
    _check_tree(value, where)
    return value


def _decode(raw: bytes, path: Path, lineno: int | None = None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lineno if lineno is not None else raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1)
        byte = raw[exc.start : exc.start + 1]
        raise InputError(f"{path}:{line}: not valid UTF-8 (byte {byte!r} at column {col + 1})") from None


def read_text(path: Path) -> str:
    """A whole text file as UTF-8 (BOM allowed); errors name the line of the first bad byte."""
    check_size(path)
    raw = path.read_bytes()
    return _decode(raw.removeprefix(b"\xef\xbb\xbf"), path)


def no_records(path: Path) -> InputError:
    """The one rule for empty inputs, shared by every import."""
    return InputError(f"{path}: no records (the file is empty or holds only blank lines)")


# -- files -----------------------------------------------------------------------------------------------
def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line; errors name file and line."""
    check_size(path)
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if len(raw) > MAX_LINE_BYTES:  # read at call time so a caller can lower it
                raise InputError(
                    f"{path}:{lineno}: line is {len(raw):,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"
                )
            if lineno == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            line = _decode(raw, path, lineno)
            if line.strip():
                yield lineno, loads(line, f"{path}:{lineno}")


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """Every record of a JSONL file as ``(line_number, value)``; a file without records is an error."""
    path = Path(path)
    rows = list(iter_jsonl(path))
    if not rows:
        raise no_records(path)
    return rows


def read_json(path: Path) -> Any:
    """One JSON document (e.g. an AlpsBench packet); errors name file, line and field."""
    path = Path(path)
    text = read_text(path)
    if not text.strip():
        raise no_records(path)
    return loads(text, str(path), multiline=True)


def iter_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """Rows of a JSONL or Parquet file as ``(row_number, dict)``; row numbers are 1-based lines."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq  # lazy: ~150 ms to import, for Parquet input only

        check_size(path)
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a broken file
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
        for n, row in enumerate(table.to_pylist(), start=1):
            _check_tree(_mark_nonfinite(row), f"{path}:{n}")
            yield n, row
    elif suffix in (".jsonl", ".ndjson", ".json"):
        yield from iter_jsonl(path)
    else:
        raise InputError(f"{path}: unsupported file type {suffix!r}; use .jsonl or .parquet")


def _mark_nonfinite(value: Any) -> Any:
    """Parquet floats may hold NaN/Infinity: mark them so :func:`_check_tree` names the field."""
    if isinstance(value, float) and not math.isfinite(value):
        return _NonFinite(str(value))
    if isinstance(value, dict):
        return {k: _mark_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark_nonfinite(v) for v in value]
    return value


# -- records ---------------------------------------------------------------------------------------------
def validate_row(model: type[M], value: Any, where: str) -> M:
    """``value`` as ``model``, or one InputError naming ``where`` and the first bad field."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise InputError(f"{where}: field {validation_line(exc)}") from None


def check_unique(keyed: Iterable[tuple[int, Any]], path: Path, field: str) -> None:
    """Refuse a repeated key: ``keyed`` yields ``(line_number, key)``; the error names both lines."""
    seen: dict[Any, int] = {}
    for line, key in keyed:
        if key in seen:
            raise InputError(f"{path}:{line}: field {field}: {key!r} repeats line {seen[key]}")
        seen[key] = line


def parse_timestamp(value: Any, where: str, field: str = "timestamp") -> str:
    """The one rule for times in input files: ISO-8601 with a date, a time and a UTC offset (``Z`` or
    ``+02:00``). A date alone or a time without offset is refused (it does not say when). Returns the
    time normalised to UTC in prefkit's form ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, so times sort as text."""
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}: field {field}: required, an ISO-8601 time such as 2026-01-31T09:30:00Z")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"{where}: field {field}: not an ISO-8601 time: {value!r}") from None
    if "T" not in value.upper() and " " not in value.strip():
        raise InputError(
            f"{where}: field {field}: {value!r} is a date without a time; give e.g. {value}T00:00:00Z"
        )
    if parsed.tzinfo is None:
        raise InputError(f"{where}: field {field}: {value!r} has no UTC offset; add Z or +HH:MM")
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def read_project_text(root: Path, rel: str) -> str | None:
    """The text of the project's file ``rel`` (guidelines; None: there is none); one line when it
    resolves outside the project (``..``, an absolute path, a link) or is no regular UTF-8 file (a
    folder, a FIFO, a dangling link, another encoding): nothing beside a project is ever shown."""
    path, inside = Path(root) / rel, Path(root).resolve()
    if not path.exists() and not path.is_symlink():
        return None
    if not path.resolve().is_relative_to(inside):
        raise InputError(f"{rel}: outside the project; only its own files are read")
    try:
        if not path.is_file():
            raise InputError(f"{rel}: not a regular file")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{rel}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})"
        ) from None
    except OSError as exc:
        raise InputError(f"{rel}: {exc.strerror}") from None
