"""Small CUPID and AlpsBench releases for the evaluation tests, built in the release layout.

Hidden fields (context factors, preferences, checklist items) carry marker words that never occur in
dialogue text, so a test can check that none of them reached the evaluated model.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefkit.schemas.cupid import BenchmarkInstance

TYPES = ("consistent", "contrastive", "changing")
HIDDEN_MARK = "zqx"  # appears only in hidden fields


def instance(pid: str, itype: str, n_sessions: int = 4, relevant: tuple[int, ...] = (1,)) -> dict:
    factor = f"{HIDDEN_MARK}factor-{pid}-{itype}"
    prior = []
    for i in range(n_sessions):
        prior.append(
            {
                "context_factor": factor if i in relevant else f"{HIDDEN_MARK}other-{i}",
                "contextual_preference": f"{HIDDEN_MARK}pref-{pid}-{i}",
                "dialogue": [
                    {"role": "user", "content": f"Session {i} of {pid}: plan my weekend trip please."},
                    {"role": "assistant", "content": "Here is a detailed plan with many options."},
                    {"role": "user", "content": f"Shorter please, bullet points only ({pid} {itype} {i})."},
                ],
            }
        )
    row = {
        "persona_id": pid,
        "instance_type": itype,
        "current_request": f"Plan a day out for {pid} ({itype}).",
        "current_context_factor": factor,
        "current_contextual_preference": f"{HIDDEN_MARK}gold short bullet answers for {pid} {itype}",
        "current_checklist": [
            f"Does the reply for {pid} {itype} use {HIDDEN_MARK} bullets?",
            f"Is the reply for {pid} {itype} {HIDDEN_MARK} short?",
        ],
        "prior_interactions": prior,
    }
    return BenchmarkInstance.model_validate(row).model_dump(mode="json")


def cupid_release(root: Path, personas: int = 2, config: str = "cupid", version: str = "1.0.0") -> Path:
    """``root/releases/<version>`` with ``data/<config>/test.jsonl`` and a manifest."""
    rel = Path(root) / "releases" / version
    rows = [instance(f"p{i}", t, relevant=(i % 4,)) for i in range(personas) for t in TYPES]
    write_config(rel, config, "test", rows)
    (rel / "manifest.json").write_text(json.dumps({"name": "evaltest", "version": version}), encoding="utf-8")
    return rel


def write_config(rel: Path, config: str, split: str, rows: list[dict]) -> Path:
    path = rel / "data" / config / f"{split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def mem(
    mid: str, value: str, label: str = "Preferences/Food", type_: str = "direct", conf: float = 0.9, **extra
):
    """An AlpsBench memory item (``extra`` adds fields such as ``preference_attitude``)."""
    return {"memory_id": mid, "type": type_, "label": label, "value": value, "confidence": conf, **extra}


TEA = mem("m1", "Prefers green tea in the morning")
RUN = mem("m2", "Runs five kilometres every Sunday", label="Activities/Sport")
JAZZ = mem("m3", "Plays jazz piano in a band", label="Personal_Background/Hobbies")


def row(bid: str, task: str, inp: dict, gold: dict) -> dict:
    return {"benchmark_id": bid, "task": task, "input": inp, "gold": gold}


def task1(bid: str, *gold_items: dict) -> dict:
    """A task 1 row (memory extraction) over an empty dialogue whose gold is ``gold_items``."""
    return row(bid, "task1", {"dialogue": []}, {"memory_items": list(gold_items)})


def alps_release(tmp_path: Path, split: str, rows: list[dict], config: str = "alpsbench") -> Path:
    """``tmp_path/rel`` holding ``rows`` as the ``split`` of one AlpsBench config."""
    rel = tmp_path / "rel"
    write_config(rel, config, split, rows)
    return rel
