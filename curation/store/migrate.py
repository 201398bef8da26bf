"""Move a project's store to another database (``prefkit store migrate --to postgresql://...``).

Every table of the project's database — content, tasks, assignments, label events, adjudications,
turn revisions, the LLM cache and ledger, releases, meta, the migration log — is copied into an EMPTY
target database whose schema is built from the same migration list, in one target transaction. Each
table's row count and content hash (an order-independent SHA-256 over canonical rows) is compared
between source and target before that transaction commits, so a failed or mismatched copy leaves the
target empty. Then ``prefkit.toml`` is pointed at the target (without a password) and the old database
is marked as moved, so nothing opens it by mistake afterwards.

The source is held with a write lock for the whole copy: writers of other processes wait (and fail on
their busy timeout if the copy takes longer), they never write into a database that is being left.
This module must never be imported by the store's areas; it only reads the source through its engine.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefkit.curation.store.backend import (
    describe,
    is_postgres,
    lock_for_transaction,
    make_engine,
    redact,
)
from prefkit.curation.store.common import MOVED_TO, StoreError, is_url
from prefkit.curation.store.engine import apply_migrations
from sqlalchemy import Connection, Integer, MetaData, Table, func, inspect, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import sort_tables

if TYPE_CHECKING:
    from prefkit.curation.project import Project

CHUNK = 2000


@dataclass
class TableCopy:
    """One table's rows and content hash in the source and (after the copy) in the target."""

    table: str
    rows: int
    sha256: str = ""
    target_rows: int | None = None
    target_sha256: str | None = None

    @property
    def verified(self) -> bool:
        return self.rows == self.target_rows and self.sha256 == self.target_sha256


@dataclass
class StoreMigration:
    """What ``prefkit store migrate`` did (or, with ``dry_run``, would do)."""

    source: str
    target: str
    dry_run: bool
    tables: list[TableCopy] = field(default_factory=list)
    switched: bool = False

    @property
    def total_rows(self) -> int:
        return sum(t.rows for t in self.tables)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_rows": self.total_rows}


class _RowHash:
    """SHA-256 over the sorted per-row digests: independent of row order (which differs between
    backends with different collations), sensitive to every value, every row and duplicate rows."""

    def __init__(self, columns: list[str]):
        self.columns = sorted(columns)
        self.digests: list[bytes] = []

    def add(self, row: dict[str, Any]) -> None:
        values = [_canonical(row[c]) for c in self.columns]
        self.digests.append(hashlib.sha256(json.dumps(values, ensure_ascii=False).encode()).digest())

    def hexdigest(self) -> str:
        return hashlib.sha256(b"".join(sorted(self.digests))).hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return ["f", value.hex()]
    if isinstance(value, bytes | memoryview):
        return ["b", bytes(value).hex()]
    return ["s", str(value)]


def _ordered_tables(tables) -> list[Table]:
    """Parents before children (foreign keys), the migration log first."""
    return sorted(sort_tables(tables), key=lambda t: t.name != "_migrations")


def _counts(conn: Connection, tables: list[Table]) -> list[TableCopy]:
    return [
        TableCopy(t.name, int(conn.execute(select(func.count()).select_from(t)).scalar_one())) for t in tables
    ]


def _target_tables(conn: Connection) -> list[str]:
    return inspect(conn).get_table_names()


def _stream(conn: Connection, table: Table):
    # Per statement: Connection.execution_options() would switch the whole connection to
    # server-side cursors, and an INSERT cannot run in one.
    result = conn.execute(select(table), execution_options={"stream_results": True, "yield_per": CHUNK})
    for part in result.mappings().partitions(CHUNK):
        yield [dict(r) for r in part]


def _hash_table(conn: Connection, table: Table) -> tuple[int, str]:
    h = _RowHash([c.name for c in table.columns])
    for part in _stream(conn, table):
        for row in part:
            h.add(row)
    return len(h.digests), h.hexdigest()


def _reset_sequences(conn: Connection, md: MetaData) -> None:
    """Copied rows carry their own ``seq`` values; the target's sequences must continue after them."""
    if not is_postgres(conn):
        return
    for table in md.sorted_tables:
        pk = list(table.primary_key.columns)
        if len(pk) != 1 or not isinstance(pk[0].type, Integer):
            continue
        seq = conn.execute(
            text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table.name, "c": pk[0].name}
        ).scalar()
        if seq:
            top = conn.execute(select(func.max(pk[0]))).scalar()
            conn.execute(
                text("SELECT setval(:s, :v, :called)"), {"s": seq, "v": top or 1, "called": top is not None}
            )


def _lock_source(conn: Connection, tables: list[Table]) -> None:
    """Keep writers out of the source until the copy is done (SQLite: the write transaction does)."""
    if is_postgres(conn):
        conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
        names = ", ".join(conn.dialect.identifier_preparer.quote(t.name) for t in tables)
        conn.execute(text(f"LOCK TABLE {names} IN SHARE MODE"))


def migrate_store(project: Project, target: str, dry_run: bool = False) -> StoreMigration:
    """Copy ``project``'s store into the empty database ``target``, verify it, switch the config.

    ``dry_run``: check that the target is reachable and empty and report the rows that would be
    copied; nothing is written anywhere."""
    source = project.store
    if not is_url(target):  # a SQLite file, relative to the project
        target = str((project.root / target).resolve())
    if redact(target) == redact(project.database):
        raise StoreError(f"the project already uses {redact(target)}")
    report = StoreMigration(source=describe(source.engine), target=redact(target), dry_run=dry_run)
    if dry_run and not is_url(target) and not Path(target).exists():  # a dry run never creates a file
        with source.read() as sconn:
            report.tables = _counts(sconn, _ordered_tables(source.t.values()))
        return report
    target_engine = make_engine(target)
    try:
        try:
            with target_engine.connect() as tconn:
                present = _target_tables(tconn)
        except DBAPIError as exc:
            raise StoreError(
                f"cannot open the target {redact(target)}: {str(exc.orig).strip().splitlines()[0]}"
            ) from exc
        if present:
            raise StoreError(
                f"the target {redact(target)} is not empty (tables: {', '.join(sorted(present)[:8])}"
                f"{', ...' if len(present) > 8 else ''}); store migrate copies into an empty database only"
            )
        tables = _ordered_tables(source.t.values())
        if dry_run:
            with source.read() as sconn:
                report.tables = _counts(sconn, tables)
            return report
        with source.write() as sconn:
            _lock_source(sconn, tables)
            report.tables = _copy(sconn, tables, target_engine)
            project.set_database(target)
            report.switched = True
            moved = source.insert_stmt("meta")
            sconn.execute(
                moved.on_conflict_do_update(index_elements=["key"], set_={"value": moved.excluded.value}),
                {"key": MOVED_TO, "value": describe(target_engine)},
            )
    finally:
        target_engine.dispose()
    project.close()
    project.__dict__.pop("store", None)
    return report


def _copy(sconn: Connection, tables: list[Table], target_engine) -> list[TableCopy]:
    """Build the schema, copy every table and verify it, all in one target transaction."""
    copies: list[TableCopy] = []
    with target_engine.connect() as tconn:
        tconn.info["write"] = True
        with tconn.begin():
            lock_for_transaction(tconn, "migrations")
            if _target_tables(tconn):  # someone else filled it since we looked
                raise StoreError("the target database stopped being empty during the copy")
            apply_migrations(tconn)
            tmd = MetaData()
            tmd.reflect(tconn)
            for table in reversed(
                _ordered_tables(tmd.tables.values())
            ):  # rows the migrations wrote (the salt, the log)
                tconn.execute(table.delete())
            for table in tables:
                if table.name not in tmd.tables:
                    raise StoreError(
                        f"the target schema has no table {table.name!r}; is the source newer than prefkit?"
                    )
                ttable = tmd.tables[table.name]
                if {c.name for c in table.columns} != {c.name for c in ttable.columns}:
                    raise StoreError(
                        f"the table {table.name} has other columns in the target than in the source; "
                        "upgrade prefkit where the source was last opened, then migrate again"
                    )
                h = _RowHash([c.name for c in table.columns])
                for part in _stream(sconn, table):
                    for row in part:
                        h.add(row)
                    try:
                        tconn.execute(ttable.insert(), part)
                    except DBAPIError as exc:
                        raise StoreError(
                            f"copying {table.name}: {str(exc.orig).strip().splitlines()[0]}"
                        ) from exc
                copy = TableCopy(table.name, len(h.digests), h.hexdigest())
                copy.target_rows, copy.target_sha256 = _hash_table(tconn, ttable)
                copies.append(copy)
            _reset_sequences(tconn, tmd)
            bad = [c for c in copies if not c.verified]
            if bad:
                raise StoreError(
                    "verification failed, nothing was kept: "
                    + "; ".join(f"{c.table} {c.rows}->{c.target_rows} rows" for c in bad)
                )
    return copies
