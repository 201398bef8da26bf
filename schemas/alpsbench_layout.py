"""AlpsBench's public layout: row shapes, stable benchmark ids and the dev / validation / test rule.

Every track has input rows ``{benchmark_id, task, session_id, canonical_id, stratum, ability, input}``
and gold rows ``{benchmark_id, task, session_id, canonical_id, ability, gold}``. Tracks: ``task1``,
``task2``, ``task3_d100`` .. ``task3_d1000``, ``task4_ability1`` .. ``task4_ability5``.

Splits follow AlpsBench's own rule, per track: rank rows by sha256(``alpsbench-public-split-v1:`` +
benchmark_id), then give the first ``n // 5`` to dev, the next ``n // 5`` to validation and the rest to
test (exact 1:1:3 quotas; ties keep input order). A benchmark id depends only on the session (and the
canonical id for task 1), so a row keeps its id, and its split as long as its track's size is
unchanged, across re-releases. This module only shapes rows; it never reads or writes the store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from prefkit.schemas.common import canonical_json

SPLIT_SALT = "alpsbench-public-split-v1"
SPLIT_WEIGHTS = (("dev", 1), ("validation", 1), ("test", 3))
DISTRACTOR_LEVELS = (100, 300, 500, 700, 1000)

Pair = tuple[dict[str, Any], dict[str, Any]]


def split_rank(benchmark_id: str) -> str:
    return hashlib.sha256(f"{SPLIT_SALT}:{benchmark_id}".encode()).hexdigest()


def split_counts(total: int) -> dict[str, int]:
    """Rows per split for a track of ``total`` rows: dev and validation ``total // 5`` each, test the rest."""
    unit = total // sum(w for _, w in SPLIT_WEIGHTS)
    counts = {name: unit * w for name, w in SPLIT_WEIGHTS if name != "test"}
    counts["test"] = total - sum(counts.values())
    return counts


def gold_key(gold: Any) -> str | None:
    """What makes two rows' answers the same (their gold as canonical JSON), or None for a gold that
    holds nothing (every value empty), which reveals nothing."""
    if isinstance(gold, dict) and any(v not in (None, "", [], {}) for v in gold.values()):
        return canonical_json(gold)
    return None


def assign_splits(pairs: Iterable[Pair]) -> list[tuple[str, Pair]]:
    """``(split, pair)`` for every pair of one track, by AlpsBench's rule (see the module docstring),
    with one addition: rows whose gold is the same (one session asked twice about one memory) share a
    split, so a public row never gives away a test row's answer. Rows go, in rank order, to the first
    split with room for their whole group (a group ranks at its first row); with every gold distinct
    this is AlpsBench's rule exactly, and the quotas stay exact while single rows remain to fill them."""
    ranked = sorted(
        ((split_rank(p[0]["benchmark_id"]), i, p) for i, p in enumerate(pairs)), key=lambda x: (x[0], x[1])
    )
    seen: set[str] = set()
    for _r, _i, p in ranked:
        if p[0]["benchmark_id"] in seen:
            raise ValueError(f"benchmark_id {p[0]['benchmark_id']!r} appears twice in one track")
        seen.add(p[0]["benchmark_id"])
    groups: dict[str, list[Pair]] = {}
    order: list[list[Pair]] = []
    for _r, _i, p in ranked:
        key = gold_key(p[1].get("gold"))
        if key is None:
            order.append([p])
        elif key in groups:
            groups[key].append(p)
        else:
            groups[key] = [p]
            order.append(groups[key])
    room = split_counts(len(ranked))
    placed: dict[str, list[Pair]] = {name: [] for name, _w in SPLIT_WEIGHTS}
    for group in order:
        name = next((n for n, _w in SPLIT_WEIGHTS if room[n] >= len(group)), "test")
        placed[name] += group
        room[name] -= len(group)
    return [(name, p) for name, _w in SPLIT_WEIGHTS for p in placed[name]]


def make_pair(
    task: str,
    benchmark_id: str,
    session_id: str,
    canonical_id: str | None,
    stratum: str | None,
    model_input: dict[str, Any],
    gold: dict[str, Any],
    ability: str | None = None,
) -> Pair:
    ids = {"session_id": session_id, "canonical_id": canonical_id or session_id}
    head = {"benchmark_id": benchmark_id, "task": task, **ids}
    return (
        {**head, "stratum": stratum or "UNKNOWN", "ability": ability, "input": model_input},
        {**head, "ability": ability, "gold": gold},
    )


def task1_benchmark_id(session_id: str, canonical_id: str | None) -> str:
    return f"{session_id}__{canonical_id}" if canonical_id else session_id


#: Where the two sources of a track's rows meet. A packet that carries a track publishes that track's
#: rows for its session: AlpsBench's own, human-curated, and they are the source. ``build-alpsbench``
#: builds a (track, session) only where no packet carries it, and a release leaves out a built row whose
#: (track, session) a packet carries (imported after the build), counting it in the card.
SOURCES = ("packet", "built")


def packet_tracks(pkt: dict[str, Any]) -> set[str]:
    """The tracks a packet (as imported, or its stored remainder) carries rows of: what
    :func:`packet_pairs` makes, without building the rows."""
    t1, t2, t3 = pkt.get("task1") or {}, pkt.get("task2") or {}, pkt.get("task3") or {}
    out = set()
    if "ground_truth_memories" in t1 or t1.get("_has_ground_truth"):
        out.add("task1")
    if t2.get("new_dialogue"):
        out.add("task2")
    if t3.get("candidate_memories"):
        out.add(f"task3_d{len(t3['candidate_memories']) - 1}")
    out |= {f"task4_{entry.get('ability') or 'unknown'}" for entry in pkt.get("task4") or []}
    return out


def packet_pairs(pkt: dict[str, Any]) -> dict[str, list[Pair]]:
    """The public-layout pairs of one imported AlpsBench packet, per track."""
    sid = pkt["session_id"]
    t1, t2, t3 = pkt.get("task1") or {}, pkt.get("task2") or {}, pkt.get("task3") or {}
    out: dict[str, list[Pair]] = {}
    if "ground_truth_memories" in t1:
        out["task1"] = [
            make_pair(
                "task1",
                task1_benchmark_id(sid, t1.get("canonical_id")),
                sid,
                t1.get("canonical_id"),
                t1.get("stratum"),
                {"dialogue": pkt["dialogue"], "query": t1.get("memory_extraction_query")},
                {"memory_items": t1["ground_truth_memories"]},
            )
        ]
    if t2.get("new_dialogue"):
        out["task2"] = [
            make_pair(
                "task2",
                sid,
                sid,
                t2.get("canonical_id"),
                t2.get("stratum"),
                {
                    "old_dialogue": pkt["dialogue"],
                    "new_dialogue": t2.get("new_dialogue"),
                    "memory": t2.get("memory_pool_before_update"),
                    "query": t2.get("memory_update_query"),
                },
                {"answer": t2.get("golden_answer"), "selected_memory_id": t2.get("task2_selected_memory_id")},
            )
        ]
    if t3.get("candidate_memories"):
        out[f"task3_d{len(t3['candidate_memories']) - 1}"] = [
            make_pair(
                "task3",
                sid,
                sid,
                t3.get("canonical_id"),
                t3.get("stratum"),
                {"query": t3.get("query"), "candidate_memories": t3["candidate_memories"]},
                {
                    "selected_memory_id": t3.get("task3_selected_memory_id"),
                    "selected_memory": t3.get("task3_selected_memory"),
                },
            )
        ]
    entries = pkt.get("task4") or []
    per_ability: dict[str, int] = {}
    for entry in entries:
        per_ability[entry.get("ability") or "unknown"] = (
            per_ability.get(entry.get("ability") or "unknown", 0) + 1
        )
    for k, entry in enumerate(entries):
        ability = entry.get("ability") or "unknown"
        # A session tested several times for one ability: the first query's id tells the rows apart.
        queries = entry.get("queries") or []
        qid = queries[0].get("query_id") if queries and isinstance(queries[0], dict) else None
        bid = sid if per_ability[ability] == 1 else f"{sid}__{qid or k}"
        first = queries[0].get("query") if queries and isinstance(queries[0], dict) else None
        out.setdefault(f"task4_{ability}", []).append(
            make_pair(
                "task4",
                bid,
                sid,
                t1.get("canonical_id"),
                t1.get("stratum"),
                {"query": first, "queries": queries, "dialogue_history": pkt["dialogue"]},
                {
                    "selected_memory_id": entry.get("task4_selected_memory_id"),
                    "selected_memory": entry.get("task4_selected_memory"),
                },
                ability=ability,
            )
        )
    return out
