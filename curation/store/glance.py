"""What ``prefkit status`` counts, and the quick way to count it in a SQLite project.

:data:`COUNTS` is the one list of what the status counts; :meth:`ProjectStore.status` counts it through
the store. :func:`glance` counts the same through the standard library's ``sqlite3`` instead, so the
command starts without SQLAlchemy (bench/bench_startup.py), and only where that gives the store's
answer: a SQLite file that exists, whose newest migration is this code's and which has no bulk import
staging and was not moved away. Anything else (PostgreSQL, a database to migrate or create, an import
under way, any error) returns ``None``: the caller asks the store, which migrates, hides staged rows,
retries and says what is wrong. It only reads (the file is opened read-write so a WAL database can be
read, never created), in one transaction, so the counts are of one moment.

This module imports no SQLAlchemy (the import contracts in pyproject.toml keep it so).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from prefkit.curation.store.common import LATEST_MIGRATION, MOVED_TO, STAGING, is_url

#: ``prefkit status`` in order: the name it prints, the table, and a column value the rows must have.
#: Turns also count those held in packs (bulk-imported dialogues not rewritten yet).
COUNTS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("personas", "personas", {}),
    ("context_factors", "context_factors", {}),
    ("sessions", "sessions", {}),
    ("dialogues", "dialogues", {}),
    ("turns", "turns", {}),
    ("turn_revisions", "turn_revisions", {}),
    ("instances", "instances", {}),
    ("packets", "packets", {}),
    ("memories_gold", "memories", {"origin": "gold"}),
    ("memories_candidate", "memories", {"origin": "candidate"}),
    ("preference_pairs", "preference_pairs", {}),
    ("failures", "failures", {}),
    ("users", "users", {}),
    ("tasks", "tasks", {}),
    ("label_events", "label_events", {}),
    ("adjudications", "adjudications", {}),
)
#: How long a read waits for a writer's lock (a WAL reader normally never waits).
BUSY_TIMEOUT_S = 5.0


def glance_counts(database: str) -> dict[str, int] | None:
    """:data:`COUNTS` of the SQLite file ``database``, exactly as the store would count them, or
    ``None`` when only the store can answer (see the module)."""
    if is_url(database) or not Path(database).is_file():
        return None
    uri = f"file:{quote(str(Path(database).resolve()))}?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute("BEGIN")  # one snapshot for every count
        if not _current(conn):
            return None
        counts = {name: _count(conn, table, where) for name, table, where in COUNTS}
        counts["turns"] += conn.execute("SELECT coalesce(sum(n_turns), 0) FROM turn_packs").fetchone()[0]
        return counts
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _current(conn: sqlite3.Connection) -> bool:
    """At this code's newest migration, not moved away, no bulk import staging."""
    (latest,) = conn.execute("SELECT max(number) FROM _migrations").fetchone()
    if latest != LATEST_MIGRATION:
        return False
    staged_or_moved = conn.execute(
        "SELECT 1 FROM meta WHERE key = ? OR substr(key, 1, ?) = ? LIMIT 1",
        (MOVED_TO, len(STAGING), STAGING),
    ).fetchone()
    return staged_or_moved is None


def _count(conn: sqlite3.Connection, table: str, where: dict[str, str]) -> int:
    clause = " AND ".join(f'"{column}" = ?' for column in where)
    sql = f'SELECT count(*) FROM "{table}"' + (f" WHERE {clause}" if clause else "")
    return int(conn.execute(sql, tuple(where.values())).fetchone()[0])
