"""Packed turns of bulk-imported dialogues (migration 15), part of the content area.

A bulk import (the WildChat ingest) writes each conversation's turns as one ``turn_packs`` row while
it is still reading its input, and links them to dialogues (``dialogue_packs``, in order) once its
sequences are formed. It writes in many short transactions — one per batch — into a *staging area*:
its rows are in the tables but hidden (a ``meta`` row ``staging:<token>`` names the import's process,
its first pack and its source; :meth:`Content.staged_dialogues` and the store's counts leave them
out), and the final transaction, one row long, deletes that marker and makes the whole import visible
at once. So the write lock is held a batch at a time (annotators' submits wait for a batch, not for
the import), a failed or refused import is removed, and one whose process died (``kill -9``, a full
disk) is invisible and removed by the next bulk import. One bulk import writes at a time.

Reads give the packs' turns as if they were ``turns`` rows; the first rewrite of a turn moves the
dialogue's turns into ``turns`` rows. Only the content area uses this module; it never decides what
a dialogue contains, it stores what it is handed.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prefkit.curation.store.common import STAGING, StoreError
from prefkit.curation.store.content_records import ImportBundle, ImportResult
from prefkit.schemas.common import utcnow
from sqlalchemy import Connection, func, select

if TYPE_CHECKING:
    from prefkit.curation.store.content import Content

#: The columns of a typed dialogue batch for :meth:`BulkDialogues.add_dialogues`, in order.
DIALOGUE_BATCH = ("dialogue_id", "meta", "n_turns")
#: The columns of a typed link batch for :meth:`BulkDialogues.link_packs`, in order.
LINK_BATCH = ("dialogue_id", "part", "pack_id")
DIALOGUE_COLUMNS = tuple(
    """dialogue_id origin meta_json needs_reverification schema_version source_id provenance_id
    created_at""".split()
)
#: SQLite page cache of a bulk import's connection while it writes (KiB).
BULK_CACHE_KIB = 65_536
#: Rows written per transaction: the write lock is held this long at most, so an annotator's submit
#: waits for one such write (bench/bench_ingest_live.py), not for the import.
ROWS_PER_WRITE = 1_000
#: Rows deleted per transaction when a staged import is removed.
DISCARD_CHUNK = 20_000


class _AlreadyImported(Exception):
    """Raised inside a bulk import whose source the project already holds: removes what it staged."""


@dataclass(frozen=True)
class StagedImport:
    """A bulk import not visible yet: who writes it and what it wrote so far."""

    key: str
    pid: int
    host: str
    started_at: str
    first_pack: int
    source_id: str | None = None

    def alive(self) -> bool:
        """Whether the writing process still runs (on this host; another host's is taken as alive)."""
        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def staged_imports(content: Content, conn: Connection) -> list[StagedImport]:
    m = content.t["meta"]
    rows = conn.execute(select(m.c.key, m.c.value).where(m.c.key.like(f"{STAGING}%"))).all()
    return [StagedImport(key=k, **json.loads(v)) for k, v in rows]


class BulkDialogues:
    """One open bulk import of dialogues, staged (see the module): packs first, in any number of
    calls, then the source, then the dialogues, then their links to the packs; each call is its own
    short write transaction. Every pack must end up linked before :meth:`publish`."""

    def __init__(self, content: Content, origin: str):
        self.content, self.origin = content, origin
        self.source: tuple[str, str, str] | None = None  # source id, provenance id, time
        self.counts = {"dialogues": 0, "turns": 0}
        self.packs = self.linked = 0  # packs stored (less those dropped) and links written
        self.result: ImportResult | None = None
        self.path = ""
        self.staged = self._stage()

    def _write(self):
        return _short_write(self.content)

    def _stage(self) -> StagedImport:
        """Register this import (refused while another runs); remove what dead ones left behind."""
        content = self.content
        with content.write() as conn:
            content.lock(conn, "turn_packs")  # PostgreSQL: one registration at a time
            others = staged_imports(content, conn)
            running = [o for o in others if o.alive()]
            if running:
                o = running[0]
                raise StoreError(
                    f"another bulk import is writing to this project (pid {o.pid} on {o.host}, started "
                    f"{o.started_at}); run this one after it ends"
                )
            packs = content.t["turn_packs"]
            first = int(conn.execute(select(func.coalesce(func.max(packs.c.pack_id), 0))).scalar_one()) + 1
            first = max([first, *(o.first_pack for o in others)])  # never reuse a dead import's numbers
            staged = StagedImport(
                f"{STAGING}{uuid.uuid4().hex}", os.getpid(), socket.gethostname(), utcnow(), first
            )
            _save(content, conn, staged)
        for dead in others:
            discard(content, dead)
        self.next_pack = staged.first_pack
        return staged

    def add_packs(self, n_turns: Sequence[int], turns_json: Sequence[str]) -> range:
        """Store conversations' turns (JSON text ``[{"role", "content", "extra"?}, ...]``); returns
        their pack ids, in order."""
        ids = range(self.next_pack, self.next_pack + len(n_turns))
        for start in range(0, len(ids), ROWS_PER_WRITE):
            part = slice(start, start + ROWS_PER_WRITE)
            with self._write() as conn:
                self.content.core.insert_tuples(
                    conn,
                    "turn_packs",
                    ("pack_id", "n_turns", "turns_json"),
                    zip(ids[part], n_turns[part], turns_json[part], strict=True),
                )
        self.next_pack = ids.stop
        self.packs += len(ids)
        return ids

    def drop_packs(self, pack_ids: Sequence[int]) -> None:
        """Remove packs no dialogue will link (e.g. conversations found to be duplicates later)."""
        p = self.content.t["turn_packs"]
        ids = list(pack_ids)
        self.packs -= len(ids)
        for start in range(0, len(ids), 5_000):
            with self._write() as conn:
                conn.execute(p.delete().where(p.c.pack_id.in_(ids[start : start + 5_000])))

    def start_source(self, header: ImportBundle) -> str:
        """Record the import's source row (staged with it); a source the project already holds ends
        the import with nothing written (the result says ``already_imported``)."""
        known = self.content.find_source(header.kind, header.sha256)
        if known:
            self.result = ImportResult(known, True, {})
            raise _AlreadyImported(known)
        with self._write() as conn:
            source_id, now = self.content.add_source(conn, header)
            if now is None:  # published by another process meanwhile
                self.result = ImportResult(source_id, True, {})
                raise _AlreadyImported(source_id)
            self.staged = StagedImport(**{**self.staged.__dict__, "source_id": source_id})
            _save(self.content, conn, self.staged)
            self.source = (source_id, self.content.ensure_provenance(conn, header.provenance), now)
        self.path = header.path
        return source_id

    def add_dialogues(self, batch: Any) -> None:
        """Store dialogues given as a ``pyarrow.RecordBatch`` with the columns of
        :data:`DIALOGUE_BATCH`: id, meta (JSON text) and turn count. A dialogue id the project
        already holds stops the import. Batches in ``dialogue_id`` order write fastest."""
        if self.source is None:
            raise StoreError("a bulk import records its source before its dialogues")
        ids, metas, n_turns = (c.to_pylist() for c in _columns(batch, DIALOGUE_BATCH))
        d = self.content.t["dialogues"]
        origin, source = self.origin, self.source
        for start in range(0, len(ids), ROWS_PER_WRITE):
            part = slice(start, start + ROWS_PER_WRITE)
            with self._write() as conn:
                hit = conn.execute(select(d.c.dialogue_id).where(d.c.dialogue_id.in_(ids[part]))).first()
                if hit is not None:
                    raise StoreError(
                        f"{self.path}: dialogue {hit[0]!r} is already in the project from another "
                        "source; remove it or import into a new project"
                    )
                # needs_reverification False, schema_version "1.0"
                rows = (
                    (i, origin, m, False, "1.0", *source) for i, m in zip(ids[part], metas[part], strict=True)
                )
                self.content.core.insert_tuples(conn, "dialogues", DIALOGUE_COLUMNS, rows)
        self.counts["dialogues"] += len(ids)
        self.counts["turns"] += sum(n_turns)

    def link_packs(self, batch: Any) -> None:
        """Give dialogues their turns: a ``pyarrow.RecordBatch`` with the columns of
        :data:`LINK_BATCH` (``part`` 0, 1, ... is the pack's place in the dialogue). Batches in
        ``pack_id`` order write fastest (each pack is looked up once, in the order it was written)."""
        cols = [c.to_pylist() for c in _columns(batch, LINK_BATCH)]
        for start in range(0, len(cols[0]), ROWS_PER_WRITE):
            part = [c[start : start + ROWS_PER_WRITE] for c in cols]
            with self._write() as conn:
                self.linked += self.content.core.insert_tuples(
                    conn, "dialogue_packs", LINK_BATCH, zip(*part, strict=True)
                )

    def check_complete(self) -> None:
        """Refuse to publish an import that recorded no source or left a pack without a dialogue."""
        if self.source is None:
            raise StoreError("a bulk import ended without recording its source")
        if self.linked != self.packs:
            raise StoreError(f"a bulk import stored {self.packs} conversations but linked {self.linked}")

    def publish(self) -> None:
        """The final, one-row transaction: the import becomes visible whole."""
        self.check_complete()
        m = self.content.t["meta"]
        with self.content.write() as conn:
            conn.execute(m.delete().where(m.c.key == self.staged.key))


def _save(content: Content, conn: Connection, staged: StagedImport) -> None:
    m = content.t["meta"]
    value = json.dumps({k: v for k, v in staged.__dict__.items() if k != "key"})
    conn.execute(m.delete().where(m.c.key == staged.key))
    conn.execute(m.insert(), {"key": staged.key, "value": value})


def discard(content: Content, staged: StagedImport) -> None:
    """Remove a staged import's rows, a chunk per transaction, and then its marker (an interrupted
    removal is finished by the next bulk import: the marker stays until the end)."""
    links, packs, d, s, m = (
        content.t[n] for n in ("dialogue_packs", "turn_packs", "dialogues", "sources", "meta")
    )
    _delete_chunks(content, links.c.pack_id, links.c.pack_id >= staged.first_pack)
    if staged.source_id:
        _delete_chunks(content, d.c.dialogue_id, d.c.source_id == staged.source_id)
    while True:
        with _short_write(content) as conn:
            top = conn.execute(
                select(func.max(packs.c.pack_id)).where(packs.c.pack_id >= staged.first_pack)
            ).scalar_one()
            if top is not None:
                conn.execute(
                    packs.delete().where(packs.c.pack_id >= max(staged.first_pack, top - DISCARD_CHUNK))
                )
        if top is None:
            break
    with content.write() as conn:
        if staged.source_id:
            conn.execute(s.delete().where(s.c.source_id == staged.source_id))
        conn.execute(m.delete().where(m.c.key == staged.key))


def _delete_chunks(content: Content, key: Any, where: Any) -> None:
    """Delete the rows ``where`` selects, ``DISCARD_CHUNK`` of them (by ``key``) per transaction."""
    while True:
        with _short_write(content) as conn:
            ids = [r[0] for r in conn.execute(select(key).where(where).limit(DISCARD_CHUNK))]
            if ids:
                conn.execute(key.table.delete().where(key.in_(ids)))
        if not ids:
            break


def _columns(batch: Any, names: tuple[str, ...]) -> list[Any]:
    got = tuple(batch.schema.names)
    if got != names:
        raise StoreError(f"a batch needs the columns {names}, got {got}")
    return batch.columns


@contextmanager
def bulk_dialogues(content: Content, origin: str) -> Iterator[BulkDialogues]:
    """A staged :class:`BulkDialogues`: published when the block ends, removed when it raises. An
    import whose source the project already holds is removed quietly; its ``result`` says so."""
    bulk = BulkDialogues(content, origin)
    try:
        yield bulk
        bulk.publish()
    except _AlreadyImported:
        _discard_quietly(content, bulk.staged)
        return
    except BaseException:
        _discard_quietly(content, bulk.staged)
        raise
    assert bulk.source is not None  # publish() checked it
    bulk.result = ImportResult(bulk.source[0], False, dict(bulk.counts))


def _discard_quietly(content: Content, staged: StagedImport) -> None:
    """Remove a failed import's rows; when that fails too (a full disk), they stay hidden and the
    next bulk import removes them."""
    with suppress(Exception):
        discard(content, staged)


@contextmanager
def _short_write(content: Content) -> Iterator[Connection]:
    """One batch's write transaction, with SQLite's larger page cache for it (linking hundreds of
    thousands of rows looks up and inserts into indexes; with the default 2 MB cache those pages are
    read back from the write-ahead log over and over). On SQLite the import then copies what it wrote
    from the write-ahead log into the database itself (a passive checkpoint, which waits for nobody):
    otherwise the next annotator's commit past the log's size limit would do it, holding its submit."""
    with content.write() as conn, _page_cache(content, conn):
        yield conn
    if content.backend == "sqlite":
        checkpoint = content.core._connect()
        try:  # the driver connection, outside any transaction (a checkpoint cannot run in one)
            driver = checkpoint.connection.driver_connection
            if driver is not None:
                driver.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            checkpoint.close()


@contextmanager
def _page_cache(content: Content, conn: Connection) -> Iterator[None]:
    """SQLite: a larger page cache for this transaction only. Linking hundreds of thousands of rows
    looks up and inserts into indexes; with SQLite's default 2 MB cache those pages are read back
    from the write-ahead log over and over (it holds every pack written so far)."""
    if content.backend != "sqlite":
        yield
        return
    before = conn.exec_driver_sql("PRAGMA cache_size").scalar_one()
    conn.exec_driver_sql(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
    try:
        yield
    finally:  # the connection goes back to the pool: leave it as it was
        conn.exec_driver_sql(f"PRAGMA cache_size = {int(before)}")


def packed_turns(content: Content, conn: Connection, dialogue_id: str) -> list[dict[str, Any]] | None:
    """A bulk-imported dialogue's turns still held in packs, in order, else None. With more than one
    pack each turn carries ``{"conversation": part}``."""
    links, packs = content.t["dialogue_packs"], content.t["turn_packs"]
    rows = conn.execute(
        select(links.c.part, packs.c.turns_json)
        .join(packs, packs.c.pack_id == links.c.pack_id)
        .where(links.c.dialogue_id == dialogue_id)
        .order_by(links.c.part)
    ).all()
    if not rows:
        return None
    if len(rows) == 1:
        return content.loads(rows[0][1])
    turns = []
    for part, text in rows:
        for turn in content.loads(text):
            turn["extra"] = {**(turn.get("extra") or {}), "conversation": part}
            turns.append(turn)
    return turns


def drop_dialogue_packs(content: Content, conn: Connection, dialogue_id: str) -> None:
    """Remove a dialogue's links and packs (after its turns moved into ``turns`` rows)."""
    links, packs = content.t["dialogue_packs"], content.t["turn_packs"]
    ids = [r[0] for r in conn.execute(select(links.c.pack_id).where(links.c.dialogue_id == dialogue_id))]
    conn.execute(links.delete().where(links.c.dialogue_id == dialogue_id))
    conn.execute(packs.delete().where(packs.c.pack_id.in_(ids)))


def packed_turn_count(content: Content) -> int:
    """Turns held in packs (bulk-imported dialogues not rewritten yet), staged imports' left out."""
    p = content.t["turn_packs"]
    with content.read() as conn:
        q = select(func.coalesce(func.sum(p.c.n_turns), 0))
        staged = staged_imports(content, conn)
        if staged:  # one bulk import writes at a time: its packs are numbered above every visible one
            q = q.where(p.c.pack_id < min(x.first_pack for x in staged))
        return int(conn.execute(q).scalar_one())
