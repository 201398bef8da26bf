"""What the store shares with the readers that must start without SQLAlchemy (``prefkit status``,
:mod:`prefkit.curation.store.glance`): the store's error type, what a database string is, the names it
keeps in its ``meta`` table and the newest migration, and the one folded form of searched text.
Imports nothing but the schemas' error base."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefkit.schemas.common import PrefkitError

#: The number of the newest migration in :mod:`prefkit.curation.store.migrations` (registering a
#: higher one without raising this is an error there): a database whose newest applied migration
#: is this one has every table the code reads.
LATEST_MIGRATION = 30
#: The meta key ``prefkit store migrate`` leaves in the old database: opening it afterwards is an error.
MOVED_TO = "store.moved_to"
#: ``meta`` keys of bulk imports still staging (their rows are hidden until published).
STAGING = "staging:"


class StoreError(PrefkitError):
    """A user-facing problem with the project store (one clear line)."""


def is_url(database: str | Path) -> bool:
    """A database URL (``postgresql://…``, ``sqlite:///…``) rather than a SQLite file path."""
    return "://" in str(database)


def folded(text: str) -> str:
    """``text`` as a search compares it, the same on every database: Unicode NFKC and case-folded in
    every script (``Été`` and ``ÉTÉ`` are ``été``; full-width letters are ASCII), accents kept."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def strings(value: Any) -> Iterator[str]:
    """Every string value in ``value`` (dict keys left out: they are field names, not text)."""
    if isinstance(value, str):
        yield value
    for v in value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else ():
        yield from strings(v)


def search_text(task_id: str, item_ref: str, payload: Any) -> str:
    """What a search of an annotator's items looks in (``tasks.search_text``): the task's id,
    reference and every text of its payload, one a line, :func:`folded`."""
    return folded("\n".join((task_id, item_ref, *strings(payload))))
