"""The store's database backends: SQLite (the embedded default) and PostgreSQL (a shared server).

Everything that differs between the two lives here: how an engine is made and configured, how a
write transaction starts, how a key is locked for the length of a transaction, which connection errors
mean "the server is gone" (one clear :class:`DatabaseUnavailable` and a retry) and which mean "try the
transaction again" (deadlock, serialization failure). The store's SQL itself stays portable Core.

Database URLs: a SQLite file path or ``sqlite:///path``; ``postgresql://user@host:port/db`` (the
``psycopg`` driver is filled in). A password is never stored in ``prefkit.toml``: libpq reads it from
``PGPASSWORD`` or ``~/.pgpass``, or the whole URL comes from ``PREFKIT_DATABASE_URL``.
This module must never import the store's areas or anything above ``curation``.
"""

from __future__ import annotations

import logging
import select
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from prefkit.curation.store.common import is_url
from prefkit.schemas.common import PrefkitError
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.engine.url import URL
from sqlalchemy.exc import ArgumentError, DBAPIError, DisconnectionError

BUSY_TIMEOUT_MS = 30_000
#: How long a step retries a database that does not answer before it gives up with one clear error.
RETRY_S = 15.0
#: How long a second process waits for another one's schema migration before it gives up.
MIGRATION_WAIT_S = 120
#: SQLSTATEs after which the whole transaction can simply run again: serialization failure, deadlock.
RETRY_TRANSACTION = ("40001", "40P01")

T = TypeVar("T")
log = logging.getLogger("prefkit.store")


class DatabaseUnavailable(PrefkitError):
    """The database cannot be used: unreachable or dropped (``retryable``: after the retries), or it
    refused us (wrong password, no such database: not retried)."""

    def __init__(self, message: str, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable


class TransactionConflict(PrefkitError):
    """Concurrent transactions kept conflicting after every retry (should not happen in practice)."""


# -- URLs ---------------------------------------------------------------------------------------------
def parse_url(database: str) -> URL:
    """The SQLAlchemy URL of ``database`` with the driver filled in (``postgresql`` -> psycopg 3)."""
    try:
        url = make_url(database)
    except ArgumentError as exc:
        raise PrefkitError(f"not a database URL: {redact(database)!r}") from exc
    if url.drivername in ("postgresql", "postgres", "postgresql+psycopg2"):
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() not in ("postgresql", "sqlite"):
        raise PrefkitError(f"unsupported database {url.get_backend_name()!r}: use SQLite or PostgreSQL")
    return url


def redact(database: str | Path) -> str:
    """``database`` for messages and logs: a URL's password is masked."""
    if not is_url(database):
        return str(database)
    try:
        return make_url(str(database)).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable database URL>"


def has_password(database: str) -> bool:
    try:
        return is_url(database) and make_url(database).password is not None
    except ArgumentError:
        return False


def describe(engine: Engine) -> str:
    """Where an engine points, for one-line errors: ``postgresql://user@host:port/db``."""
    url = engine.url
    if url.get_backend_name() == "sqlite":
        return f"SQLite file {url.database}"
    return url.set(drivername="postgresql").render_as_string(hide_password=True)


# -- engines ------------------------------------------------------------------------------------------
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
        # Writers take the lock up front and queue on the busy timeout instead of failing on an upgrade.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("write") else "BEGIN")

    return engine


def _postgres_engine(url: URL) -> Engine:
    # READ COMMITTED (PostgreSQL's default) for every transaction: the queue's correctness comes from
    # row locks (FOR UPDATE SKIP LOCKED), unique keys and advisory locks, not from snapshot isolation.
    # Keepalives turn a cut network into an error within ~30 s instead of a hang. No pre-ping (a round
    # trip per checkout, a sixth of a submit's): a pooled connection the server dropped is recognised
    # at checkout without asking the server (see _drop_dead_connections), and a connection that dies
    # mid-step fails that step, which the store runs again when it is idempotent.
    engine = create_engine(
        url,
        pool_size=5,
        max_overflow=15,
        pool_recycle=1800,
        connect_args={
            "connect_timeout": 10,
            "application_name": "prefkit",
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
        },
    )
    event.listen(engine, "checkout", _drop_dead_connections)
    return engine


def _drop_dead_connections(dbapi_conn, _record, _proxy) -> None:
    """Refuse a pooled connection that is closed, or whose socket has something to read while idle.

    An idle connection never receives anything from the server we did not ask for, except the notice
    a backend sends as it is terminated (server restart, ``pg_terminate_backend``, an idle timeout)
    followed by the end of the stream: either makes the socket readable. A zero-timeout ``select``
    sees that without a round trip; the pool then opens a new connection in its place."""
    if dbapi_conn.closed or dbapi_conn.broken:
        raise DisconnectionError("the pooled connection is closed")
    try:
        readable, _, _ = select.select([dbapi_conn.pgconn.socket], [], [], 0)
    except (OSError, ValueError, dbapi_conn.Error) as exc:  # no socket any more (Error: psycopg's, PEP 249)
        raise DisconnectionError(f"the pooled connection has no socket: {exc}") from exc
    if readable:
        raise DisconnectionError("the server closed the pooled connection")


def make_engine(database: str | Path) -> Engine:
    """An engine for a SQLite file path, ``sqlite:///path`` or a ``postgresql://`` URL."""
    if not is_url(database):
        return _sqlite_engine(Path(database))
    url = parse_url(str(database))
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(Path(url.database or ""))
    return _postgres_engine(url)


def is_postgres(conn_or_engine: Connection | Engine) -> bool:
    return conn_or_engine.dialect.name == "postgresql"


# -- locks --------------------------------------------------------------------------------------------
def lock_for_transaction(conn: Connection, key: str) -> None:
    """Hold ``key`` until the transaction ends: other transactions locking the same key wait.

    PostgreSQL: a transaction-level advisory lock (scoped to the current schema, so projects sharing a
    database in different schemas do not wait on each other). SQLite: nothing to do, a write
    transaction (``BEGIN IMMEDIATE``) already excludes every other writer.
    """
    if is_postgres(conn):
        conn.execute(
            text("SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':' || :k))"), {"k": key}
        )


def insert(conn_or_engine: Connection | Engine, table):
    """``INSERT`` with ``ON CONFLICT`` support for the backend (both dialects share the API)."""
    if is_postgres(conn_or_engine):
        # Lazy, the dialect in use only: PostgreSQL's costs ~50 ms to import, which SQLite projects would
        # pay for (SQLite's is at the top: every SQLite engine loads it anyway).
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert(table)
    return sqlite_insert(table)


def explain_prefix(conn: Connection) -> str:
    return "EXPLAIN" if is_postgres(conn) else "EXPLAIN QUERY PLAN"


# -- errors and retries -------------------------------------------------------------------------------
def sqlstate(exc: BaseException) -> str | None:
    orig = getattr(exc, "orig", exc)
    return getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None)


def is_disconnect(exc: BaseException) -> bool:
    """The server went away or cannot be reached (not: a constraint, a syntax error, a locked file)."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    state = sqlstate(exc) or ""
    if state.startswith("08") or state in ("57P01", "57P02", "57P03"):
        return True
    # psycopg reports a refused, timed-out or cut connection as OperationalError without a SQLSTATE;
    # a wrong password or an unknown database has no SQLSTATE either but is not worth retrying.
    module = type(exc.orig).__module__ if exc.orig is not None else ""
    if not module.startswith("psycopg") or state:
        return False
    message = str(exc.orig).lower()
    return any(hint in message for hint in _NETWORK_HINTS)


_NETWORK_HINTS = (
    "connection refused",
    "timeout",
    "timed out",
    "server closed the connection",
    "consuming input failed",
    "could not receive",
    "could not send",
    "no route to host",
    "network is unreachable",
    "connection reset",
    "broken pipe",
    "terminating connection",
    "the database system is starting up",
    "the database system is shutting down",
    "connection is lost",
    "connection is closed",
)


def is_retryable_conflict(exc: BaseException) -> bool:
    return isinstance(exc, DBAPIError) and sqlstate(exc) in RETRY_TRANSACTION


def unavailable(engine: Engine, exc: BaseException) -> DatabaseUnavailable:
    """One line naming the database (never its password) and the driver's first line of reason."""
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    reason = lines[0] if lines else type(exc).__name__
    return DatabaseUnavailable(f"cannot use the database {describe(engine)}: {reason}", is_disconnect(exc))


def retrying(step: Callable[[], T], engine: Engine, retry_s: float = RETRY_S) -> T:
    """Run an idempotent ``step``; run it again after a dropped connection (until ``retry_s`` has
    passed) or a deadlock / serialization failure (a few times). Anything else is raised at once."""
    deadline = time.monotonic() + retry_s
    delay, conflicts = 0.05, 0
    while True:
        try:
            return step()
        except DatabaseUnavailable as exc:
            if not exc.retryable or time.monotonic() + delay > deadline:
                raise
            log.info("%s; running the step again", exc)
        except DBAPIError as exc:
            if is_disconnect(exc):
                if time.monotonic() + delay > deadline:
                    raise unavailable(engine, exc) from exc
                log.info("%s; running the step again", unavailable(engine, exc))
            elif is_retryable_conflict(exc):
                conflicts += 1
                if conflicts > 20:
                    raise TransactionConflict(f"transaction kept conflicting: {exc.orig}") from exc
            else:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 1.0)
