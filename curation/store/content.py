"""Content area of the project store: sources, dialogues, turns and their revisions, memories,
AlpsBench packets, CUPID instances, preference pairs and pipeline failure rows.

Imports go through :meth:`Content.import_bundle`, one transaction for a whole file, so a failed
import writes nothing and a re-import of the same bytes is a no-op. The records this area takes and
returns, and their rows, are defined in :mod:`prefkit.curation.store.content_records` (importable from here).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from prefkit.curation.store import packs
from prefkit.curation.store.content_records import (
    Dialogue,
    DialogueTurn,
    Failure,
    ImportBundle,
    ImportResult,
    Instance,
    InstanceLink,
    NewMemory,
    Packet,
    PreferencePair,
    ReverifyDialogue,
    SessionVersion,
    Source,
    StoredMemory,
    StoredSession,
    TurnRevision,
    memory_row,
    read_session,
    scored_turns,
    turn_rows,
    unpacked_turns,
)
from prefkit.curation.store.engine import StoreArea, StoreError, from_row, to_row
from prefkit.schemas.common import utcnow
from prefkit.schemas.cupid import BenchmarkInstance
from prefkit.schemas.curation import Provenance
from prefkit.schemas.generation import Turn
from sqlalchemy import Connection, func, or_, select, update


class Content(StoreArea):
    """Reads and writes of benchmark content (``store.content``)."""

    # -- imports ----------------------------------------------------------------------------------
    def _staged_ids(self, conn: Connection) -> list[str]:
        return [x.source_id for x in packs.staged_imports(self, conn) if x.source_id]

    def staged_dialogues(self, conn: Connection):
        """A where clause hiding the dialogues of bulk imports still staging (None when there are none)."""
        ids = self._staged_ids(conn)
        d = self.t["dialogues"]
        return None if not ids else or_(d.c.source_id.is_(None), d.c.source_id.not_in(ids))

    def staged_sources(self, conn: Connection):
        """A where clause hiding the source rows of bulk imports still staging."""
        ids = self._staged_ids(conn)
        return None if not ids else self.t["sources"].c.source_id.not_in(ids)

    def find_source(self, kind: str, sha256: str) -> str | None:
        t = self.t["sources"]
        with self.read() as conn:
            q = select(t.c.source_id).where(t.c.kind == kind, t.c.sha256 == sha256)
            if (hide := self.staged_sources(conn)) is not None:
                q = q.where(hide)
            row = conn.execute(q).first()
        return None if row is None else row[0]

    def add_source(self, conn: Connection, bundle: ImportBundle) -> tuple[str, str | None]:
        """Record an import's source row in ``conn``'s transaction: ``(source id, time)``, or
        ``(source id, None)`` when the project already holds that source (nothing written)."""
        source_id = f"src_{bundle.kind}_{bundle.sha256[:16]}"
        t = self.t["sources"]
        if conn.execute(select(t.c.source_id).where(t.c.source_id == source_id)).first():
            return source_id, None
        now = utcnow()
        conn.execute(
            t.insert(),
            {
                "source_id": source_id,
                "kind": bundle.kind,
                "path": bundle.path,
                "sha256": bundle.sha256,
                "rows": bundle.rows,
                "licence": bundle.licence,
                "imported_at": now,
            },
        )
        return source_id, now

    def import_bundle(self, bundle: ImportBundle) -> ImportResult:
        """Write a whole import in one transaction; a bundle with the same bytes is a no-op."""
        existing = self.find_source(bundle.kind, bundle.sha256)
        if existing:
            return ImportResult(existing, True, {})
        with self.write() as conn:
            source_id, now = self.add_source(conn, bundle)
            if now is None:  # another process imported the same bytes while we parsed
                return ImportResult(source_id, True, {})
            prov_id = self.ensure_provenance(conn, bundle.provenance)
            self._skip_known_sessions(conn, bundle)
            self._check_no_clash(conn, bundle)
            tables = bundle.table_rows()
            for part, rows in tables.items():
                for row in rows:
                    if "source_id" in self.t[part].c:
                        row["source_id"] = source_id
                    if "provenance_id" in self.t[part].c:
                        row["provenance_id"] = prov_id
                    if "created_at" in self.t[part].c:
                        row["created_at"] = now
                self.insert_many(conn, part, rows)
        return ImportResult(source_id, False, {p: len(rows) for p, rows in tables.items()})

    def bulk_dialogues(self, origin: str):
        """A bulk import of dialogues whose turns are stored as packs (one per conversation) while
        the input is still being read, staged in short transactions and made visible by a final
        one-row transaction: see
        :class:`prefkit.curation.store.packs.BulkDialogues`. Used as ``with store.content.bulk_dialogues(o)
        as bulk:``; after the block ``bulk.result`` is the :class:`ImportResult` (``already_imported``
        when the project holds the source, then nothing was written)."""
        return packs.bulk_dialogues(self, origin)

    def sources(self) -> list[Source]:
        """Every import's source row (kind, path, sha256, rows, licence), oldest first."""
        t = self.t["sources"]
        with self.read() as conn:
            q = select(t).order_by(t.c.imported_at, t.c.source_id)
            if (hide := self.staged_sources(conn)) is not None:
                q = q.where(hide)
            return [Source(**r) for r in conn.execute(q).mappings()]

    def _skip_known_sessions(self, conn, bundle: ImportBundle) -> None:
        """Imported CUPID sessions are named by a hash of their content, so one already in the project
        (another file of the same release shares it) is the same session: link to it, write it once."""
        if not bundle.sessions:
            return
        col = self.t["dialogues"].c.dialogue_id
        ids = [x.session_id for x in bundle.sessions]
        known: set[str] = set()
        for start in range(0, len(ids), 500):
            known |= {r[0] for r in conn.execute(select(col).where(col.in_(ids[start : start + 500])))}
        if known:
            bundle.sessions = [x for x in bundle.sessions if x.session_id not in known]

    def _check_no_clash(self, conn, bundle: ImportBundle) -> None:
        """Different bytes carrying ids the project already holds: refuse rather than overwrite."""
        for part, key in (
            ("dialogues", "dialogue_id"),
            ("instances", "instance_id"),
            ("packets", "session_id"),
        ):
            ids = [getattr(x, key) for x in getattr(bundle, part)]
            col = self.t[part].c[key]
            for start in range(0, len(ids), 500):
                hit = conn.execute(select(col).where(col.in_(ids[start : start + 500]))).first()
                if hit is not None:
                    raise StoreError(
                        f"{bundle.path}: {key} {hit[0]!r} is already in the project from another source; "
                        "remove it or import into a new project"
                    )

    # -- dialogues ----------------------------------------------------------------------------------
    def dialogue(self, dialogue_id: str) -> Dialogue:
        """A dialogue with its current turns (revisions applied) and its metadata."""
        d, t = self.t["dialogues"], self.t["turns"]
        with self.read() as conn:
            row = conn.execute(select(d).where(d.c.dialogue_id == dialogue_id)).mappings().first()
            if row is None:
                raise StoreError(f"no dialogue {dialogue_id!r} in the project")
            rows = conn.execute(
                select(t.c.turn_index, t.c.role, t.c.content, t.c.extra_json)
                .where(t.c.dialogue_id == dialogue_id)
                .order_by(t.c.turn_index)
            ).all()
            packed = None if rows else self._packed_turns(conn, dialogue_id)
        if packed is not None:
            turns = unpacked_turns(packed)
        else:
            turns = [DialogueTurn(r[0], r[1], r[2], self.loads(r[3])) for r in rows]
        return from_row(Dialogue, row, meta=self.loads(row["meta_json"]) or {}, turns=turns)

    def _packed_turns(self, conn, dialogue_id: str) -> list[dict[str, Any]] | None:
        """The turns of a bulk-imported dialogue still held in packs, else None."""
        return packs.packed_turns(self, conn, dialogue_id)

    def _unpack_turns(self, conn, dialogue_id: str) -> None:
        """Move a bulk-imported dialogue's turns from its packs into ``turns`` rows (in
        ``conn``'s write transaction), so a rewrite or a replacement works on rows as for any dialogue."""
        packed = self._packed_turns(conn, dialogue_id)
        if packed is None:
            return
        turns = unpacked_turns(packed)
        self.insert_many(conn, "turns", turn_rows(dialogue_id, turns))
        packs.drop_dialogue_packs(self, conn, dialogue_id)

    def dialogue_ids(self, origin: str | None = None) -> list[str]:
        d = self.t["dialogues"]
        q = select(d.c.dialogue_id).order_by(d.c.dialogue_id)
        if origin:
            q = q.where(d.c.origin == origin)
        with self.read() as conn:
            if (hide := self.staged_dialogues(conn)) is not None:
                q = q.where(hide)
            return [r[0] for r in conn.execute(q)]

    def revise_turn(
        self, dialogue_id: str, turn_index: int, revised: str, author: str, reason: str | None = None
    ) -> str:
        """Rewrite one turn. The original text, the new text, who and when are kept as a revision, and
        the dialogue is flagged for re-verification."""
        t, r, d = self.t["turns"], self.t["turn_revisions"], self.t["dialogues"]
        revision_id = "rev_" + uuid.uuid4().hex
        with self.write() as conn:
            self._unpack_turns(conn, dialogue_id)
            row = conn.execute(
                select(t.c.content).where(t.c.dialogue_id == dialogue_id, t.c.turn_index == turn_index)
            ).first()
            if row is None:
                raise StoreError(f"dialogue {dialogue_id!r} has no turn {turn_index}")
            conn.execute(
                r.insert(),
                {
                    "revision_id": revision_id,
                    "dialogue_id": dialogue_id,
                    "turn_index": turn_index,
                    "original": row[0],
                    "revised": revised,
                    "author": author,
                    "reason": reason,
                    "created_at": utcnow(),
                },
            )
            conn.execute(
                update(t)
                .where(t.c.dialogue_id == dialogue_id, t.c.turn_index == turn_index)
                .values(content=revised)
            )
            conn.execute(update(d).where(d.c.dialogue_id == dialogue_id).values(needs_reverification=True))
        return revision_id

    def revisions(self, dialogue_id: str | None = None) -> list[TurnRevision]:
        return [TurnRevision(**x) for x in self.rows("turn_revisions", ("seq",), dialogue_id=dialogue_id)]

    def revision_counts(self) -> dict[str, int]:
        """``{dialogue_id: changes}`` for every changed dialogue: turn revisions plus dialogues a repair
        replaced. Each change starts a new verification round of a session."""
        out: dict[str, int] = {}
        with self.read() as conn:
            for table in ("turn_revisions", "session_versions"):
                t = self.t[table]
                key = t.c.dialogue_id if "dialogue_id" in t.c else t.c.session_id
                for row in conn.execute(select(key, func.count()).group_by(key)).all():
                    out[row[0]] = out.get(row[0], 0) + int(row[1])
        return out

    def replace_session_dialogue(
        self,
        session_id: str,
        turns: list[Turn],
        extras: list[dict | None],
        satisfied: bool,
        reason: str,
    ) -> int:
        """Give a session a new dialogue (``turns``, with ``extras[i]`` kept beside turn i), keeping the
        old one as a version with ``reason``; returns the version number the old dialogue was kept under."""
        t, v, s = self.t["turns"], self.t["session_versions"], self.t["sessions"]
        with self.write() as conn:
            self._unpack_turns(conn, session_id)
            old = conn.execute(
                select(t.c.turn_index, t.c.role, t.c.content)
                .where(t.c.dialogue_id == session_id)
                .order_by(t.c.turn_index)
            ).all()
            version = (
                int(
                    conn.execute(
                        select(func.coalesce(func.max(v.c.version), 0)).where(v.c.session_id == session_id)
                    ).scalar_one()
                )
                + 1
            )
            conn.execute(
                v.insert(),
                {
                    "session_id": session_id,
                    "version": version,
                    "turns_json": self.dumps([{"index": r[0], "role": r[1], "content": r[2]} for r in old]),
                    "reason": reason,
                    "replaced_at": utcnow(),
                },
            )
            conn.execute(t.delete().where(t.c.dialogue_id == session_id))
            self.insert_many(conn, "turns", turn_rows(session_id, scored_turns(turns, extras)))
            record = self.loads(
                conn.execute(select(s.c.record_json).where(s.c.session_id == session_id)).scalar_one()
            )
            conn.execute(
                update(s)
                .where(s.c.session_id == session_id)
                .values(record_json=self.dumps({**record, "satisfied": satisfied}))
            )
        return version

    def session_versions(self, session_id: str | None = None) -> list[SessionVersion]:
        """Dialogues repairs replaced, oldest first."""
        rows = self.rows("session_versions", ("session_id", "version"), session_id=session_id)
        return [from_row(SessionVersion, r) for r in rows]

    def original_turns(self, dialogue_id: str) -> list[DialogueTurn]:
        """Turns as imported/generated, before any human revision."""
        turns = self.dialogue(dialogue_id).turns
        first_original: dict[int, str] = {}
        for rev in self.revisions(dialogue_id):
            first_original.setdefault(rev.turn_index, rev.original)
        return [replace(t, content=first_original.get(t.index, t.content)) for t in turns]

    def sessions(self, persona_id: str | None = None) -> list[StoredSession]:
        """Sessions with their current turns: a ``Session`` for a generated one, a
        :class:`CupidSession` for one imported from CUPID rows."""
        s, t, d = self.t["sessions"], self.t["turns"], self.t["dialogues"]
        q = (
            select(s.c.session_id, s.c.record_json, d.c.origin)
            .outerjoin(d, d.c.dialogue_id == s.c.session_id)
            .order_by(s.c.persona_id, s.c.session_index)
        )
        if persona_id:
            q = q.where(s.c.persona_id == persona_id)
        tq = (
            select(t.c.dialogue_id, t.c.turn_index, t.c.role, t.c.content)
            .join(s, s.c.session_id == t.c.dialogue_id)
            .order_by(t.c.dialogue_id, t.c.turn_index)
        )
        if persona_id:
            tq = tq.where(s.c.persona_id == persona_id)
        with self.read() as conn:
            rows = conn.execute(q).all()
            turns: dict[str, list[tuple[int, str, str]]] = {}
            for r in conn.execute(tq):
                turns.setdefault(r[0], []).append((r[1], r[2], r[3]))
        return [read_session(self.loads(r[1]), turns.get(r[0], []), r[2]) for r in rows]

    def dialogues_to_reverify(self) -> list[ReverifyDialogue]:
        d, r = self.t["dialogues"], self.t["turn_revisions"]
        q = (
            select(
                d.c.dialogue_id,
                d.c.origin,
                func.count(r.c.seq).label("revisions"),
                func.max(r.c.created_at).label("last"),
            )
            .join(r, r.c.dialogue_id == d.c.dialogue_id)
            .where(d.c.needs_reverification.is_(True))
            .group_by(d.c.dialogue_id, d.c.origin)
            .order_by(d.c.dialogue_id)
        )
        return [ReverifyDialogue(**x) for x in self.fetch(q)]

    # -- memories -----------------------------------------------------------------------------------
    def memories(self, dialogue_id: str | None = None, origin: str | None = None) -> list[StoredMemory]:
        order = ("dialogue_id", "origin", "source_model", "position")
        rows = self.rows("memories", order, dialogue_id=dialogue_id, origin=origin)
        return [
            from_row(StoredMemory, r, valid=bool(r["valid"]), problems=self.loads(r["problems_json"]) or [])
            for r in rows
        ]

    def add_memories(self, memories: list[NewMemory], provenance: Provenance) -> int:
        """Add memories made by ``provenance`` (whose ``model`` becomes ``source_model`` unless the
        memory names one)."""
        with self.write() as conn:
            prov_id = self.ensure_provenance(conn, provenance)
            rows = [memory_row(m, m.source_model or f"extract:{provenance.model}") for m in memories]
            self.insert_many(conn, "memories", [{**r, "provenance_id": prov_id} for r in rows])
        return len(memories)

    # -- packets / instances ------------------------------------------------------------------------
    def packets(self) -> list[Packet]:
        p = self.t["packets"]
        rows = self.fetch(select(p).order_by(p.c.position, p.c.session_id))
        return [Packet(r["session_id"], r["dialogue_id"], self.loads(r["extra_json"])) for r in rows]

    def instances(self) -> list[Instance]:
        i = self.t["instances"]
        rows = self.fetch(select(i).order_by(i.c.position, i.c.instance_id))
        return [
            from_row(Instance, r, record=BenchmarkInstance.model_validate(self.loads(r["record_json"])))
            for r in rows
        ]

    def instance_links(self) -> dict[str, list[InstanceLink]]:
        """``{instance_id: [InstanceLink, ...]}``: the sessions each instance's prior interactions are
        built from, in order (instances made before migration 7 have none)."""
        t = self.t["instance_sessions"]
        rows = self.fetch(select(t).order_by(t.c.instance_id, t.c.position))
        out: dict[str, list[InstanceLink]] = {}
        for r in rows:
            out.setdefault(r["instance_id"], []).append(
                InstanceLink(r["position"], r["session_id"], r["role"], bool(r["relevant"]))
            )
        return out

    def _pair(self, r: Any) -> PreferencePair:
        return from_row(PreferencePair, r)

    def preference_pairs(self) -> list[PreferencePair]:
        p = self.t["preference_pairs"]
        rows = self.fetch(select(p).order_by(p.c.pair_id))
        return [self._pair(r) for r in rows]

    def iter_preference_pairs(self, page: int = 5_000) -> Iterator[PreferencePair]:
        """The pairs in ``pair_id`` order like :meth:`preference_pairs`, read ``page`` at a time in
        short transactions (a caller can use the first pairs while the rest are still unread)."""
        p = self.t["preference_pairs"]
        after: str | None = None
        while True:
            q = select(p).order_by(p.c.pair_id).limit(page)
            if after is not None:
                q = q.where(p.c.pair_id > after)
            rows = [self._pair(r) for r in self.fetch(q)]
            yield from rows
            if len(rows) < page:
                return
            after = rows[-1].pair_id

    def add_preference_pairs(self, pairs: Iterable[PreferencePair], provenance: Provenance) -> int:
        """Add (checklist item, candidate preference) pairs for matching tasks; existing ids are kept.
        Every pair is recorded as made by ``provenance``."""
        p = self.t["preference_pairs"]
        with self.write() as conn:
            prov_id = self.ensure_provenance(conn, provenance)
            have = {r[0] for r in conn.execute(select(p.c.pair_id))}
            now = utcnow()
            rows = [
                to_row(pair, ("meta",), provenance_id=prov_id, created_at=pair.created_at or now)
                for pair in pairs
                if pair.pair_id not in have
            ]
            self.insert_many(conn, "preference_pairs", rows)
        return len(rows)

    # -- failures -----------------------------------------------------------------------------------
    def record_failure(self, stage: str, item: str, error: str, raw: str | None = None) -> None:
        with self.write() as conn:
            conn.execute(
                self.t["failures"].insert(),
                {"stage": stage, "item": item, "error": error, "raw": raw, "created_at": utcnow()},
            )

    def failures(self, stage: str | None = None) -> list[Failure]:
        return [Failure(**r) for r in self.rows("failures", ("seq",), stage=stage)]

    def packed_turn_count(self) -> int:
        """Turns held in packs (bulk-imported dialogues not rewritten yet)."""
        return packs.packed_turn_count(self)
