"""Packed turns of bulk-imported dialogues (migration 15), part of the content area.

A bulk import (the WildChat ingest) writes each conversation's turns as one ``turn_packs`` row while
it is still reading its input, and links them to dialogues (``dialogue_packs``, in order) once its
sequences are formed — all in one write transaction, so a failed or refused import writes nothing.
Reads give the packs' turns as if they were ``turns`` rows; the first rewrite of a turn moves the
dialogue's turns into ``turns`` rows. Only the content area uses this module; it never decides what
a dialogue contains, it stores what it is handed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from prefkit.curation.store.content_records import ImportBundle, ImportResult
from prefkit.curation.store.engine import StoreError
from sqlalchemy import Connection, func, select

if TYPE_CHECKING:
    from prefkit.curation.store.content import Content

#: The columns of a typed dialogue batch for :meth:`BulkDialogues.add_dialogues`, in order.
DIALOGUE_BATCH = ("dialogue_id", "meta", "n_turns")
#: The columns of a typed link batch for :meth:`BulkDialogues.link_packs`, in order.
LINK_BATCH = ("dialogue_id", "part", "pack_id")
DIALOGUE_COLUMNS = (
    "dialogue_id",
    "origin",
    "meta_json",
    "needs_reverification",
    "schema_version",
    "source_id",
    "provenance_id",
    "created_at",
)


#: SQLite page cache of a bulk import's connection while it writes (KiB).
BULK_CACHE_KIB = 65_536


class _AlreadyImported(Exception):
    """Raised inside a bulk import whose source the project already holds: rolls it back."""


class BulkDialogues:
    """One open bulk import of dialogues in the caller's write transaction (see
    :meth:`prefkit.curation.store.content.Content.bulk_dialogues`): packs first, in any number of calls, then
    the source, then the dialogues, then their links to the packs. Every pack must end up linked."""

    def __init__(self, content: Content, conn: Connection, origin: str):
        self.content, self.conn, self.origin = content, conn, origin
        content.lock(conn, "turn_packs")  # PostgreSQL: one bulk import at a time numbers packs
        packs = content.t["turn_packs"]
        self.next_pack = (
            int(conn.execute(select(func.coalesce(func.max(packs.c.pack_id), 0))).scalar_one()) + 1
        )
        self.source: tuple[str, str, str] | None = None  # source id, provenance id, time
        self.counts = {"dialogues": 0, "turns": 0}
        self.packs = self.linked = 0  # packs stored (less those dropped) and links written
        self.result: ImportResult | None = None

    def add_packs(self, n_turns: Sequence[int], turns_json: Sequence[str]) -> range:
        """Store conversations' turns (JSON text ``[{"role", "content", "extra"?}, ...]``); returns
        their pack ids, in order."""
        ids = range(self.next_pack, self.next_pack + len(n_turns))
        self.content.core.insert_tuples(
            self.conn,
            "turn_packs",
            ("pack_id", "n_turns", "turns_json"),
            zip(ids, n_turns, turns_json, strict=True),
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
            self.conn.execute(p.delete().where(p.c.pack_id.in_(ids[start : start + 5_000])))

    def start_source(self, header: ImportBundle) -> str:
        """Record the import's source row; a source the project already holds ends the import with
        nothing written (the result says ``already_imported``)."""
        known = self.content.find_source(header.kind, header.sha256)
        source_id, now = (known, None) if known else self.content.add_source(self.conn, header)
        if now is None:
            self.result = ImportResult(source_id, True, {})
            raise _AlreadyImported(source_id)
        self.source = (source_id, self.content.ensure_provenance(self.conn, header.provenance), now)
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
        for start in range(0, len(ids), 5_000):
            hit = self.conn.execute(
                select(d.c.dialogue_id).where(d.c.dialogue_id.in_(ids[start : start + 5_000]))
            ).first()
            if hit is not None:
                raise StoreError(
                    f"{self.path}: dialogue {hit[0]!r} is already in the project from another "
                    "source; remove it or import into a new project"
                )
        origin, source = self.origin, self.source
        # needs_reverification False, schema_version "1.0"
        rows = ((i, origin, m, False, "1.0", *source) for i, m in zip(ids, metas, strict=True))
        self.content.core.insert_tuples(self.conn, "dialogues", DIALOGUE_COLUMNS, rows)
        self.counts["dialogues"] += len(ids)
        self.counts["turns"] += sum(n_turns)

    def link_packs(self, batch: Any) -> None:
        """Give dialogues their turns: a ``pyarrow.RecordBatch`` with the columns of
        :data:`LINK_BATCH` (``part`` 0, 1, ... is the pack's place in the dialogue). Batches in
        ``pack_id`` order write fastest (each pack is looked up once, in the order it was written)."""
        cols = [c.to_pylist() for c in _columns(batch, LINK_BATCH)]
        self.linked += self.content.core.insert_tuples(
            self.conn, "dialogue_packs", LINK_BATCH, zip(*cols, strict=True)
        )

    def check_complete(self) -> None:
        """Refuse to commit an import that recorded no source or left a pack without a dialogue."""
        if self.source is None:
            raise StoreError("a bulk import ended without recording its source")
        if self.linked != self.packs:
            raise StoreError(f"a bulk import stored {self.packs} conversations but linked {self.linked}")


def _columns(batch: Any, names: tuple[str, ...]) -> list[Any]:
    got = tuple(batch.schema.names)
    if got != names:
        raise StoreError(f"a batch needs the columns {names}, got {got}")
    return batch.columns


@contextmanager
def bulk_dialogues(content: Content, origin: str) -> Iterator[BulkDialogues]:
    """A :class:`BulkDialogues` in one write transaction: committed when the block ends, rolled back
    when it raises. An import whose source the project already holds is rolled back quietly; its
    ``result`` says so."""
    bulk: BulkDialogues | None = None
    try:
        with content.write() as conn, _page_cache(content, conn):
            bulk = BulkDialogues(content, conn, origin)
            yield bulk
            bulk.check_complete()
    except _AlreadyImported:
        return
    if bulk.source is None:
        raise StoreError("a bulk import records its source before it completes")
    bulk.result = ImportResult(bulk.source[0], False, dict(bulk.counts))


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
    """Turns held in packs (bulk-imported dialogues not rewritten yet)."""
    p = content.t["turn_packs"]
    with content.read() as conn:
        return int(conn.execute(select(func.coalesce(func.sum(p.c.n_turns), 0))).scalar_one())
