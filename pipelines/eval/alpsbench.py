"""AlpsBench on a release: read its rows, run a model or read a predictions.jsonl, score per task.

Rows follow AlpsBench's public layout: ``{"benchmark_id", "task", ..., "input": {...}}`` with the gold
in ``"gold": {...}`` (task 1 ``memory_items``; task 2 ``answer``; task 3 ``selected_memory_id``; task 4
``selected_memory``), under ``data/<config>/<split>.jsonl``. Releases cut before that layout (one
config per track, ``model_input`` / ``reference_output`` as JSON text) are read too. The gold of the
``test`` split is read only from a private config (a config whose name contains ``private``): a public
config's test gold, if any, is ignored. Predictions follow AlpsBench's prediction contract (one line per
``benchmark_id``). This module never writes SQL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefkit.pipelines.eval import alps_metrics as metrics
from prefkit.pipelines.eval import alps_paper, alps_public
from prefkit.pipelines.eval.prompting import build_request
from prefkit.pipelines.eval.release import (
    EvalInputError,
    ReleaseRef,
    check_line_protocol,
    jsonl_lines,
    release_ref,
)
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.common import validation_line
from prefkit.schemas.evaluation import (
    AlpsPrediction,
    GroundedAnswer,
    MemoryList,
    RetrievalAnswer,
    ScoredAnswer,
)
from pydantic import ValidationError

TASKS = ("task1", "task2", "task3", "task4")
TEMPLATES = {
    "task1": ("alps_task1",),
    "task2": ("alps_task2",),
    "task3": ("alps_task3",),
    "task4": ("alps_task4", "alps_judge_task4"),
}
STAGE = "eval.alps"


@dataclass
class AlpsRow:
    """One benchmark row. Rows are keyed by ``track:benchmark_id`` (:attr:`key`): AlpsBench gives the
    same session the same id in each distractor level of task 3."""

    benchmark_id: str
    task: str  # task1 .. task4
    group: str  # task1/task2: "all"; task3: "d100"...; task4: "ability1"...
    input: dict[str, Any]
    gold: dict[str, Any] | None
    track: str = ""

    @property
    def key(self) -> str:
        return f"{self.track}:{self.benchmark_id}"


def _json_field(value: Any, where: str, name: str) -> Any:
    """A field that the layout stores as JSON text (``input``, ``gold``) or as an object."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise EvalInputError(f"{where}: field {name}: not valid JSON text ({exc.msg})") from None


def track_of(config: str, row: dict[str, Any]) -> str:
    """The public track (``task1``, ``task3_d100``, ``task4_ability2``, ...): from the config name
    (``alpsbench_<track>``, ``alpsbench_<track>_gold``), else the row's ``track`` / ``task``."""
    name = re.sub(r"_(gold|private)$", "", re.sub(r"_(gold|private)$", "", config))
    name = re.sub(r"^alpsbench_", "", name)
    if re.match(r"task[1-4]", name):
        return name
    return str(row.get("track") or row.get("task") or "")


def _group(task: str, track: str, inp: dict[str, Any], row: dict[str, Any]) -> str:
    if task == "task3":
        m = re.search(r"_d(\d+)$", track)
        if m:
            return f"d{m.group(1)}"
        return f"d{max(0, len(inp.get('candidate_memories') or []) - 1)}"
    if task == "task4":
        m = re.search(r"(ability\d+)", track)
        return m.group(1) if m else str(row.get("ability") or "unknown")
    return "all"


@dataclass
class _Line:
    benchmark_id: str
    task: str
    track: str
    input: dict[str, Any] | None
    gold: dict[str, Any] | None


def parse_line(config: str, row: dict[str, Any], where: str) -> _Line:
    """One row of an input config, a gold config, or a row holding both (or the pre-layout
    ``model_input`` / ``reference_output`` shape)."""
    if "model_input" in row:
        bid = row.get("id")
        inp = _json_field(row["model_input"], where, "model_input")
        gold = _json_field(row.get("reference_output"), where, "reference_output")
    else:
        bid = row.get("benchmark_id")
        inp = _json_field(row.get("input"), where, "input")
        gold = _json_field(row.get("gold"), where, "gold")
    if not isinstance(bid, str) or not bid:
        raise EvalInputError(f"{where}: field benchmark_id: required, a non-empty string")
    if inp is None and gold is None:
        raise EvalInputError(f"{where}: neither input nor gold: not an AlpsBench row")
    for name, value in (("input", inp), ("gold", gold)):
        if value is not None and not isinstance(value, dict):
            raise EvalInputError(f"{where}: field {name}: expected a JSON object")
    track = track_of(config, row)
    if track[:5] not in TASKS:
        raise EvalInputError(f"{where}: cannot tell the task of the row (config {config!r}, task {track!r})")
    return _Line(bid, track[:5], track, inp, gold)


def _config_dirs(root: Path, prefix: str) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir()
        and p.name.startswith(prefix)
        and p.name != "alpsbench_packets"
        and ("unverified" in prefix or "unverified" not in p.name)
    )


def private_dir_for(release: Path) -> Path:
    """Where ``prefkit release cut`` puts a release's private configs: ``releases-private/<version>``."""
    release = Path(release).resolve()
    return release.parent.parent / "releases-private" / release.name


def _read(path: Path, task: str) -> list[_Line]:
    out: list[_Line] = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, raw in jsonl_lines(path):
        line = parse_line(path.parent.name, raw, f"{path}:{lineno}")
        if line.task != task:
            continue
        if (line.track, line.benchmark_id) in seen:
            raise EvalInputError(
                f"{path}:{lineno}: benchmark_id {line.benchmark_id!r} repeats line "
                f"{seen[(line.track, line.benchmark_id)]}"
            )
        seen[(line.track, line.benchmark_id)] = lineno
        out.append(line)
    return out


def load_alps(
    release: Path, task: str, split: str, config: str = "alpsbench", private: Path | None = None
) -> tuple[ReleaseRef, dict[str, AlpsRow], bool]:
    """``(release ref, rows by key (``track:benchmark_id``), whether every row has gold)`` for one task
    and split.

    Inputs come from the release's ``data/<config>/<split>.jsonl``; gold from rows that carry it there,
    except for the ``test`` split, whose gold is read only from the private configs: ``private``
    (default ``releases-private/<version>`` beside the release) or, in older releases, a config whose
    name contains ``private``."""
    if task not in TASKS:
        raise EvalInputError(f"unknown AlpsBench task {task!r}; use 1, 2, 3 or 4")
    release = Path(release)
    if not (release / "data").is_dir():
        raise EvalInputError(f"{release}: not a release directory (no data/)")
    private = Path(private) if private is not None else private_dir_for(release)
    public_dirs = _config_dirs(release / "data", config)
    if not public_dirs:
        raise EvalInputError(f"{release}: no AlpsBench config starting with {config!r} under data/")
    rows: dict[str, AlpsRow] = {}
    gold: dict[str, dict[str, Any]] = {}
    hidden: dict[str, dict[str, Any]] = {}
    files: list[Path] = []
    sources = [(d, "private" in d.name) for d in public_dirs] + [
        (d, True) for d in _config_dirs(private, config)
    ]
    for folder, is_private in sources:
        path = folder / f"{split}.jsonl"
        if not path.is_file():
            continue
        files.append(path)
        for line in _read(path, task):
            if line.input is not None:
                group = _group(task, line.track, line.input, {})
                row = AlpsRow(line.benchmark_id, task, group, line.input, None, line.track)
                rows.setdefault(row.key, row)
            if line.gold is not None:
                (hidden if is_private else gold)[f"{line.track}:{line.benchmark_id}"] = line.gold
    if not rows:
        raise EvalInputError(
            f"{release}: no {task} rows in split {split!r} of configs starting with {config!r}"
        )
    for bid, row in rows.items():
        row.gold = hidden.get(bid) if split == "test" else gold.get(bid, hidden.get(bid))
    has_gold = all(r.gold is not None for r in rows.values())
    return release_ref(release, f"{config}:{task}:{split}", files), rows, has_gold


def read_predictions(
    path: Path, rows: Mapping[str, AlpsRow], contract: str | None = None, protocol: str | None = None
) -> dict[str, dict[str, Any]]:
    """A predictions.jsonl keyed like ``rows``. A line names its row by ``benchmark_id`` (plus ``track``
    when the id is in several tracks, e.g. task 3's distractor levels); unknown, ambiguous or repeated
    ids are errors naming the line. With ``contract`` (a task; protocol ``alpsbench-public``) every line
    must carry that task's public prediction fields and every row needs a line, as the public runner
    requires. A line naming another protocol than ``protocol`` (an export of another run) is refused."""
    path = Path(path)
    if not path.is_file():
        raise EvalInputError(f"{path}: no such predictions file")
    by_id: dict[str, list[str]] = {}
    for key, row in rows.items():
        by_id.setdefault(row.benchmark_id, []).append(key)
    out: dict[str, dict[str, Any]] = {}
    for lineno, raw in jsonl_lines(path):
        bad = alps_public.check_contract(contract, raw, f"{path}:{lineno}") if contract else None
        if bad:
            raise EvalInputError(bad)
        try:  # strict, as every import: "0.9" is not a confidence, 1 is not a memory's value
            pred = AlpsPrediction.model_validate(raw, strict=True)
        except ValidationError as exc:
            raise EvalInputError(f"{path}:{lineno}: field {validation_line(exc)}") from None
        check_line_protocol(f"{path}:{lineno}", pred.protocol, protocol)
        keys = [k for k in by_id.get(pred.benchmark_id, []) if pred.track in (None, rows[k].track)]
        if not keys:
            raise EvalInputError(
                f"{path}:{lineno}: benchmark_id {pred.benchmark_id!r} is not in the evaluated rows"
            )
        if len(keys) > 1:
            tracks = ", ".join(sorted(rows[k].track for k in keys))
            raise EvalInputError(
                f"{path}:{lineno}: benchmark_id {pred.benchmark_id!r} is in several tracks ({tracks}); "
                'add "track" to the line'
            )
        if keys[0] in out:
            raise EvalInputError(f"{path}:{lineno}: a second prediction for {keys[0]!r}")
        needed = AlpsPrediction.REQUIRED[rows[keys[0]].track[:5]]
        if getattr(pred, needed) is None:
            raise EvalInputError(
                f"{path}:{lineno}: field {needed}: required for a {rows[keys[0]].track[:5]} prediction"
            )
        out[keys[0]] = pred.model_dump(exclude_none=True, exclude={"protocol"})
    if contract:
        missing = sorted(set(rows) - set(out))
        if missing:
            raise EvalInputError(
                f"{path}: no prediction for {len(missing)} row(s) (first: {missing[0]}); the public scorer "
                "needs one line per benchmark row"
            )
    return out


# -- running a model -------------------------------------------------------------------------------------------
def _queries(inp: dict[str, Any]) -> list[str]:
    qs = inp.get("queries")
    if qs is None:
        qs = [inp.get("query")] if inp.get("query") else []
    return [str(q.get("query") if isinstance(q, dict) else q) for q in qs if q]


def _memory_text(inp: dict[str, Any]) -> str:
    selected = inp.get("selected_memory") or (inp.get("model_input") or {}).get("selected_memory")
    return str(selected.get("value") if isinstance(selected, dict) else selected or "")


def _memories(value: Any) -> list[dict[str, Any]]:
    """Memories as the prompts show them (every field present, so templates render strictly)."""
    return [
        {
            "memory_id": str(m.get("memory_id") or ""),
            "type": str(m.get("type") or ""),
            "label": str(m.get("label") or ""),
            "value": str(m.get("value") or ""),
            "confidence": m.get("confidence"),
        }
        for m in metrics.memory_list(value)
    ]


def _turns(value: Any) -> list[dict[str, str]]:
    turns = value if isinstance(value, list) else []
    return [
        {"role": str(t.get("role") or ""), "text": str(t.get("text") or t.get("content") or "")}
        for t in turns
        if isinstance(t, dict)
    ]


def model_request(row: AlpsRow) -> LLMRequest:
    inp, stage = row.input, f"{STAGE}.{row.task}"
    if row.task == "task1":
        ctx = {"dialogue": _turns(inp.get("dialogue")), "query": ""}
        return build_request(stage, row.key, "assistant", "alps_task1", MemoryList, ctx)
    if row.task == "task2":
        ctx = {
            "memory": _memories(inp.get("memory")),
            "old_dialogue": _turns(inp.get("old_dialogue")),
            "new_dialogue": _turns(inp.get("new_dialogue")),
            "query": "",
        }
        return build_request(stage, row.key, "assistant", "alps_task2", MemoryList, ctx)
    if row.task == "task3":
        ctx = {
            "query": str(inp.get("query") or ""),
            "candidates": _memories(inp.get("candidate_memories")),
        }
        return build_request(stage, row.key, "assistant", "alps_task3", RetrievalAnswer, ctx, max_tokens=400)
    dialogue = inp.get("dialogue") if inp.get("dialogue") is not None else inp.get("dialogue_history")
    ctx = {"dialogue": _turns(dialogue), "memory": _memory_text(inp), "queries": _queries(inp)}
    return build_request(stage, row.key, "assistant", "alps_task4", GroundedAnswer, ctx, temperature=0.7)


def judge_request(row: AlpsRow, pred: dict[str, Any]) -> LLMRequest:
    memory = (row.gold or {}).get("selected_memory") or {}
    ctx = {
        "ability": row.group,
        "queries": _queries(row.input),
        "memory": str(memory.get("value") if isinstance(memory, dict) else memory),
        "answer": str(pred.get("answer") or ""),
        "used": str(pred.get("used_memory_fact") or ""),
    }
    return build_request(
        f"{STAGE}.judge_task4", row.key, "judge", "alps_judge_task4", ScoredAnswer, ctx, max_tokens=200
    )


def run_model(layer, rows: Mapping[str, AlpsRow], task: str) -> dict[str, dict[str, Any]]:
    """Predictions in AlpsBench's contract (a failed call is ``{"benchmark_id", "error"}``)."""
    ids = sorted(rows)
    out: dict[str, dict[str, Any]] = {}
    for bid, r in zip(
        ids, layer.run([model_request(rows[b]) for b in ids], desc=f"{STAGE}.{task}"), strict=True
    ):
        head = {"benchmark_id": rows[bid].benchmark_id, "track": rows[bid].track}
        out[bid] = (
            {**head, **r.parsed.model_dump(exclude_none=True)}
            if r.ok
            else {**head, "error": r.error or "failed"}
        )
    return out


def judge(layer, rows: Mapping[str, AlpsRow], preds: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Task 4 predictions with the judge's score wherever they lack one (rows with gold only)."""
    todo = [
        bid
        for bid, p in sorted(preds.items())
        if "error" not in p and p.get("score") is None and rows[bid].gold is not None and p.get("answer")
    ]
    out = dict(preds)
    responses = (
        layer.run([judge_request(rows[b], preds[b]) for b in todo], desc=f"{STAGE}.judge") if todo else []
    )
    for bid, r in zip(todo, responses, strict=True):
        out[bid] = {**out[bid], "score": r.parsed.score} if r.ok else {**out[bid], "judge_error": r.error}
    return out


def score_rows(
    task: str, rows: Mapping[str, AlpsRow], preds: Mapping[str, dict[str, Any]], protocol: str = "prefkit"
) -> list[tuple[str, str, dict]]:
    """``(row key, group, score record)`` per row with gold, as ``protocol`` scores a row."""
    out = []
    for bid in sorted(rows):
        row, pred = rows[bid], preds.get(bid)
        if row.gold is None:
            continue
        usable = None if pred is None or "error" in pred else pred
        if protocol == "alpsbench-public":
            rec = alps_public.row_record(task, row.gold, pred, row.benchmark_id)
        elif protocol == "alpsbench-paper" and task in ("task1", "task2"):
            rec = alps_paper.row_record(task, row.gold, usable)
        elif task == "task1":
            rec = metrics.score_task1(row.gold, usable)
        elif task == "task2":
            rec = metrics.score_task2(row.input, row.gold, usable)
        elif task == "task3":
            rec = metrics.score_task3(row.gold, usable)
        else:
            rec = metrics.score_task4(row.gold, usable)
        rec.update(group=row.group, missing=pred is None, error=(pred or {}).get("error"), prediction=pred)
        out.append((bid, row.group, rec))
    return out
