"""AlpsBench tasks 2-4 from verified memories (``prefkit tasks build-alpsbench``): task 2 (update) by an
LLM continuing a dialogue, task 3 (retrieval) with distractors from other users' verified memories,
task 4 (use) checked for leakage; docs/alpsbench.md (*Task building*) says how each is made.

Verified memories are, per dialogue, the verified gold of its final ``memory_verify`` label, else its
imported expert-verified gold. Built rows go to the store in AlpsBench's public row shape; people check
them through ``task_qc`` tasks before a release ships them. This module never writes SQL and never
calls a model directly.
"""

from __future__ import annotations

import hashlib
import random
import re
import tomllib
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from prefkit.curation.quality.verification import verified_gold
from prefkit.curation.store import AlpsTask, Dialogue, DialogueTurn
from prefkit.pipelines.generation.prompting import run_validated
from prefkit.pipelines.memories.extract import _request
from prefkit.schemas.alpsbench_layout import DISTRACTOR_LEVELS, make_pair, packet_tracks
from prefkit.schemas.common import PrefkitError
from prefkit.schemas.extraction import SegmentMemory, UpdateDialogue, UserQuery

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

TASKS = ("task2", "task3", "task4")
#: AlpsBench's five task-4 abilities (paper section 2.4): what the generated query asks for, and which
#: memory labels each draws on. Checked against the abilities AlpsBench assigned to the selected memories
#: of its released packets (see ``ability_of``): persona awareness uses background, relationships,
#: long-term goals and past experiences; preference following uses preferences and possessions;
#: constraint following uses constraints and boundaries; emotional intelligence uses mental and physical
#: states. Virtual-reality awareness is not a label: it is any memory that comes from role-play or
#: fiction (``ROLE_PLAY``), whatever its label.
ABILITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    name: (ability["purpose"], tuple(ability["labels"]))
    for name, ability in tomllib.loads(
        resources.files(__package__).joinpath("abilities.toml").read_text(encoding="utf-8")
    ).items()
}
#: A memory whose value or reasoning says it comes from role-play or fiction (AlpsBench marks such
#: memories, e.g. "[ERROR: Role-play/third-party possible]").
ROLE_PLAY = re.compile(
    r"role[- ]?play|fictional|\bfiction\b|in[- ]character|virtual (?:world|context|setting)|pretend"
    r"|make[- ]believe|imaginary",
    re.IGNORECASE,
)
UPDATE_QUERY = (
    "Here are the memories stored about the user and a new conversation with them. Return the complete "
    "updated memory list: keep what still holds, update what the new conversation changes, add what it reveals."
)
_STOP = frozenset(
    ("the", "and", "for", "with", "that", "this", "from", "have", "about", "your", "their", "they", "them")
    + ("what", "when", "into", "like", "just", "very")
)


class BuildError(PrefkitError):
    """Tasks cannot be built (bad settings, or nothing verified to build from)."""


@dataclass(frozen=True)
class BuildConfig:
    tasks: tuple[str, ...] = TASKS
    distractors: tuple[int, ...] = DISTRACTOR_LEVELS
    seed: int = 0
    attempts: int = 2
    neutral_segments: int = 1
    limit: int | None = None  # at most this many dialogues

    def check(self) -> None:
        if unknown := set(self.tasks) - set(TASKS):
            raise BuildError(f"unknown task(s) {sorted(unknown)}; choose from {', '.join(TASKS)}")
        if not self.distractors or any(n < 1 for n in self.distractors):
            raise BuildError("distractor counts must be positive")
        if len(set(self.distractors)) != len(self.distractors):
            twice = next(n for n in self.distractors if self.distractors.count(n) > 1)
            raise BuildError(f"distractor count {twice} is given twice")
        if self.limit is not None and self.limit < 1:
            raise BuildError(f"limit must be >= 1, not {self.limit}")


@dataclass
class BuildReport:
    built: dict[str, int] = field(default_factory=dict)  # rows per track
    #: rows per track the imported packets carry themselves: those (track, session)s are not built
    from_packets: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    failed: list[str] = field(default_factory=list)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- verified memories ------------------------------------------------------------------------------------
def verified_memories(store: ProjectStore) -> dict[str, list[dict[str, Any]]]:
    """Per dialogue, the memories people stand behind (MemoryItem dicts with ``memory_id``): the
    verified gold of its final ``memory_verify`` label when it has one (accepted, edited and added
    memories, :func:`prefkit.curation.quality.verification.verified_gold`), else its imported gold."""
    out: dict[str, list[dict[str, Any]]] = {}
    for m in store.content.memories(origin="gold"):
        if m.record:
            out.setdefault(m.dialogue_id, []).append(m.record)
    for did, v in verified_gold(store).items():
        if v["memories"]:
            out[did] = list(v["memories"])
    return out


def user_of(dialogue: Dialogue) -> str:
    """Who a dialogue belongs to: the WildChat user key of its sequence, else the dialogue itself."""
    seq = dialogue.meta.get("sequence") or {}
    return seq.get("user") or dialogue.dialogue_id


def _rng(seed: int, *parts: str) -> random.Random:
    return random.Random(hashlib.sha256(":".join([str(seed), *parts]).encode()).hexdigest())


def _stem(word: str) -> str:
    """A crude English stem (loves -> love, planning -> plann): enough to catch a restated memory."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _words(text: str) -> set[str]:
    norm = unicodedata.normalize("NFKC", text).casefold()
    return {_stem(w) for w in re.findall(r"\w+", norm) if len(w) >= 4 and w not in _STOP}


def leakage(query: str, memory: dict[str, Any]) -> str | None:
    """Why ``query`` gives the memory away, or None: it contains the memory's statement or its quote,
    or most of the statement's content words."""
    q = " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", query).casefold()))
    value = " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", memory["value"]).casefold()))
    if value and value in q:
        return "the query contains the memory's statement"
    quote = ((memory.get("evidence") or {}).get("text") or "").strip()
    if len(quote) >= 12 and " ".join(re.findall(r"\w+", quote.casefold())) in q:
        return "the query repeats the memory's evidence quote"
    words = _words(memory["value"])
    if len(words) >= 2 and len(words & _words(query)) / len(words) >= 0.6:
        return f"the query repeats most of the memory's words ({', '.join(sorted(words & _words(query)))})"
    return None


def ability_of(memory: dict[str, Any]) -> str | None:
    """The task-4 ability a memory serves: ability3 when it comes from role-play or fiction, else by its
    label (see :data:`ABILITIES`); None when it fits none."""
    if ROLE_PLAY.search(f"{memory.get('value') or ''} {memory.get('reasoning') or ''}"):
        return "ability3"
    label = memory.get("label") or ""
    for ability, (_purpose, prefixes) in ABILITIES.items():
        if any(label == p or label.startswith(p) for p in prefixes):
            return ability
    return None


def stratified_sample(pool: list[dict[str, Any]], n: int, rng: random.Random) -> list[dict[str, Any]] | None:
    """``n`` items of ``pool`` with each label's share as in the pool (largest remainder), or None when
    the pool is smaller than ``n``."""
    if len(pool) < n:
        return None
    by_label: dict[str, list[dict[str, Any]]] = {}
    for m in pool:
        by_label.setdefault(m["label"], []).append(m)
    labels = sorted(by_label)
    exact = {lb: n * len(by_label[lb]) / len(pool) for lb in labels}
    take = {lb: int(exact[lb]) for lb in labels}
    for lb in sorted(labels, key=lambda lb: (-(exact[lb] - take[lb]), lb))[: n - sum(take.values())]:
        take[lb] += 1
    out = []
    for lb in labels:
        out += rng.sample(by_label[lb], take[lb])
    return out


# -- building ---------------------------------------------------------------------------------------------
def _brief(m: dict[str, Any], mid: str) -> dict[str, Any]:
    return {"memory_id": mid, "label": m["label"], "value": m["value"]}


def _dialogue_rows(turns: list[DialogueTurn]) -> list[dict[str, Any]]:
    return [{"role": t.role, "text": t.content} for t in turns]


def _query_request(did: str, purpose_key: str, purpose: str, memory: dict, turns: list[DialogueTurn]) -> Any:
    first_user = next((t.content[:300] for t in turns if t.role == "user"), "")
    ctx = {"memory": memory, "purpose": purpose, "recent": first_user}
    return _request("alpsbench.query", f"{did}:{purpose_key}", "writer", "query", UserQuery, ctx)


def build_alpsbench(store: ProjectStore, layer, cfg: BuildConfig | None = None) -> BuildReport:
    """Build the configured tasks for every dialogue with verified memories; returns counts."""
    cfg = cfg or BuildConfig()
    cfg.check()
    verified = verified_memories(store)
    if not verified:
        raise BuildError("no verified memories: import AlpsBench gold or finish memory_verify labels first")
    report = BuildReport()
    have = {(r.track, r.benchmark_id) for r in store.alps_tasks.tasks()}
    # The packets' published rows are the source (schemas.alpsbench_layout.SOURCES): the build fills
    # only the (track, session)s no packet carries. Built rows are keyed by the session (= benchmark id).
    for p in store.content.packets():
        for track in packet_tracks(p.extra):
            if track != "task1":
                have.add((track, p.session_id))
                report.from_packets[track] = report.from_packets.get(track, 0) + 1
    ids = sorted(verified)[: cfg.limit] if cfg.limit else sorted(verified)
    dialogues = {did: store.content.dialogue(did) for did in ids}
    owners = {did: user_of(dialogues.get(did) or store.content.dialogue(did)) for did in verified}
    pool = [{**m, "_user": owners[did]} for did, mems in verified.items() for m in mems]
    if "task3" in cfg.tasks or "task4" in cfg.tasks:
        _build_queries(store, layer, cfg, dialogues, verified, owners, pool, have, report)
    if "task2" in cfg.tasks:
        _build_updates(store, layer, cfg, dialogues, verified, have, report)
    return report


def _build_queries(store: ProjectStore, layer, cfg, dialogues, verified, owners, pool, have, report) -> None:
    jobs = []  # (dialogue id, purpose key, memory)
    for did in dialogues:
        mems = verified[did]
        if "task3" in cfg.tasks and any((f"task3_d{n}", did) not in have for n in cfg.distractors):
            jobs.append((did, "task3", _rng(cfg.seed, did, "task3").choice(mems)))
        if "task4" in cfg.tasks:
            for ability in ABILITIES:
                fits = [m for m in mems if ability_of(m) == ability]
                if fits and (f"task4_{ability}", did) not in have:
                    jobs.append((did, f"task4_{ability}", _rng(cfg.seed, did, ability).choice(fits)))
    requests = []
    for did, key, memory in jobs:
        purpose = "asking for help where this fact should change the answer"
        if key.startswith("task4_"):
            purpose = ABILITIES[key.removeprefix("task4_")][0]
        requests.append(_query_request(did, key, purpose, memory, dialogues[did].turns))

    def check(i: int, answer: UserQuery) -> str:
        why = leakage(answer.query, jobs[i][2])
        if why:
            raise ValueError(f"query: {why}")
        return answer.query.strip()

    outcomes = run_validated(layer, store, requests, check, cfg.attempts, "alpsbench: queries")
    for (did, key, memory), o in zip(jobs, outcomes, strict=True):
        if not o.ok:
            report.failed.append(f"{did}:{key}")
            continue
        prov = o.provenance.model_copy(update={"source": "build.alpsbench"})
        d = dialogues[did]
        rows = (
            _task3_rows(cfg, did, d, memory, o.value, owners[did], pool, have, report)
            if key == "task3"
            else [_task4_row(did, d, key, memory, o.value)]
        )
        for r in rows:
            report.built[r.track] = report.built.get(r.track, 0) + 1
        store.alps_tasks.add(rows, prov)


def _task3_rows(cfg, did, d, positive, query, owner, pool, have, report) -> list[AlpsTask]:
    others = [
        m
        for m in pool
        if m["_user"] != owner and m["value"].strip().casefold() != positive["value"].strip().casefold()
    ]
    rows = []
    for n in cfg.distractors:
        track = f"task3_d{n}"
        if (track, did) in have:
            continue
        rng = _rng(cfg.seed, did, track)
        distractors = stratified_sample(others, n, rng)
        if distractors is None:
            report.skip(f"{track}: fewer than {n} memories of other users")
            continue
        cands = [positive, *distractors]
        rng.shuffle(cands)
        briefs = [_brief(m, f"c{i + 1}") for i, m in enumerate(cands)]
        pos_id = briefs[next(i for i, m in enumerate(cands) if m is positive)]["memory_id"]
        inp, gold = make_pair(
            "task3",
            did,
            did,
            None,
            positive["label"],
            {"query": query, "candidate_memories": briefs},
            {"selected_memory_id": pos_id, "selected_memory": _brief(positive, pos_id)},
        )
        users = {m["_user"] for m in distractors}
        if owner in users:  # the pool excludes the owner; this guards the rule against later edits
            raise BuildError(f"{did}: a distractor of {track} belongs to the same user")
        checks = {"owner": owner, "distractor_users": len(users)}
        rows.append(AlpsTask.built(track, inp, gold, checks))
    return rows


def _task4_row(did, d, key, memory, query) -> AlpsTask:
    ability = key.removeprefix("task4_")
    mem = _brief(memory, memory["memory_id"])
    model_input = {"query": query, "queries": [{"query_id": f"{did}:{ability}:1", "query": query}]}
    if ability == "ability1":
        model_input["selected_memory"] = mem
    else:
        model_input["dialogue_history"] = _dialogue_rows(d.turns)
    inp, gold = make_pair(
        "task4",
        did,
        did,
        None,
        memory["label"],
        model_input,
        {"selected_memory_id": memory["memory_id"], "selected_memory": mem},
        ability=ability,
    )
    return AlpsTask.built(key, inp, gold, {"leakage": "none found"})


def _build_updates(store: ProjectStore, layer, cfg, dialogues, verified, have, report) -> None:
    jobs = []
    for did, d in dialogues.items():
        if ("task2", did) in have:
            continue
        mems = verified[did]
        target = _rng(cfg.seed, did, "task2").choice(mems)
        ctx = {
            "turns": [{"role": t.role, "content": t.content[:600]} for t in d.turns[-6:]],
            "memories": mems,
            "target": target,
            "n_segments": cfg.neutral_segments + 2,
        }
        jobs.append((did, target, _request("alpsbench.update", did, "writer", "update", UpdateDialogue, ctx)))

    def check(i: int, answer: UpdateDialogue) -> UpdateDialogue:
        kinds = Counter(s.kind for s in answer.segments)
        if kinds["new"] != 1 or kinds["conflict"] != 1 or kinds["neutral"] < 1:
            raise ValueError(
                f"segments: need exactly one new, one conflict and neutral ones, got {dict(kinds)}"
            )
        for k, s in enumerate(answer.segments):
            if s.turns[0].role != "user":
                raise ValueError(f"segments.{k}.turns.0.role: a segment starts with the user")
            if (s.kind == "neutral") != (s.memory is None):
                raise ValueError(f"segments.{k}.memory: only new and conflict segments carry a memory")
        return answer

    outcomes = run_validated(layer, store, [j[2] for j in jobs], check, cfg.attempts, "alpsbench: updates")
    for (did, target, _req), o in zip(jobs, outcomes, strict=True):
        if not o.ok:
            report.failed.append(f"{did}:task2")
            continue
        row = _task2_row(did, dialogues[did], verified[did], target, o.value)
        store.alps_tasks.add([row], o.provenance.model_copy(update={"source": "build.alpsbench"}))
        report.built["task2"] = report.built.get("task2", 0) + 1


def _segment_memory(answer: UpdateDialogue, kind: str) -> SegmentMemory:
    """The memory of the answer's ``kind`` segment (a validated answer has one with a memory)."""
    found = next((s.memory for s in answer.segments if s.kind == kind and s.memory is not None), None)
    if found is None:
        raise ValueError(f"the update dialogue has no {kind} segment with a memory")
    return found


def _task2_row(did, d, mems, target, answer: UpdateDialogue) -> AlpsTask:
    new_dialogue: list[dict[str, str]] = []
    segments: list[dict[str, Any]] = []
    for s in answer.segments:
        start = len(new_dialogue)
        new_dialogue += [{"role": t.role, "text": t.text} for t in s.turns]
        segments.append({"kind": s.kind, "turns": [start, len(new_dialogue) - 1]})
    final = []
    for m in mems:
        if m is target:
            c = _segment_memory(answer, "conflict")
            final.append(
                {
                    **m,
                    "memory_id": f"{m['memory_id']}_updated",
                    "value": c.value,
                    "type": c.type,
                    "preference_attitude": "update",
                }
            )
        else:
            final.append(m)
    n = _segment_memory(answer, "new")
    final.append({"memory_id": "m_new1", "type": n.type, "label": n.label, "value": n.value})
    inp, gold = make_pair(
        "task2",
        did,
        did,
        None,
        target["label"],
        {
            "old_dialogue": _dialogue_rows(d.turns),
            "new_dialogue": new_dialogue,
            "memory": mems,
            "query": UPDATE_QUERY,
        },
        {"answer": final, "selected_memory_id": target["memory_id"]},
    )
    return AlpsTask.built("task2", inp, gold, {"segments": segments})
