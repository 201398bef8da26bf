"""Base classes and shared helpers for every prefkit contract.

Everything a user, a file or an LLM hands to prefkit passes through a strict model defined on
top of :class:`Contract` (``extra="forbid"``), so bad input fails at the edge with a field name.
This module must never import from the rest of prefkit.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError


class PrefkitError(Exception):
    """Base of every user-facing error: the CLI prints its message as one line and exits non-zero."""


class InputError(PrefkitError):
    """Bad input: the message names file, line/packet and field."""


#: The longest id an imported record may carry (a CUPID persona id, an AlpsBench session id): ids
#: are keys, shown in the app and put in file names, not text; 128 characters is far more than the
#: datasets use and keeps an exported name short.
MAX_ID = 128
#: Unicode categories no id may hold: controls, format characters (the bidi overrides U+202A-U+202E
#: and isolates U+2066-U+2069, zero-width characters, BOM), surrogates, private-use and unassigned
#: code points, line and paragraph separators.
_ID_REFUSED = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def check_id(value: str, what: str = "an id") -> str:
    """``value`` if it is a strict record id, else ValueError saying why: 1 to :data:`MAX_ID`
    characters, no control, format (bidi override, zero-width), private-use, unassigned or separator
    character, no space but U+0020, none at either end. The rule user names follow
    (:mod:`prefkit.curation.store.usernames`) in a form that keeps the ids datasets already use."""
    if not value:
        raise ValueError(f"{what} cannot be empty")
    if len(value) > MAX_ID:
        raise ValueError(f"{what} has at most {MAX_ID} characters (this one has {len(value)})")
    for ch in value:
        category = unicodedata.category(ch)
        if category in _ID_REFUSED or (category == "Zs" and ch != " "):
            raise ValueError(f"{what} cannot hold U+{ord(ch):04X} ({unicodedata.name(ch, category)})")
    if value != value.strip():
        raise ValueError(f"{what} cannot start or end with a space")
    return value


#: A record's id field: a string :func:`check_id` accepts.
RecordId = Annotated[str, AfterValidator(check_id)]


#: errno values of a full disk, a file past the size limit (``ulimit -f``) or an exhausted quota.
DISK_FULL_ERRNOS = (28, 27, 122)  # ENOSPC, EFBIG, EDQUOT (Linux)
#: How the database engines say it without an errno (SQLite: SQLITE_FULL; DuckDB: its IOException).
DISK_FULL_TEXT = (
    "database or disk is full",
    "no space left on device",
    "file too large",
    "disk quota exceeded",
    "disk i/o error",  # SQLite's word for a write the kernel refused at commit (WAL past the limit)
)


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it wraps) is a full disk, a file-size limit or a quota."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS:
            return True
        if any(t in str(e).lower() for t in DISK_FULL_TEXT):
            return True
        todo += [e.__cause__, e.__context__, getattr(e, "orig", None)]
    return False


def _one_line(text: str) -> str:
    # A field name comes from the input: a key holding a line break must not split the error line.
    return text if text.isprintable() else repr(text)[1:-1]


def validation_problems(exc: ValidationError, root: str = "<record>") -> list[str]:
    """Every problem of a pydantic error as ``'field.path: message'`` (``root`` when the path is empty)."""
    return [
        f"{'.'.join(_one_line(str(p)) for p in e.get('loc', ())) or root}: {_one_line(str(e.get('msg')))}"
        for e in exc.errors()
    ]


def validation_line(exc: ValidationError, root: str = "<record>", limit: int = 1) -> str:
    """A pydantic error as one line: the first ``limit`` problems, then how many more there are."""
    problems = validation_problems(exc, root)
    more = len(problems) - limit
    return "; ".join(problems[:limit]) + (f"; and {more} more" if more > 0 else "")


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


UTC_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utcnow() -> str:
    """An ISO-8601 UTC timestamp with microseconds and a ``Z`` suffix (sortable as text)."""
    return datetime.now(UTC).strftime(UTC_FORMAT)


def parse_utc(stamp: str) -> datetime:
    """The aware datetime of a :func:`utcnow` timestamp."""
    return datetime.strptime(stamp, UTC_FORMAT).replace(tzinfo=UTC)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the form every hash and byte-stable file uses."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any, length: int = 16) -> str:
    """A short sha256 of the canonical JSON of ``value`` — used for stable ids."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]


class Contract(BaseModel):
    """A strict external contract: unknown fields are an error, every field is described."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    #: Version of this record type's shape. Stored beside every persisted record.
    SCHEMA_VERSION: ClassVar[str] = "1.0"


class Record(Contract):
    """A record type prefkit itself stores; carries its own ``schema_version`` field."""

    schema_version: str = Field(default="1.0", description="Version of this record type's shape.")
