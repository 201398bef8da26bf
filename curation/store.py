"""The project store: the one class that owns a project's working database.

A project is a directory (``prefkit.toml`` + ``project.db`` + guidelines + releases). The database is
SQLite in WAL mode by default, so the app, the CLI and a pipeline can use one project at once from
different processes; the SQL is SQLAlchemy Core so a PostgreSQL URL in the config is all another
backend needs. Nothing outside :class:`ProjectStore` (and its area mixins in ``curation/store_*.py``)
writes SQL against the live store.

Write transactions are short and start with ``BEGIN IMMEDIATE`` on SQLite, so concurrent writers queue
on the busy timeout instead of failing on a lock upgrade; reads never block writers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, MetaData, Table, create_engine, event, func, select, text

from curation.migrations import MIGRATIONS
from schemas.common import PrefkitError, canonical_json, content_hash, utcnow
from schemas.curation import Provenance

BUSY_TIMEOUT_MS = 30_000


class StoreError(PrefkitError):
    """A user-facing problem with the project store (one clear line)."""


def _sqlite_engine(path: Path) -> Engine:
    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        pool_size=8,
        max_overflow=24,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # pragma: no cover - exercised via every test
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection):  # pragma: no cover - exercised via every test
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("write") else "BEGIN")

    return engine


def make_engine(url_or_path: str | Path) -> Engine:
    """An engine for a SQLite file path or any SQLAlchemy URL (e.g. ``postgresql+psycopg://...``)."""
    text_url = str(url_or_path)
    if "://" not in text_url:
        return _sqlite_engine(Path(text_url))
    if text_url.startswith("sqlite:///"):
        return _sqlite_engine(Path(text_url.removeprefix("sqlite:///")))
    return create_engine(text_url, pool_pre_ping=True)


class StoreCore:
    """Connection handling, migrations and small shared helpers."""

    def __init__(self, db: str | Path):
        self.db = db
        self.engine = make_engine(db)
        self.migrate()
        self._md = MetaData()
        self._md.reflect(self.engine)
        self.t: dict[str, Table] = dict(self._md.tables)

    # -- transactions -----------------------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One short write transaction; everything inside commits together or not at all."""
        with self.engine.connect() as conn:
            conn.info["write"] = True
            with conn.begin():
                yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A consistent read snapshot."""
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def close(self) -> None:
        self.engine.dispose()

    # -- migrations -------------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply every migration not applied yet; returns the names applied now."""
        applied_now: list[str] = []
        with self.engine.connect() as conn:
            conn.info["write"] = True
            with conn.begin():
                conn.execute(
                    text(
                        "CREATE TABLE IF NOT EXISTS _migrations (number INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)"
                    )
                )
                done = {row[0] for row in conn.execute(text("SELECT number FROM _migrations"))}
                for number, name, fn in MIGRATIONS:
                    if number in done:
                        continue
                    fn(conn)
                    conn.execute(
                        text("INSERT INTO _migrations (number, name, applied_at) VALUES (:n, :m, :t)"),
                        {"n": number, "m": name, "t": utcnow()},
                    )
                    applied_now.append(f"m{number:03d}_{name}")
        return applied_now

    def applied_migrations(self) -> list[str]:
        with self.read() as conn:
            rows = conn.execute(text("SELECT number, name FROM _migrations ORDER BY number")).all()
        return [f"m{n:03d}_{name}" for n, name in rows]

    # -- helpers ----------------------------------------------------------------------------------
    @staticmethod
    def dumps(value: Any) -> str | None:
        return None if value is None else canonical_json(value)

    @staticmethod
    def loads(value: str | None) -> Any:
        return None if value is None else json.loads(value)

    def count(self, table: str, **where: Any) -> int:
        t = self.t[table]
        q = select(func.count()).select_from(t)
        for col, val in where.items():
            q = q.where(t.c[col] == val)
        with self.read() as conn:
            return int(conn.execute(q).scalar_one())

    def provenance_row(self, prov: Provenance) -> dict[str, Any]:
        record = prov.model_dump(mode="json")
        return {
            "provenance_id": "prov_" + content_hash(record),
            "source": prov.source,
            "model": prov.model,
            "offline": prov.offline,
            "record_json": canonical_json(record),
        }

    def ensure_provenance(self, conn: Connection, prov: Provenance) -> str:
        """Insert ``prov`` if new (provenance rows are content-addressed); returns its id."""
        row = self.provenance_row(prov)
        t = self.t["provenance"]
        if (
            conn.execute(select(t.c.provenance_id).where(t.c.provenance_id == row["provenance_id"])).first()
            is None
        ):
            conn.execute(t.insert(), row)
        return row["provenance_id"]

    def insert_many(self, conn: Connection, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            conn.execute(self.t[table].insert(), list(rows))

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        t = self.t["meta"]
        with self.read() as conn:
            row = conn.execute(select(t.c.value).where(t.c.key == key)).first()
        return default if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        t = self.t["meta"]
        with self.write() as conn:
            conn.execute(t.delete().where(t.c.key == key))
            conn.execute(t.insert(), {"key": key, "value": value})
