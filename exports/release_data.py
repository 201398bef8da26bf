"""The rows of every release config, built from the project store (read-only).

A config is one Hugging Face dataset configuration: a fixed set of columns, rows split into named
splits, every split sorted by a stable id so the same project state always gives the same bytes.
Columns whose shape varies from row to row in the source data (AlpsBench memories hold an
``utterance_index`` that is an int or a list; label values differ per task kind) are canonical JSON
strings, so every config has one Arrow schema and loads with ``datasets`` and DuckDB alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from prefkit.curation.annotation.task_kinds import feeding
from prefkit.curation.quality.consensus import effective_adjudications, final_labels
from prefkit.curation.quality.verification import session_statuses, verified_gold
from prefkit.curation.store import CupidSession
from prefkit.exports.alpsbench import packet as alps_packet
from prefkit.exports.cupid import cupid_arrow_schema, instance_rows
from prefkit.exports.declared import answers_type, declared_configs, declared_kinds, item_split
from prefkit.schemas.alpsbench_layout import SOURCES, assign_splits, packet_pairs
from prefkit.schemas.common import PrefkitError, canonical_json, content_hash
from prefkit.schemas.config import LABEL_CONFIGS, RELEASE_CONFIGS, AlpsReference, SplitName, config_selected

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

#: Order splits are listed in (card, Croissant); others follow alphabetically.
SPLIT_ORDER = ("train", "dev", "validation", "test")


@dataclass
class ConfigData:
    """One release config: its rows per split (canonical JSON lines, sorted by a stable key), its
    Arrow schema (column order and types of every output format), and how rows are identified."""

    name: str
    description: str
    schema: pa.Schema
    splits: dict[str, list[str]] = field(default_factory=dict)
    id_column: str | None = "id"
    #: Task kinds whose final labels decide what this config holds (the label gates apply to it).
    needs: tuple[str, ...] = ()
    #: Items the project holds for this config but left out, counted per reason (stated in the card).
    dropped: dict[str, int] = field(default_factory=dict)
    private: bool = False  # written outside the published release (e.g. AlpsBench test gold)
    #: Rows per source where a config has more than one (AlpsBench tracks: ``packet``, ``built``).
    sources: dict[str, int] = field(default_factory=dict)
    _keyed: dict[str, list[tuple[str, str]]] = field(default_factory=dict, repr=False)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def add(self, split: str, row: dict[str, Any]) -> None:
        line = canonical_json(row)
        self.add_json(split, row[self.id_column] if self.id_column else line, line)

    def add_json(self, split: str, key: str, line: str) -> None:
        """Add a row already in canonical JSON (read straight from the store), sorted by ``key``."""
        self._keyed.setdefault(split, []).append((key, line))

    def finish(self) -> ConfigData:
        order = sorted(
            self._keyed, key=lambda s: (SPLIT_ORDER.index(s) if s in SPLIT_ORDER else len(SPLIT_ORDER), s)
        )
        self.splits = {s: [line for _k, line in sorted(self._keyed[s])] for s in order if self._keyed[s]}
        self._keyed = {}
        return self

    @property
    def count(self) -> int:
        return sum(len(rows) for rows in self.splits.values())

    @property
    def considered(self) -> int:
        """Rows the project offered this config: released plus dropped. A config with none is not
        part of the release at all; one whose rows were all dropped still is (and its gates apply)."""
        return self.count + sum(self.dropped.values())


def row_key(row: dict[str, Any], id_column: str | None) -> str:
    """The identity of a released row: its id column, else the hash of its content."""
    return str(row[id_column]) if id_column else content_hash(row, 32)


_ARROW = {"": pa.string(), "int": pa.int64(), "bool": pa.bool_(), "float": pa.float64()}


def _schema(*columns: str) -> pa.Schema:
    """An Arrow schema from column words, ``"id n_labels:int in_force:bool"``: a string unless it says."""
    words = (word.partition(":") for column in columns for word in column.split())
    return pa.schema([(name, _ARROW[kind]) for name, _, kind in words])


# -- CUPID ------------------------------------------------------------------------------------------
def cupid_unverified_config(store: ProjectStore) -> ConfigData:
    """Every CUPID instance as it was generated or imported (stored canonical JSON, no re-encoding)."""
    cfg = ConfigData(
        "cupid_unverified",
        "Every CUPID instance as generated or imported, whatever its verification (CUPID row format).",
        cupid_arrow_schema(),
        id_column=None,
    )
    for instance_id, record_json in store.releases.instance_json():
        cfg.add_json("test", instance_id, record_json)
    return cfg.finish()


def cupid_config(store: ProjectStore, statuses=None) -> ConfigData:
    """The verified CUPID instances, rebuilt from their current sessions: an instance is in when every
    session it depends on is verified by the final ``preference_expressed`` labels."""
    cfg = ConfigData(
        "cupid",
        "Verified CUPID instances: every session they depend on was judged by annotators to express its "
        "checklist; prior interactions carry the annotators' rewrites (CUPID row format).",
        cupid_arrow_schema(),
        id_column=None,
        needs=tuple(k.name for k in feeding("cupid")),
    )
    for r in instance_rows(store, verified_only=True, statuses=statuses):
        if r.dropped is not None:
            cfg.drop(r.dropped)
        elif r.row is not None:
            cfg.add_json("test", r.instance_id, canonical_json(r.row))
    return cfg.finish()


def cupid_raw_config(store: ProjectStore, pseudonym: Callable[[str], str], statuses=None) -> ConfigData:
    """What the CUPID instances are made of, one split per record type (each row's record is JSON)."""
    cfg = ConfigData(
        "cupid_raw",
        "CUPID raw data: personas, context factors (contrastive pair marked), session plans, checklists, "
        "and sessions with their verification status and turn revisions; each record as JSON.",
        _schema("id persona_id record"),
    )
    statuses = session_statuses(store) if statuses is None else statuses
    revisions: dict[str, list[dict[str, Any]]] = {}
    for rev in store.content.revisions():
        revisions.setdefault(rev.dialogue_id, []).append(
            {
                "turn_index": rev.turn_index,
                "original": rev.original,
                "revised": rev.revised,
                "author": pseudonym(rev.author),
                "reason": rev.reason,
                "created_at": rev.created_at,
            }
        )
    for persona in store.generation.personas():
        pid = persona.persona_id
        cfg.add("personas", {"id": pid, "persona_id": pid, "record": canonical_json(persona.model_dump())})
        plan = store.generation.plan(pid)
        pair = _contrastive_pair(plan, store.generation.factors(pid)) if plan else {}
        for f in store.generation.factors(pid):
            record = {**f.model_dump(mode="json"), **pair.get(f.factor_id, {"contrastive_role": None})}
            cfg.add(
                "context_factors", {"id": f.factor_id, "persona_id": pid, "record": canonical_json(record)}
            )
        if plan:
            cfg.add(
                "session_plans", {"id": pid, "persona_id": pid, "record": canonical_json(plan.model_dump())}
            )
        for key, items in sorted(store.generation.checklists(pid).items()):
            cfg.add("checklists", {"id": f"{pid}:{key}", "persona_id": pid, "record": canonical_json(items)})
    for s in store.content.sessions():
        sid = s.session_id
        st = statuses.get(sid)
        record = {
            **(s.as_json() if isinstance(s, CupidSession) else s.model_dump(mode="json")),
            "verification": st.status if st else "not_applicable",
            "verification_reason": st.reason if st else "no checklist to verify",
            "revisions": revisions.get(sid, []),
        }
        cfg.add("sessions", {"id": sid, "persona_id": s.persona_id, "record": canonical_json(record)})
    return cfg.finish()


def _contrastive_pair(plan, factors) -> dict[str, dict[str, Any]]:
    """``{factor_id: {contrastive_role, related_factor}}`` for the plan's A and B factors."""
    names = {f.factor_id: f.name for f in factors}
    a = next((s.factor_id for s in plan.slots if s.role == "A"), None)
    b = next((s.factor_id for s in plan.slots if s.role == "B"), None)
    if not a or not b:
        return {}
    return {
        a: {"contrastive_role": "A", "related_factor": names.get(b)},
        b: {"contrastive_role": "B", "related_factor": names.get(a)},
    }


# -- AlpsBench ----------------------------------------------------------------------------------------
_ALPS_ROW = ("benchmark_id", "task", "session_id", "canonical_id", "stratum", "ability")
ALPS_INPUT_SCHEMA = _schema(*_ALPS_ROW, "input")
ALPS_GOLD_SCHEMA = _schema(*(c for c in _ALPS_ROW if c != "stratum"), "gold")
ALPS_UNVERIFIED_SCHEMA = _schema("id track", *_ALPS_ROW, "input gold")
UNVERIFIED_PACKET = "packet not verified (no final memory_verify label)"

Tracks = dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]


SUPERSEDED = "built, superseded by the packet's published row (the packets are the source)"


class TrackConflict(PrefkitError):
    """Two rows of one AlpsBench track share a benchmark id: the release cannot split them."""


def alps_rows(
    store: ProjectStore,
    gold: dict[str, dict[str, Any]] | None = None,
    whole: list[tuple[str, dict[str, Any]]] | None = None,
) -> tuple[Tracks, Tracks, dict[str, Counter], dict[str, Counter]]:
    """``(input row, gold row)`` pairs per public track: ``(verified, unverified, dropped, sources)``.

    With ``gold`` (:func:`prefkit.curation.quality.verification.verified_gold`) a packet's Task 1 reference is its
    verified gold and a packet without one goes to ``unverified``; with ``None`` every packet keeps its
    imported gold. Built rows ship only when people passed them (task_qc) and no packet carries their
    (track, session) (:data:`prefkit.schemas.alpsbench_layout.SOURCES`); ``dropped`` counts the built
    rows left out per track and reason, ``sources`` the rows per track and source (``packet``,
    ``built``) among the rows that may ship. ``whole``: the packets as :func:`whole_packets` reads them
    (read here when not given). Raises :class:`TrackConflict` (one line: track, session, both sources)
    when two rows of a track still share a benchmark id."""
    tracks: Tracks = {}
    unverified: Tracks = {}
    dropped: dict[str, Counter] = {}
    sources: dict[str, Counter] = {}
    carried: set[tuple[str, str]] = set()
    origin: dict[tuple[str, str], str] = {}  # (track, benchmark id) -> where its row came from
    for sid, pkt in whole_packets(store) if whole is None else whole:
        target = tracks
        if gold is not None:
            if sid in gold:  # the packet's own dict is left as imported (the private config writes it)
                pkt = {
                    **pkt,
                    "task1": {**pkt.get("task1", {}), "ground_truth_memories": gold[sid]["memories"]},
                }
            else:
                target = unverified
        for track, pairs in packet_pairs(pkt).items():
            carried.add((track, sid))
            for pair in pairs:
                _claim(origin, track, pair[0], f"the packet of {sid}")
            target.setdefault(track, []).extend(pairs)
            if target is tracks:
                sources.setdefault(track, Counter())["packet"] += len(pairs)
    built = store.alps_tasks.tasks()
    if built:  # the kind whose hook judges a built row (task_qc) decides it
        qc = next(k for k in feeding("alpsbench_*") if k.release_hook("alpsbench_*"))
        passed = qc.release_hook("alpsbench_*")
        tasks = {
            (t.payload["track"], t.payload["benchmark_id"]): t.task_id
            for t in store.labels.tasks(kind=qc.name)
        }
        finals = final_labels(store, qc.name)
    for row in built:
        dropped.setdefault(row.track, Counter())  # every track with built rows: task_qc decides
        task_id = tasks.get((row.track, row.benchmark_id))
        fl = finals.get(task_id) if task_id else None
        if (row.track, row.session_id) in carried:
            why = SUPERSEDED
        elif fl is None or not fl.n_labels:
            why = "built, no task_qc task" if task_id is None else "built, not yet checked (task_qc)"
        elif fl.decided_by == "undecided":
            why = "built, task_qc undecided"
        elif not passed(fl.values):
            why = "built, failed task_qc (leakage or wrong answer)"
        else:
            _claim(origin, row.track, row.input, "build-alpsbench")
            tracks.setdefault(row.track, []).append((row.input, row.gold))
            sources.setdefault(row.track, Counter())["built"] += 1
            continue
        dropped[row.track][why] += 1
    return tracks, unverified, dropped, sources


def whole_packets(store: ProjectStore) -> list[tuple[str, dict[str, Any]]]:
    """``(session id, packet)`` for every imported AlpsBench packet, as imported."""
    return [(p.session_id, alps_packet(store, p.session_id, p.extra)) for p in store.content.packets()]


def _claim(origin: dict[tuple[str, str], str], track: str, row: dict[str, Any], source: str) -> None:
    key = (track, row["benchmark_id"])
    if key in origin:
        raise TrackConflict(
            f"alpsbench {track}: benchmark_id {row['benchmark_id']!r} (session {row['session_id']}) comes "
            f"from {origin[key]} and from {source}; a track holds each id once: nothing written"
        )
    origin[key] = source


def alpsbench_configs(store: ProjectStore, reference: AlpsReference = "verified") -> list[ConfigData]:
    """AlpsBench's public layout: per track, inputs (dev/validation/test) and gold (dev/validation);
    the test gold and the whole packets go to private configs that are never published. With the
    ``verified`` reference (the default) only verified packets are in the tracks, Task 1's reference
    is their verified gold (the memories annotators verified: ``memory_verify`` final labels), and the
    other packets are in ``alpsbench_unverified``; with ``imported``, the packets' own gold."""
    gold = verified_gold(store) if reference == "verified" else None
    whole = whole_packets(store)  # read once: the tracks and the private config both need them
    verified, unverified, dropped, sources = alps_rows(store, gold, whole)
    # Packets' rows are decided by the kinds feeding alpsbench_* with no hook (memory_verify, through
    # the verified gold), built rows by the kind whose hook judges them (task_qc).
    feeders = feeding("alpsbench_*")
    judges = {k.name for k in feeders if k.release_hook("alpsbench_*")}
    packets = tuple(k.name for k in feeders if k.name not in judges)
    out: list[ConfigData] = []
    for track in sorted(set(verified) | set(unverified) | set(dropped)):
        pairs = verified.get(track, [])
        from_packets = bool(sources.get(track, Counter())["packet"] or unverified.get(track))
        needs = packets if gold is not None and from_packets else ()
        inputs = ConfigData(
            f"alpsbench_{track}",
            f"AlpsBench {track}: model input rows (benchmark_id, task, ids, input as JSON)"
            + (" of the verified packets." if gold is not None else "."),
            ALPS_INPUT_SCHEMA,
            id_column="benchmark_id",
            needs=needs,
        )
        gold_cfg = ConfigData(
            f"alpsbench_{track}_gold",
            f"AlpsBench {track}: gold rows of the dev and validation splits (gold as JSON"
            + ("; Task 1's is the verified gold)." if gold is not None else ")."),
            ALPS_GOLD_SCHEMA,
            id_column="benchmark_id",
            needs=needs,
        )
        hidden = ConfigData(
            f"alpsbench_{track}_gold",
            f"AlpsBench {track}: gold of the test split (private: withheld from the public release).",
            ALPS_GOLD_SCHEMA,
            id_column="benchmark_id",
            private=True,
            needs=needs,
        )
        if track in dropped:  # built rows: people's task_qc labels decide, so the label gates apply
            for cfg in (inputs, gold_cfg, hidden):
                cfg.needs = tuple(sorted({*cfg.needs, *judges}))
            for why, n in dropped[track].items():
                for _ in range(n):
                    inputs.drop(why)
        counted = sources.get(track, Counter())
        inputs.sources = {src: counted[src] for src in SOURCES if counted[src]}
        for split, (inp, ref) in assign_splits(pairs):
            inputs.add(split, {**inp, "input": canonical_json(inp["input"])})
            (hidden if split == "test" else gold_cfg).add(split, {**ref, "gold": canonical_json(ref["gold"])})
        for _pair in unverified.get(track, []):
            inputs.drop(UNVERIFIED_PACKET)
        out += [inputs.finish(), gold_cfg.finish(), hidden.finish()]
    if gold is not None:
        out += _alps_unverified(unverified)
    out.append(_alps_packets(store, gold, whole))
    return out


def _alps_unverified(unverified: Tracks) -> list[ConfigData]:
    """Packets nobody verified, every track in one config (their imported gold; test gold private)."""
    public = ConfigData(
        "alpsbench_unverified",
        "AlpsBench packets without verification: every track's input and (dev, validation) imported gold, "
        "one row per track and benchmark id.",
        ALPS_UNVERIFIED_SCHEMA,
    )
    hidden = ConfigData(
        "alpsbench_unverified_gold",
        "The test-split gold of the unverified AlpsBench packets (private: withheld from the public release).",
        _schema("id track benchmark_id gold"),
        private=True,
    )
    for track in sorted(unverified):
        for split, (inp, ref) in assign_splits(unverified[track]):
            rid = f"{track}:{inp['benchmark_id']}"
            shown = None if split == "test" else canonical_json(ref["gold"])
            public.add(
                split,
                {**inp, "id": rid, "track": track, "input": canonical_json(inp["input"]), "gold": shown},
            )
            if split == "test":
                hidden.add(
                    split,
                    {
                        "id": rid,
                        "track": track,
                        "benchmark_id": inp["benchmark_id"],
                        "gold": canonical_json(ref["gold"]),
                    },
                )
    return [public.finish(), hidden.finish()]


def _alps_packets(
    store: ProjectStore, gold: dict[str, dict[str, Any]] | None, whole: list[tuple[str, dict[str, Any]]]
) -> ConfigData:
    """The raw config: every packet whole, with what verification made of it (verified gold, rejected
    candidates with their reasons)."""
    packets = ConfigData(
        "alpsbench_packets",
        "Every imported AlpsBench annotation packet, whole (private: it holds the test gold), with its "
        "verification: verified gold memories and rejected candidates with the reason.",
        _schema("id relpath packet verification"),
        private=True,
    )
    relpaths = store.releases.packet_relpaths()
    for sid, pkt in whole:
        mine = (gold or {}).get(sid)
        verification = {"status": "verified", **mine} if mine else {"status": "unverified"}
        packets.add(
            "full",
            {
                "id": sid,
                "relpath": relpaths.get(sid, f"{sid}.json"),
                "packet": canonical_json(pkt),
                "verification": canonical_json(verification) if gold is not None else None,
            },
        )
    return packets.finish()


# -- human labels ---------------------------------------------------------------------------------------
def _typed(schema: pa.Schema, values: pa.DataType | None) -> pa.Schema:
    """The shared layout, or a declared kind's own with ``values`` typed (:func:`answers_type`)."""
    return (
        schema if values is None else schema.set(schema.get_field_index("values"), pa.field("values", values))
    )


def _values(values: dict[str, Any] | None, typed: bool) -> Any:
    return values if typed or values is None else canonical_json(values)


def labels_config(
    store: ProjectStore,
    pseudonym: Callable[[str], str],
    kind: str | None = None,
    values=None,
    withheld=frozenset(),
) -> ConfigData:
    """Each annotator's live label per task, one split per task kind; with ``kind`` and its typed
    ``values``, that kind's ``NAME_labels`` (the same rows, ``values`` a struct)."""
    cfg = ConfigData(
        f"{kind}_labels" if kind else "labels",
        "Each annotator's live label per task (pseudonymous annotator ids), one split per task kind"
        + ("." if kind is None else f"; `values` typed as the questions of {kind}."),
        _typed(_schema("id task_id kind annotator action values is_gold:bool time_spent_s:float"), values),
    )
    gold = {t.task_id for t in store.labels.tasks(kind=kind) if t.is_gold}
    for ev in store.labels.effective_events(kind):
        if ev.source == "judge" or ev.task_id in withheld:  # a judge's labels; a private test item's
            continue
        who = pseudonym(ev.annotator)
        cfg.add(
            ev.kind,
            {
                "id": f"{ev.task_id}:{who}",
                "task_id": ev.task_id,
                "kind": ev.kind,
                "annotator": who,
                "action": ev.action,
                "values": _values(ev.values, values is not None),
                "is_gold": ev.task_id in gold,
                "time_spent_s": ev.time_spent_s,
            },
        )
    return cfg.finish()


def final_labels_config(
    store: ProjectStore, kind: str | None = None, values=None, withheld=frozenset()
) -> ConfigData:
    cfg = ConfigData(
        f"{kind}_final_labels" if kind else "final_labels",
        "The final label of every task and how it was decided "
        "(single, unanimous, majority, dawid_skene, mace, adjudicated or undecided)"
        + ("." if kind is None else f"; `values` typed as the questions of {kind}."),
        _typed(_schema("id kind item_ref is_gold:bool decided_by n_labels:int values"), values),
    )
    tasks = {t.task_id: t for t in store.labels.tasks(kind=kind)}
    for name in sorted({t.kind for t in tasks.values()}):
        for task_id, fl in final_labels(store, name).items():
            if task_id in withheld:
                continue
            t = tasks[task_id]
            cfg.add(
                name,
                {
                    "id": task_id,
                    "kind": name,
                    "item_ref": t.item_ref,
                    "is_gold": t.is_gold,
                    "decided_by": fl.shown_decided_by,
                    "n_labels": fl.n_labels,
                    "values": _values(fl.values, values is not None),
                },
            )
    return cfg.finish()


def adjudications_config(
    store: ProjectStore,
    pseudonym: Callable[[str], str],
    kind: str | None = None,
    values=None,
    withheld=frozenset(),
) -> ConfigData:
    cfg = ConfigData(
        f"{kind}_adjudications" if kind else "adjudications",
        "Every maintainer decision (pseudonymous), with the one in force per task marked"
        + ("." if kind is None else f"; `values` typed as the questions of {kind}."),
        _typed(_schema("id task_id kind maintainer values note supersedes in_force:bool"), values),
    )
    kinds = {t.task_id: t.kind for t in store.labels.tasks()}
    in_force = {a.adjudication_id for a in effective_adjudications(store).values()}
    for a in store.labels.adjudications():
        if (kind is not None and kinds.get(a.task_id) != kind) or a.task_id in withheld:
            continue
        cfg.add(
            "log",
            {
                "id": a.adjudication_id,
                "task_id": a.task_id,
                "kind": kinds.get(a.task_id),
                "maintainer": pseudonym(a.maintainer),
                "values": _values(a.values, values is not None),
                "note": a.note,
                "supersedes": a.supersedes,
                "in_force": a.adjudication_id in in_force,
            },
        )
    return cfg.finish()


def build_configs(
    store: ProjectStore,
    only: list[str] | None = None,
    alps_reference: AlpsReference = "verified",
    min_labels: int | None = None,
    splits: dict[SplitName, float] | None = None,
) -> list[ConfigData]:
    """Every config the project holds content for, in a fixed order, including those whose rows were
    all dropped (``count == 0``, ``considered > 0``: written nowhere, but stated in the card and
    gated); a declared kind's configs come last. ``only`` (``[release] configs``) keeps the named configs (``alpsbench_*`` names a family);
    configs left out are not built at all."""
    salt = store.releases.annotator_salt()
    known = store.releases.pseudonyms()
    cache: dict[str, Any] = {}

    def pseudonym(name: str) -> str:
        return store.releases.pseudonym(name, salt, known)

    def statuses():
        if "statuses" not in cache:
            cache["statuses"] = session_statuses(store)
        return cache["statuses"]

    builders: dict[str, Callable[[], list[ConfigData]]] = {
        "cupid": lambda: [cupid_config(store, statuses())],
        "cupid_unverified": lambda: [cupid_unverified_config(store)],
        "cupid_raw": lambda: [cupid_raw_config(store, pseudonym, statuses())],
        "alpsbench_*": lambda: alpsbench_configs(store, alps_reference),
        "labels": lambda: [labels_config(store, pseudonym, withheld=withheld)],
        "final_labels": lambda: [final_labels_config(store, withheld=withheld)],
        "matching": lambda: [k.release_hook("matching")(store, k, pseudonym) for k in feeding("matching")],
        "adjudications": lambda: [adjudications_config(store, pseudonym, withheld=withheld)],
    }
    assert tuple(builders) == RELEASE_CONFIGS, "one builder per release config, in the list's order"
    kinds = tuple(sorted({t.kind for t in store.labels.tasks()}))
    withheld = {  # the private test items of declared kinds: no public config holds their labels
        t.task_id
        for k in declared_kinds()
        for t in store.labels.tasks(kind=k.name)
        if splits and item_split(t.item_ref, splits) == "test"
    }
    configs: list[ConfigData] = []
    for name, build in builders.items():
        if only is not None and not any(_may_select(name, o) for o in only):
            continue
        configs += build()
    for kind in declared_kinds():  # the project's kinds/*.toml: NAME, NAME_unverified, NAME_labels, ...
        if store.labels.tasks(kind=kind.name):
            typed = answers_type(kind, row=False)
            configs += declared_configs(store, kind, ConfigData, pseudonym, min_labels, splits)
            configs += [
                labels_config(store, pseudonym, kind.name, typed, withheld),
                final_labels_config(store, kind.name, typed, withheld),
                adjudications_config(store, pseudonym, kind.name, typed, withheld),
            ]
    for c in configs:
        if c.name in LABEL_CONFIGS:
            c.needs = kinds
    # a declared kind's private test answers go wherever its NAME config goes
    selected = lambda c: config_selected(c.name.removesuffix("_test_answers") if c.private else c.name, only)  # noqa: E731
    return [c for c in configs if c.considered and selected(c)]


def _may_select(name: str, entry: str) -> bool:
    """Whether the ``[release] configs`` entry can select a config built under ``name`` (a family
    such as ``alpsbench_*`` builds configs named by the data)."""
    if name.endswith("*"):
        family = name[:-1]
        return entry.startswith(family) or (entry.endswith("*") and family.startswith(entry[:-1]))
    return config_selected(name, [entry])
