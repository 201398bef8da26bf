"""What the store shares with the readers that must start without SQLAlchemy (``prefkit status``,
:mod:`prefkit.curation.store.glance`): the store's error type, what a database string is, the names it
keeps in its ``meta`` table and the newest migration. Imports nothing but the schemas' error base."""

from __future__ import annotations

from pathlib import Path

from prefkit.schemas.common import PrefkitError

#: The number of the newest migration in :mod:`prefkit.curation.store.migrations` (registering a
#: higher one without raising this is an error there): a database whose newest applied migration
#: is this one has every table the code reads.
LATEST_MIGRATION = 29
#: The meta key ``prefkit store migrate`` leaves in the old database: opening it afterwards is an error.
MOVED_TO = "store.moved_to"
#: ``meta`` keys of bulk imports still staging (their rows are hidden until published).
STAGING = "staging:"


class StoreError(PrefkitError):
    """A user-facing problem with the project store (one clear line)."""


def is_url(database: str | Path) -> bool:
    """A database URL (``postgresql://…``, ``sqlite:///…``) rather than a SQLite file path."""
    return "://" in str(database)
