"""AlpsBench's public data layout inside a release: ``benchmark_data/<split>/<track>/`` with
``model_input.jsonl`` and ``reference_output.jsonl``, as ThisIsCosine/AlpsBench's ``src/benchmark/data.py``
writes it, so its ``scripts/evaluate.py`` (and anything else written for that layout) reads a prefkit
release unchanged: copy ``benchmark_data/`` over a checkout's.

- Splits ``examples`` (the first two dev rows of each track, in id order; they are also in dev, as
  upstream's examples are in its splits; never a test row, whose reference is private), ``dev``, ``validation``, ``test``; ``test`` has no ``reference_output.jsonl``:
  its references go to ``releases-private/<version>/hidden/private_gold/test/<track>/`` (upstream's
  ``hidden/private_gold``), never into the release.
- Task 3 tracks live under ``task3/d<N>/``; the others under their track name.
- Rows are nested JSON objects with upstream's fields per task (:data:`FIELDS`), in upstream's key
  order; ``ability`` is a field of task 4 rows only. prefkit's extra facts go only where the format has
  room: the ``metadata`` object of task 1-3 inputs (keys ``prefkit_*``). Gold-side extras that have no
  place (task 2's ``selected_memory_id``) stay in prefkit's own ``alpsbench_*`` configs.

Built from the release's ``alpsbench_<track>`` / ``alpsbench_<track>_gold`` configs; this module only
shapes rows and writes files.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from prefkit.exports.writers import atomic_write_bytes

EXAMPLES = 2  # rows per track in the examples split (upstream's TASK1_EXAMPLE_COUNT / TASK2_EXAMPLE_COUNT)

#: The fields of every row, per task, as the public layout has them: (top-level keys, keys of ``input``
#: or ``gold``), from alpsbench_public.toml beside this module.
FIELDS: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    task: {part: (tuple(top), tuple(inner)) for part, (top, inner) in parts.items()}
    for task, parts in tomllib.loads(
        resources.files(__package__).joinpath("alpsbench_public.toml").read_text(encoding="utf-8")
    ).items()
}

Dialogues = Callable[[str], list[dict[str, Any]]]


def track_dir(split: str, track: str) -> str:
    """``benchmark_data/<split>/task3/d100`` for task 3 levels, else ``benchmark_data/<split>/<track>``."""
    if track.startswith("task3_d"):
        return f"benchmark_data/{split}/task3/{track.split('_', 1)[1]}"
    return f"benchmark_data/{split}/{track}"


def _turns(value: Any) -> list[dict[str, Any]]:
    return [
        {"role": t.get("role"), "text": t.get("text", t.get("content"))}
        for t in value or []
        if isinstance(t, dict)
    ]


def public_rows(
    track: str, row: dict[str, Any], gold: dict[str, Any], dialogue_of: Dialogues
) -> tuple[dict, dict]:
    """One (model_input row, reference_output row) pair in the public shape, from prefkit's rows."""
    task, inp = track[:5], row["input"]
    head = {"benchmark_id": row["benchmark_id"], "task": task}
    ids = {"session_id": row["session_id"], "canonical_id": row["canonical_id"]}
    dialogue = _turns(
        inp.get("dialogue") or inp.get("old_dialogue") or inp.get("dialogue_history")
    ) or dialogue_of(row["session_id"])
    meta = {"session_id": row["session_id"]}
    model: dict[str, Any]
    ref: dict[str, Any]
    if task == "task1":
        extra = {"prefkit_query": inp["query"]} if inp.get("query") else {}
        model = {
            "user_id": None,
            "line_index": None,
            "sessions": [{"session_id": row["session_id"], "turns": dialogue}],
            "dialogue": dialogue,
            "metadata": {"match": None, "source_dataset_file": None, **extra},
        }
        ref = {
            "memory_items": gold.get("memory_items") or [],
            "memory_stage1_candidates": [],
            "selected_memory_id": None,
        }
    elif task == "task2":
        model = {
            "record_id": row["benchmark_id"],
            "old_dialogue": _turns(inp.get("old_dialogue")),
            "new_dialogue": _turns(inp.get("new_dialogue")),
            "memory": inp.get("memory") or [],
            "query": inp.get("query"),
            "metadata": meta,
        }
        ref = {"answer": gold.get("answer") or []}
    elif task == "task3":
        model = {
            "dialogue": dialogue,
            "candidate_memories": inp.get("candidate_memories") or [],
            "query": inp.get("query"),
            "metadata": {**meta, "prefkit_track": track},
        }
        ref = {
            "selected_memory_id": gold.get("selected_memory_id"),
            "selected_memory": gold.get("selected_memory") or {},
        }
    else:
        ability = row.get("ability") or track.split("_", 1)[1]
        query = inp.get("query") or ""
        seen: dict[str, Any] = {"query": query}
        if ability == "ability1":
            seen["selected_memory"] = inp.get("selected_memory") or gold.get("selected_memory") or {}
        else:
            seen["dialogue_history"] = dialogue
        model = {
            "query": query,
            "queries": inp.get("queries") or [],
            "model_input": seen,
            "audit_context": {"conversation": dialogue, "source_dataset_file": None},
        }
        selected = gold.get("selected_memory") or {}
        ref = {
            "memory_key": gold.get("selected_memory_id"),
            "selected_memory": selected,
            "extracted_memory": [selected] if selected else [],
            "conversation": dialogue,
        }
        return (
            {**head, "ability": ability, **ids, "stratum": row.get("stratum") or "UNKNOWN", "input": model},
            {**head, "ability": ability, **ids, "gold": ref},
        )
    return {**head, **ids, "stratum": row.get("stratum") or "UNKNOWN", "input": model}, {
        **head,
        **ids,
        "gold": ref,
    }


def _lines(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def layout_files(configs, dialogue_of: Dialogues) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """``({public path: bytes}, {private path: bytes})`` of the layout, from the release's AlpsBench
    track configs (input, public gold, private test gold)."""
    inputs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    golds: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for cfg in configs:
        name = cfg.name.removeprefix("alpsbench_")
        if not cfg.name.startswith("alpsbench_task") or "unverified" in name:
            continue
        target = golds if name.endswith("_gold") else inputs
        track = name.removesuffix("_gold")
        for split, lines in cfg.splits.items():
            target.setdefault(track, {}).setdefault(split, []).extend(json.loads(line) for line in lines)
    public: dict[str, bytes] = {}
    private: dict[str, bytes] = {}
    for track, splits in sorted(inputs.items()):
        gold_by_id = {
            g["benchmark_id"]: _obj(g["gold"]) for rows in golds.get(track, {}).values() for g in rows
        }
        pairs = {
            s: [
                public_rows(
                    track,
                    {**r, "input": _obj(r["input"])},
                    gold_by_id.get(r["benchmark_id"], {}),
                    dialogue_of,
                )
                for r in rows
            ]
            for s, rows in splits.items()
        }
        # Examples come from dev only: a test row there would publish its reference.
        examples = sorted(pairs.get("dev", []), key=lambda p: p[0]["benchmark_id"])[:EXAMPLES]
        for split, rows in (
            ("examples", examples),
            *((s, pairs.get(s, [])) for s in ("dev", "validation", "test")),
        ):
            if not rows:
                continue
            where = track_dir(split, track)
            public[f"{where}/model_input.jsonl"] = _lines([i for i, _r in rows])
            refs = _lines([r for _i, r in rows])
            if split == "test":
                private[f"hidden/private_gold/test/{where.split('/', 2)[2]}/reference_output.jsonl"] = refs
            else:
                public[f"{where}/reference_output.jsonl"] = refs
    return public, private


def _obj(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value or {})


def write_files(root: Path, files: dict[str, bytes]) -> list[Path]:
    out = []
    for rel, data in sorted(files.items()):
        atomic_write_bytes(root / rel, data)
        out.append(root / rel)
    return out
