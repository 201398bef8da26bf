"""The process environment prefkit reads, read in one place into one typed record.

:meth:`Environment.read` is the only code of the library that reads ``os.environ``: the entry points
(``Project``, the LLM layer, the CLI and the app) read it once and hand the values down, so a library
module takes what it needs as an argument. A variable that is set but empty counts as unset; a value
that is not what its variable needs is one :class:`EnvironmentValueError` line naming the variable. Secrets
(a database URL with its password, API keys) never appear in the record's ``repr``. This module must
never import the rest of prefkit outside ``schemas``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from prefkit.schemas.common import PrefkitError

PROJECT = "PREFKIT_PROJECT"
DATABASE_URL = "PREFKIT_DATABASE_URL"
TMPDIR = "PREFKIT_TMPDIR"
DB_RETRY_S = "PREFKIT_DB_RETRY_S"
DB_MIGRATION_WAIT_S = "PREFKIT_DB_MIGRATION_WAIT_S"
OPENAI_BASE_URL = "OPENAI_BASE_URL"
OPENAI_API_KEY = "OPENAI_API_KEY"
LABEL_STUDIO_URL = "LABEL_STUDIO_URL"
LABEL_STUDIO_API_KEY = "LABEL_STUDIO_API_KEY"


class EnvironmentValueError(PrefkitError):
    """An environment variable holds a value prefkit cannot use."""


@dataclass(frozen=True)
class Environment:
    """What prefkit takes from the environment (``None``: unset or empty)."""

    project: str | None = None  # PREFKIT_PROJECT: the project when no --project is given
    database_url: str | None = field(default=None, repr=False)  # PREFKIT_DATABASE_URL (may hold a password)
    tmpdir: str | None = None  # PREFKIT_TMPDIR: where DuckDB spills during an ingest
    db_retry_s: float | None = None  # PREFKIT_DB_RETRY_S: how long the store retries a lost database
    db_migration_wait_s: int | None = None  # PREFKIT_DB_MIGRATION_WAIT_S: wait for another migration
    openai_base_url: str | None = None  # OPENAI_BASE_URL: the endpoint when [llm] base_url is empty
    label_studio_url: str | None = None  # LABEL_STUDIO_URL
    label_studio_api_key: str | None = field(default=None, repr=False)  # LABEL_STUDIO_API_KEY
    #: Every variable as read, for the key variable a config names (``[llm] api_key_env``); never shown.
    variables: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> Environment:
        """The record of ``environ`` (default: this process's environment)."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            return env.get(name) or None

        return cls(
            project=get(PROJECT),
            database_url=get(DATABASE_URL),
            tmpdir=get(TMPDIR),
            db_retry_s=_seconds(DB_RETRY_S, get(DB_RETRY_S)),
            db_migration_wait_s=_whole_seconds(DB_MIGRATION_WAIT_S, get(DB_MIGRATION_WAIT_S)),
            openai_base_url=get(OPENAI_BASE_URL),
            label_studio_url=get(LABEL_STUDIO_URL),
            label_studio_api_key=get(LABEL_STUDIO_API_KEY),
            variables=dict(env),
        )

    def secret(self, name: str) -> str | None:
        """The value of the key variable ``name`` (e.g. ``OPENAI_API_KEY``), or ``None`` when unset."""
        return self.variables.get(name) or None


def _seconds(name: str, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise EnvironmentValueError(f"${name} must be a number of seconds >= 0, not {value!r}")
    return seconds


def _whole_seconds(name: str, value: str | None) -> int | None:
    if value is None:
        return None
    if not value.strip().isdigit():
        raise EnvironmentValueError(f"${name} must be a whole number of seconds, not {value!r}")
    return int(value)
