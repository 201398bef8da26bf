"""Base classes and shared helpers for every prefkit contract.

Everything a user, a file or an LLM hands to prefkit passes through a strict model defined on
top of :class:`Contract` (``extra="forbid"``), so bad input fails at the edge with a field name.
This module must never import from the rest of prefkit.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field


class PrefkitError(Exception):
    """Base of every user-facing error: the CLI prints its message as one line and exits non-zero."""


def utcnow() -> str:
    """An ISO-8601 UTC timestamp with microseconds and a ``Z`` suffix (sortable as text)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the form every hash and byte-stable file uses."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any, length: int = 16) -> str:
    """A short sha256 of the canonical JSON of ``value`` — used for stable ids."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]


class Contract(BaseModel):
    """A strict external contract: unknown fields are an error, every field is described."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    #: Version of this record type's shape. Stored beside every persisted record.
    SCHEMA_VERSION: ClassVar[str] = "1.0"


class Record(Contract):
    """A record type prefkit itself stores; carries its own ``schema_version`` field."""

    schema_version: str = Field(default="1.0", description="Version of this record type's shape.")
