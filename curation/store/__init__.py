"""The project's working database: engine and transactions, migrations, one module per area.

Every SQL statement against the project store lives in this package (DuckDB queries over *files*, as
ingestion and the release writers run them, are not the store's and stay where they are); nothing here
decides annotation policy or computes statistics (that is :mod:`prefkit.curation.annotation` and
:mod:`prefkit.curation.quality`).

This module is the store's one face: other layers import the store, its records and its errors from
here (``from prefkit.curation.store import ProjectStore, StoreError``), never from a submodule (an
import contract in pyproject.toml says so). A name is imported from its module on first use (PEP 562),
so importing this package loads neither SQLAlchemy nor any area: ``prefkit status`` reads
:func:`glance_counts` without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same names as EXPORTS, for the type checker
    from prefkit.curation.store.accounts import EXPIRED, ROLES, Account
    from prefkit.curation.store.alps_tasks import AlpsTask
    from prefkit.curation.store.assignments import OpenItem
    from prefkit.curation.store.backend import DatabaseUnavailable, has_password, parse_url, redact
    from prefkit.curation.store.common import LATEST_MIGRATION, MOVED_TO, STAGING, StoreError, folded, is_url
    from prefkit.curation.store.content_records import (
        CupidSession,
        Dialogue,
        DialogueTurn,
        ImportBundle,
        Instance,
        InstanceLink,
        NewMemory,
        Packet,
        PreferencePair,
        ReverifyDialogue,
        StoredMemory,
        StoredSession,
    )
    from prefkit.curation.store.eval import EvalRun
    from prefkit.curation.store.glance import COUNTS, glance_counts
    from prefkit.curation.store.guidelines import GuidelinesVersion
    from prefkit.curation.store.items import ITEM_STATUSES, AnnotatorItem
    from prefkit.curation.store.labels import FlaggedLabel, SubmitTime, Throughput
    from prefkit.curation.store.labelstudio import LSAnnotation, LSPushLease
    from prefkit.curation.store.llm import LedgerRow, LLMBatch, LLMCallRecord
    from prefkit.curation.store.migrate import migrate_store
    from prefkit.curation.store.progress import BatchCounts, KindCounts, ProgressRow
    from prefkit.curation.store.project_store import ProjectStore
    from prefkit.curation.store.releases import ReleaseRecord
    from prefkit.curation.store.repeats import RepeatRule, repeat_draw
    from prefkit.curation.store.roundtrips import RoundTrips
    from prefkit.curation.store.stale import IdleQueue, ReleasedAssignment
    from prefkit.curation.store.studies import NO_PASSWORD, Participant, Study, StudyFull
    from prefkit.curation.store.submits import AccountInactive, SessionEnded, StaleSubmit, TimeUp
    from prefkit.curation.store.suggestions import Suggestion, SuggestionRun
    from prefkit.curation.store.usernames import CROWD_PREFIX, MAX_NAME, normalize_username

#: Each module of the store and the names other layers import from it (tests/test_architecture.py
#: checks that the imports above name the same).
EXPORTS: dict[str, tuple[str, ...]] = {
    "accounts": ("EXPIRED", "ROLES", "Account"),
    "alps_tasks": ("AlpsTask",),
    "items": ("ITEM_STATUSES", "AnnotatorItem"),
    "assignments": ("OpenItem",),
    "suggestions": ("Suggestion", "SuggestionRun"),
    "backend": ("DatabaseUnavailable", "has_password", "parse_url", "redact"),
    "common": ("LATEST_MIGRATION", "MOVED_TO", "STAGING", "StoreError", "folded", "is_url"),
    "content_records": (
        *("CupidSession", "Dialogue", "DialogueTurn", "ImportBundle", "Instance", "InstanceLink"),
        *("NewMemory", "Packet", "PreferencePair", "ReverifyDialogue", "StoredMemory", "StoredSession"),
    ),
    "eval": ("EvalRun",),
    "glance": ("COUNTS", "glance_counts"),
    "guidelines": ("GuidelinesVersion",),
    "labels": ("FlaggedLabel", "SubmitTime", "Throughput"),
    "labelstudio": ("LSAnnotation", "LSPushLease"),
    "llm": ("LedgerRow", "LLMBatch", "LLMCallRecord"),
    "migrate": ("migrate_store",),
    "progress": ("BatchCounts", "KindCounts", "ProgressRow"),
    "project_store": ("ProjectStore",),
    "releases": ("ReleaseRecord",),
    "repeats": ("RepeatRule", "repeat_draw"),
    "roundtrips": ("RoundTrips",),
    "stale": ("IdleQueue", "ReleasedAssignment"),
    "studies": ("NO_PASSWORD", "Participant", "Study", "StudyFull"),
    "submits": ("AccountInactive", "SessionEnded", "StaleSubmit", "TimeUp"),
    "usernames": ("CROWD_PREFIX", "MAX_NAME", "normalize_username"),
}
_MODULE_OF = {name: module for module, names in EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use (and kept, so the next use is a lookup)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
