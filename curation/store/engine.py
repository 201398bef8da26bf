"""The project store: the one class that owns a project's working database.

A project is a directory (``prefkit.toml`` + ``project.db`` + guidelines + releases). The database is
SQLite in WAL mode by default, so the app, the CLI and a pipeline can use one project at once from
different processes, or a PostgreSQL database that several app replicas share (see
:mod:`prefkit.curation.store.backend` for everything that differs between the two). The SQL is SQLAlchemy Core.
Nothing outside :class:`StoreCore` and the areas built on it (one :class:`StoreArea` per module of
``curation/store/``, composed into :class:`prefkit.curation.store.project_store.ProjectStore`) writes
SQL against the live store.

Write transactions are short. On SQLite they start with ``BEGIN IMMEDIATE``, so concurrent writers
queue on the busy timeout instead of failing on a lock upgrade; on PostgreSQL they run at READ
COMMITTED and take row or advisory locks where two writers could collide. Reads never block writers.
A dropped or refused connection becomes one :class:`~prefkit.curation.store.backend.DatabaseUnavailable` error after
the connect retries; idempotent steps run through :meth:`StoreCore.retrying`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from functools import wraps
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from prefkit.curation.store.backend import (
    BUSY_TIMEOUT_MS,
    MIGRATION_WAIT_S,
    RETRY_S,
    RETRY_TRANSACTION,
    describe,
    insert,
    is_disconnect,
    is_postgres,
    lock_for_transaction,
    make_engine,
    retrying,
    sqlstate,
    unavailable,
)
from prefkit.curation.store.common import MOVED_TO, StoreError
from prefkit.curation.store.migrations import MIGRATIONS
from prefkit.schemas.common import canonical_json, content_hash, utcnow
from prefkit.schemas.curation import Provenance
from pydantic import BaseModel
from sqlalchemy import Connection, MetaData, Table, func, select, text
from sqlalchemy.exc import DBAPIError

__all__ = [
    "StoreArea",
    "StoreCore",
    "StoreError",
    "apply_migrations",
    "from_row",
    "in_write",
    "make_engine",
    "to_row",
]

T = TypeVar("T")
P = ParamSpec("P")
A = TypeVar("A", bound="StoreArea")
R = TypeVar("R")


#: Reflected SQLite schemas of this process by the text of their definitions (:meth:`StoreCore._reflect`).
_REFLECTED: dict[str, MetaData] = {}
_REFLECTED_MAX = 16


def apply_migrations(conn: Connection) -> list[str]:
    """Apply, on ``conn``'s open transaction, every migration of the one list not applied yet;
    returns the names applied now. Callers hold the migration lock (see :meth:`StoreCore.migrate`)."""
    conn.execute(
        text(
            "CREATE TABLE IF NOT EXISTS _migrations (number INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)"
        )
    )
    done = {row[0] for row in conn.execute(text("SELECT number FROM _migrations"))}
    applied_now: list[str] = []
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


class StoreCore:
    """Connection handling, migrations and small shared helpers."""

    def __init__(self, db: str | Path, retry_s: float | None = None, migration_wait_s: int | None = None):
        self.db = db
        # From the environment through Project ($PREFKIT_DB_RETRY_S, $PREFKIT_DB_MIGRATION_WAIT_S).
        self.retry_s = RETRY_S if retry_s is None else retry_s
        self.migration_wait_s = MIGRATION_WAIT_S if migration_wait_s is None else migration_wait_s
        self.engine = make_engine(db)
        self.migrate()
        self._md = self.retrying(self._reflect)
        self.t: dict[str, Table] = dict(self._md.tables)
        moved = self.get_meta(MOVED_TO)
        if moved:
            self.close()
            raise StoreError(
                f"{describe(self.engine)} is no longer this project's database: it was copied to {moved} "
                "by `prefkit store migrate`; open the project (its prefkit.toml points there)"
            )

    def _reflect(self) -> MetaData:
        """The database's tables as it has them. A SQLite schema is reflected once per process and
        kept by the text of its definitions (``sqlite_master``): databases at the same migrations have
        the same text, and tests, the app and a command opening several projects open many stores."""
        key = None
        if self.backend == "sqlite":
            with self.engine.connect() as conn:
                key = conn.exec_driver_sql(
                    "SELECT group_concat(type || ' ' || name || ' ' || coalesce(sql, ''), char(10))"
                    " FROM (SELECT type, name, sql FROM sqlite_master ORDER BY type, name)"
                ).scalar()
        md = _REFLECTED.get(key) if key else None
        if md is None:
            md = MetaData()
            md.reflect(self.engine)
            if key:
                if len(_REFLECTED) >= _REFLECTED_MAX:
                    _REFLECTED.clear()
                _REFLECTED[key] = md
        return md

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    # -- transactions -----------------------------------------------------------------------------
    def _connect(self) -> Connection:
        """A pooled connection; a server that refuses or drops connections is retried for ``retry_s``."""
        deadline, delay = time.monotonic() + self.retry_s, 0.05
        while True:
            try:
                return self.engine.connect()
            except DBAPIError as exc:  # a refused password or a missing database fails at once
                if not is_disconnect(exc) or time.monotonic() + delay > deadline:
                    raise unavailable(self.engine, exc) from exc
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Connection]:
        conn = self._connect()
        try:
            conn.info["write"] = write  # read by the SQLite "begin" hook (the record outlives checkouts)
            if not write and self.backend == "postgresql":
                # READ COMMITTED gives every statement its own snapshot, in a transaction or not: a
                # read without BEGIN and COMMIT sees the same rows and saves two round trips.
                conn.execution_options(isolation_level="AUTOCOMMIT")
            with conn.begin():
                yield conn
        except DBAPIError as exc:
            if is_disconnect(exc):
                raise unavailable(self.engine, exc) from exc
            if "database is locked" in str(exc.orig):  # SQLite's busy timeout ran out
                raise StoreError(
                    f"{describe(self.engine)} stayed locked by another process for {BUSY_TIMEOUT_MS // 1000} s "
                    "(a migration, an import or a store migrate); try again when it has finished"
                ) from exc
            raise
        finally:
            conn.close()

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One short write transaction; everything inside commits together or not at all."""
        with self._transaction(write=True) as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A consistent read snapshot on SQLite; on PostgreSQL each statement sees what is committed
        when it starts (READ COMMITTED, run without a transaction: no ``BEGIN``/``COMMIT`` round trips).
        Never write inside it."""
        with self._transaction(write=False) as conn:
            yield conn

    def retrying(self, step: Callable[[], T]) -> T:
        """Run an idempotent ``step`` (a whole transaction) again after a dropped connection, a
        deadlock or a serialization failure; see :func:`prefkit.curation.store.backend.retrying`."""
        return retrying(step, self.engine, self.retry_s)

    def lock(self, conn: Connection, key: str) -> None:
        """Serialise the writers that lock ``key`` until this transaction ends (no-op on SQLite,
        where a write transaction already excludes every other writer)."""
        lock_for_transaction(conn, key)

    def insert_stmt(self, table: str):
        """``INSERT`` with ``ON CONFLICT`` clauses for this backend."""
        return insert(self.engine, self.t[table])

    def close(self) -> None:
        self.engine.dispose()

    # -- migrations -------------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply every migration not applied yet; returns the names applied now.

        All pending migrations run in one transaction. On PostgreSQL (transactional DDL) a process
        that opens the store while another migrates it waits on an advisory lock for up to
        ``MIGRATION_WAIT_S`` seconds, then finds the work done; on SQLite the write lock does the same.
        """
        return self.retrying(self._migrate_once)

    def _migrate_once(self) -> list[str]:
        with self.write() as conn:
            if is_postgres(conn):
                wait_s = int(self.migration_wait_s)
                conn.execute(text(f"SET LOCAL lock_timeout = '{wait_s}s'"))
                try:
                    self.lock(conn, "migrations")
                except DBAPIError as exc:
                    if sqlstate(exc) != "55P03":
                        raise
                    raise StoreError(
                        f"another process has been migrating {describe(self.engine)} for more than "
                        f"{wait_s} s; try again when it has finished"
                    ) from exc
            try:
                return apply_migrations(conn)
            except DBAPIError as exc:  # e.g. no CREATE right on the schema: say so in one line
                if is_disconnect(exc) or sqlstate(exc) in RETRY_TRANSACTION:
                    raise
                reason = str(exc.orig).strip().splitlines()[0]
                raise StoreError(
                    f"cannot create prefkit's tables in {describe(self.engine)}: {reason}"
                ) from exc

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

    #: Per table, a function ``(conn) -> where clause or None`` hiding rows not visible yet (a bulk
    #: import's staged dialogues: :mod:`prefkit.curation.store.packs`); set by the areas that stage.
    hidden: dict[str, Callable[[Connection], Any]]

    def count(self, table: str, **where: Any) -> int:
        t = self.t[table]
        q = select(func.count()).select_from(t)
        for col, val in where.items():
            q = q.where(t.c[col] == val)
        with self.read() as conn:
            hide = getattr(self, "hidden", {}).get(table)
            clause = hide(conn) if hide else None
            if clause is not None:
                q = q.where(clause)
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
        conn.execute(
            self.insert_stmt("provenance").on_conflict_do_nothing(index_elements=["provenance_id"]), row
        )
        return row["provenance_id"]

    def insert_many(self, conn: Connection, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            conn.execute(self.t[table].insert(), list(rows))

    def insert_tuples(
        self, conn: Connection, table: str, columns: Sequence[str], rows: Iterable[tuple], chunk: int = 20_000
    ) -> int:
        """Bulk insert of many narrow rows given as tuples in ``columns`` order; returns the count.

        On SQLite the driver's ``executemany`` takes the tuples as they come (no per-row dicts: a
        million-row import stays I/O bound); elsewhere they go through SQLAlchemy in chunks.
        """
        n = 0
        if self.backend == "sqlite":
            driver = conn.connection.driver_connection
            if driver is None:
                raise StoreError("the SQLite connection was closed during a bulk insert")
            cursor = driver.cursor()
            names = ", ".join(columns)
            marks = ", ".join("?" for _ in columns)

            def counted():
                nonlocal n
                for row in rows:
                    n += 1
                    yield row

            cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", counted())
            return n
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(dict(zip(columns, row, strict=True)))
            if len(batch) >= chunk:
                conn.execute(self.t[table].insert(), batch)
                n += len(batch)
                batch = []
        if batch:
            conn.execute(self.t[table].insert(), batch)
            n += len(batch)
        return n

    def read_retrying(self, query: Callable[[Connection], T]) -> T:
        """``query(conn)`` in a read, run again after a dropped connection (reads are idempotent)."""

        def step() -> T:
            with self.read() as conn:
                return query(conn)

        return self.retrying(step)

    def write_retrying(self, step: Callable[[Connection], T]) -> T:
        """``step(conn)`` in a write transaction, run again after a dropped connection, a deadlock or a
        serialization failure: ``step`` must be idempotent."""

        def run() -> T:
            with self.write() as conn:
                return step(conn)

        return self.retrying(run)

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        t = self.t["meta"]
        row = self.read_retrying(lambda conn: conn.execute(select(t.c.value).where(t.c.key == key)).first())
        return default if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        stmt = self.insert_stmt("meta")
        stmt = stmt.on_conflict_do_update(index_elements=["key"], set_={"value": stmt.excluded.value})
        with self.write() as conn:
            conn.execute(stmt, {"key": key, "value": value})


class StoreArea:
    """One area of the store (content, labels, queues, ...): a small class holding the shared
    :class:`StoreCore`, so every area writes through the same engine and transactions. An area never
    inherits from another; one that needs another's operations is handed that area.

    The few forwarders below keep area code short (``self.t``, ``self.write()``); they add nothing."""

    def __init__(self, core: StoreCore):
        self.core = core

    @property
    def t(self) -> dict[str, Table]:
        return self.core.t

    @property
    def engine(self):
        return self.core.engine

    @property
    def backend(self) -> str:
        return self.core.backend

    def read(self):
        return self.core.read()

    def write(self):
        return self.core.write()

    def retrying(self, step: Callable[[], T]) -> T:
        return self.core.retrying(step)

    def read_retrying(self, query: Callable[[Connection], T]) -> T:
        return self.core.read_retrying(query)

    def write_retrying(self, step: Callable[[Connection], T]) -> T:
        return self.core.write_retrying(step)

    def fetch(self, query: Any) -> Sequence[Any]:
        """Every row ``query`` selects, as mappings, in one read."""
        with self.read() as conn:
            return conn.execute(query).mappings().all()

    def fetch_tuples(self, query: Any) -> Sequence[Any]:
        """Every row ``query`` selects, as tuples, in one read."""
        with self.read() as conn:
            return conn.execute(query).all()

    def scalar(self, query: Any) -> Any:
        """The first column of the first row ``query`` selects (None when none), in one read."""
        with self.read() as conn:
            return conn.execute(query).scalar()

    def row(self, table: str, **equal: Any) -> Any:
        """The (first) row of ``table`` whose columns equal ``equal``; None when there is none."""
        t = self.t[table]
        with self.read() as conn:
            return conn.execute(select(t).where(*(t.c[k] == v for k, v in equal.items()))).mappings().first()

    def rows(self, table: str, order: Sequence[str], **equal: Any) -> Sequence[Any]:
        """The rows of ``table`` ordered by the ``order`` columns, only those whose columns equal the
        values of ``equal`` that are given (a value that is None or empty filters nothing)."""
        t = self.t[table]
        q = select(t).order_by(*(t.c[c] for c in order)).where(*(t.c[k] == v for k, v in equal.items() if v))
        return self.fetch(q)

    def lock(self, conn: Connection, key: str) -> None:
        self.core.lock(conn, key)

    def insert_stmt(self, table: str):
        return self.core.insert_stmt(table)

    def insert_many(self, conn: Connection, table: str, rows: Sequence[dict[str, Any]]) -> None:
        self.core.insert_many(conn, table, rows)

    def ensure_provenance(self, conn: Connection, prov: Provenance) -> str:
        return self.core.ensure_provenance(conn, prov)

    dumps = staticmethod(StoreCore.dumps)
    loads = staticmethod(StoreCore.loads)


def from_row(cls: type[R], row: Mapping[Any, Any], **values: Any) -> R:
    """A record of ``cls`` (a dataclass or a pydantic model) from a table row: each field not in
    ``values`` from the column of its name, or decoded from its ``<field>_json`` column."""
    names = cls.model_fields if issubclass(cls, BaseModel) else [f.name for f in fields(cls)]  # type: ignore[arg-type]
    for name in names:
        if name not in values and f"{name}_json" in row:
            values[name] = StoreCore.loads(row[f"{name}_json"])
        elif name not in values and name in row:
            values[name] = row[name]
    return cls(**values)


def to_row(
    record: Any, /, encoded: tuple[str, ...] = (), left_out: tuple[str, ...] = (), **values: Any
) -> dict[str, Any]:
    """The table row of a record (the reverse of :func:`from_row`): each field in the column of its
    name, the ``encoded`` ones as JSON in ``<field>_json``, ``left_out`` none; ``values`` added as given."""
    names = type(record).model_fields if isinstance(record, BaseModel) else [f.name for f in fields(record)]
    row = {n: getattr(record, n) for n in names if n not in encoded and n not in left_out}
    return {**row, **{f"{n}_json": StoreCore.dumps(getattr(record, n)) for n in encoded}, **values}


def in_write(method: Callable[Concatenate[A, Connection, P], T]) -> Callable[Concatenate[A, P], T]:
    """The store method as one write transaction, handed in as its ``conn`` (callers do not pass it),
    and run again after a dropped connection (:meth:`StoreCore.write_retrying`): it must be idempotent."""

    @wraps(method)
    def run(self: A, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.write_retrying(lambda conn: method(self, conn, *args, **kwargs))

    return run
