"""The records the content area (:mod:`prefkit.curation.store.content`) takes and returns, and the one
mapping of each to the row of its table.

Reads return these records, writes take them (``ImportBundle`` for a whole import); every row of
``dialogues``, ``turns``, ``sessions``, ``memories``, ``packets``, ``instances`` and
``instance_sessions`` is built here, so no code outside ``curation/store/`` names a column. This module
must never open a connection: it maps, the areas write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from prefkit.curation.store.engine import StoreCore, to_row
from prefkit.schemas.cupid import BenchmarkInstance
from prefkit.schemas.curation import Provenance
from prefkit.schemas.generation import Session, Turn


@dataclass
class ImportBundle:
    """Everything one import writes, assembled before the transaction starts: contracts, which the
    store maps to rows. ``packets`` and ``instances`` are in file order (their position);
    ``sessions`` are stored each as a dialogue with its turns too; ``instance_links`` are the sessions
    each instance's prior interactions are built from, by instance id."""

    kind: str
    path: str
    sha256: str
    rows: int
    provenance: Provenance
    licence: str | None = None
    dialogues: list[Dialogue] = field(default_factory=list)
    memories: list[NewMemory] = field(default_factory=list)
    packets: list[Packet] = field(default_factory=list)
    sessions: list[CupidSession] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)
    instance_links: dict[str, list[InstanceLink]] = field(default_factory=dict)

    def table_rows(self) -> dict[str, list[dict[str, Any]]]:
        """The rows of each table this import writes, in the order they are inserted."""
        sessions = [session_rows(s) for s in self.sessions]
        return {
            "dialogues": [dialogue_row(d) for d in self.dialogues] + [x[0] for x in sessions],
            "turns": [r for d in self.dialogues for r in turn_rows(d.dialogue_id, d.turns)]
            + [r for x in sessions for r in x[1]],
            "sessions": [x[2] for x in sessions],
            "memories": [memory_row(m, m.source_model or "") for m in self.memories],
            "packets": [packet_row(x, i) for i, x in enumerate(self.packets)],
            "instances": [instance_row(x, i) for i, x in enumerate(self.instances)],
            "instance_sessions": [
                link_row(iid, link) for iid, links in self.instance_links.items() for link in links
            ],
        }


@dataclass(frozen=True, slots=True)
class Source:
    """One import's source row: what file was read, its hash, row count and licence."""

    source_id: str
    kind: str
    path: str
    sha256: str
    rows: int
    licence: str | None
    imported_at: str


@dataclass(frozen=True, slots=True)
class TurnRevision:
    """One human rewrite of a turn; the first revision of a turn keeps the original text."""

    seq: int
    revision_id: str
    dialogue_id: str
    turn_index: int
    original: str
    revised: str
    author: str
    reason: str | None
    created_at: str


@dataclass(frozen=True, slots=True)
class DialogueTurn:
    """One turn of a stored dialogue: its 0-based ``index``, who wrote it, the text, and whatever else
    the source carried for it (``extra``: an AlpsBench turn's other keys, a simulator's scores)."""

    index: int
    role: str
    content: str
    extra: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Dialogue:
    """A stored dialogue with its current turns (rewrites applied) and its metadata. ``persona_id`` and
    ``session_index`` are set for sessions (generated or imported from CUPID rows), None otherwise."""

    dialogue_id: str
    origin: str
    persona_id: str | None
    session_index: int | None
    needs_reverification: bool
    meta: dict[str, Any]
    turns: list[DialogueTurn]


@dataclass(frozen=True, slots=True)
class CupidSession:
    """A session imported from a CUPID row's prior interaction. A CUPID row carries only part of a
    generated :class:`~prefkit.schemas.generation.Session` (the factor's name, the preference's text, the
    checklist's questions; no time, no factor details, no simulator's verdict), so it is a record of
    its own. Answers the same ``factor_name`` / ``preference_text`` / ``questions`` as a ``Session``."""

    session_id: str
    persona_id: str
    index: int
    factor_name: str
    preference_text: str
    questions: list[str]
    turns: list[DialogueTurn] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The session as stored and released: the CUPID parts in ``Session``'s shape, with its turns."""
        return {
            "session_id": self.session_id,
            "persona_id": self.persona_id,
            "index": self.index,
            "context_factor": {"name": self.factor_name},
            "preference": {"text": self.preference_text},
            "checklist": [{"question": q} for q in self.questions],
            "turns": [{"index": t.index, "role": t.role, "content": t.content} for t in self.turns],
        }

    @classmethod
    def from_json(cls, record: dict[str, Any], turns: list[DialogueTurn]) -> CupidSession:
        """The session from its stored record (without turns) and its turns."""
        return cls(
            session_id=record["session_id"],
            persona_id=record["persona_id"],
            index=record["index"],
            factor_name=record["context_factor"]["name"],
            preference_text=record["preference"]["text"],
            questions=[c["question"] for c in record["checklist"]],
            turns=turns,
        )


#: What :meth:`Content.sessions` returns: a generated ``Session`` or a session imported from CUPID.
StoredSession = Session | CupidSession


@dataclass(frozen=True, slots=True)
class SessionVersion:
    """The turns of a generated session a repair replaced."""

    session_id: str
    version: int
    reason: str | None
    replaced_at: str
    turns: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Failure:
    """A pipeline item that failed at ``stage``, with the error and the raw output if any."""

    seq: int
    stage: str
    item: str
    error: str
    raw: str | None
    created_at: str


@dataclass(frozen=True, slots=True)
class ReverifyDialogue:
    """A dialogue with a rewritten turn, waiting to be verified again."""

    dialogue_id: str
    origin: str
    revisions: int
    last: str


@dataclass(frozen=True, slots=True)
class Packet:
    """An imported AlpsBench packet: its session, the dialogue it holds and the packet's other keys."""

    session_id: str
    dialogue_id: str
    extra: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Instance:
    """A CUPID instance and the provenance that made or imported it (the store fills
    ``provenance_id`` when it adds the instance)."""

    instance_id: str
    record: BenchmarkInstance
    provenance_id: str | None = None


@dataclass(frozen=True, slots=True)
class InstanceLink:
    """A session one of an instance's prior interactions is built from (``position`` in the list);
    ``relevant`` says whether the instance's verification depends on it."""

    position: int
    session_id: str
    role: str
    relevant: bool


@dataclass(frozen=True, slots=True)
class PreferencePair:
    """A (checklist item, candidate preference) pair a ``preference_match`` task asks about. ``meta``
    holds what its origin knows (the relation it was built from, a gold answer, the run it came
    from); the store fills ``provenance_id`` and ``created_at`` when it adds the pair."""

    pair_id: str
    checklist_item: str
    candidate: str
    origin: str
    instance_id: str | None = None
    meta: dict[str, Any] | None = None
    provenance_id: str | None = None
    created_at: str | None = None


@dataclass(frozen=True, slots=True)
class StoredMemory:
    """A memory of a dialogue as stored: ``origin`` gold, candidate (or candidate_rejected/_capped)
    or annotator; ``record`` the validated memory (a ``prefkit.schemas.alpsbench.MemoryItem`` as JSON, None
    when it did not validate), ``raw`` what the source wrote, ``problems`` why it is not valid."""

    memory_pk: int
    dialogue_id: str
    origin: str
    source_model: str
    position: int
    memory_id: str | None
    record: dict[str, Any] | None
    raw: Any
    valid: bool
    problems: list[str]


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory to add with :meth:`Content.add_memories`: ``record`` the validated memory (None when
    it did not validate; the memory is then stored as not valid), ``raw`` what the source wrote,
    ``source_model`` defaults to ``extract:<the provenance's model>``."""

    dialogue_id: str
    origin: str
    position: int
    raw: Any
    memory_id: str | None = None
    record: dict[str, Any] | None = None
    problems: list[str] | None = None
    source_model: str | None = None


@dataclass
class ImportResult:
    source_id: str
    already_imported: bool
    counts: dict[str, int]


def read_session(record: dict[str, Any], turns: list[tuple[int, str, str]], origin: str) -> StoredSession:
    """A stored session from its record and its ``(index, role, content)`` turns."""
    if origin == "cupid":
        return CupidSession.from_json(record, [DialogueTurn(*t) for t in turns])
    return Session.model_validate(
        {**record, "turns": [{"index": i, "role": r, "content": c} for i, r, c in turns]}
    )


def unpacked_turns(packed: list[dict[str, Any]]) -> list[DialogueTurn]:
    """The turns of a ``packed_turns`` row (``[{"role", "content", "extra"?}, ...]`` in order)."""
    return [DialogueTurn(i, x["role"], x["content"], x.get("extra")) for i, x in enumerate(packed)]


def turn_rows(dialogue_id: str, turns: Iterable[DialogueTurn]) -> list[dict[str, Any]]:
    """The ``turns`` rows of a dialogue: the one mapping of a turn to its row, for every write of turns."""
    return [
        {
            "dialogue_id": dialogue_id,
            "turn_index": t.index,
            "role": t.role,
            "content": t.content,
            "extra_json": StoreCore.dumps(t.extra),
        }
        for t in turns
    ]


def scored_turns(turns: Sequence[Turn | DialogueTurn], extras: list[dict | None]) -> list[DialogueTurn]:
    """A simulated session's turns with what the simulator kept beside each (``extras[i]``: scores)."""
    return [DialogueTurn(t.index, t.role, t.content, x) for t, x in zip(turns, extras, strict=True)]


def dialogue_row(d: Dialogue, schema_version: str = "1.0") -> dict[str, Any]:
    """The ``dialogues`` row of a dialogue (its turns are :func:`turn_rows`)."""
    return to_row(d, ("meta",), ("turns",), schema_version=schema_version)


def session_rows(
    session: StoredSession, meta: dict[str, Any] | None = None, extras: list[dict | None] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """The rows a session is stored as: its ``dialogues`` row, its ``turns`` rows (``extras[i]`` kept
    beside turn i) and its ``sessions`` row (the record without its turns). A session imported from
    CUPID gets the metadata ``{"imported_from": "cupid"}``."""
    cupid = isinstance(session, CupidSession)
    if isinstance(session, CupidSession):
        record, version = session.as_json(), BenchmarkInstance.SCHEMA_VERSION
    else:
        record, version = session.model_dump(mode="json"), session.schema_version
    del record["turns"]
    turns = scored_turns(session.turns, extras or [None] * len(session.turns))
    dialogue = Dialogue(
        dialogue_id=session.session_id,
        origin="cupid" if cupid else "generated",
        persona_id=session.persona_id,
        session_index=session.index,
        needs_reverification=False,
        meta={"imported_from": "cupid"} if cupid else (meta or {}),
        turns=turns,
    )
    row = {
        "session_id": session.session_id,
        "persona_id": session.persona_id,
        "session_index": session.index,
        "record_json": StoreCore.dumps(record),
        "schema_version": version,
    }
    return dialogue_row(dialogue, version), turn_rows(session.session_id, turns), row


def memory_row(m: NewMemory, source_model: str) -> dict[str, Any]:
    """The ``memories`` row of a memory (``source_model``: the model that wrote it, '' for gold)."""
    encoded = ("record", "raw", "problems")
    return to_row(m, encoded, source_model=source_model, valid=m.record is not None, schema_version="1.0")


def packet_row(packet: Packet, position: int) -> dict[str, Any]:
    return to_row(packet, ("extra",), position=position, schema_version="1.0")


def instance_row(instance: Instance, position: int) -> dict[str, Any]:
    return {
        "instance_id": instance.instance_id,
        "persona_id": instance.record.persona_id,
        "instance_type": instance.record.instance_type,
        "position": position,
        "record_json": StoreCore.dumps(instance.record.model_dump(mode="json")),
        "schema_version": BenchmarkInstance.SCHEMA_VERSION,
    }


def link_row(instance_id: str, link: InstanceLink) -> dict[str, Any]:
    return to_row(link, instance_id=instance_id)
