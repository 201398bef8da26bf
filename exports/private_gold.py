"""Test gold never public: find an AlpsBench test-split reference anywhere a release publishes.

The test split's gold (prefkit's ``alpsbench_<track>_gold`` test rows and the public layout's
``reference_output`` of test rows) is private: it goes to ``releases-private/``, never into the
release. This module names every such gold object (:func:`secrets`) and looks for it in what a release
publishes: the planned public configs and ``benchmark_data/`` files before a cut (the
``test_gold_private`` gate of ``prefkit release check``), and every file of the staged release — JSON
Lines, JSON, Parquet, the DuckDB file, the card — during the cut, which stops with nothing written when
one is found.

A gold object is found when an object equal to it (the same keys and values, nested anywhere in a row,
or inside a string holding JSON) is in a public row, or its JSON text is in the card. Gold objects
that hold nothing (every value empty) reveal nothing and are not looked for.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
from prefkit.schemas.common import canonical_json

#: How many leaks a report names (the count is always whole).
SHOWN = 10


@dataclass
class Secrets:
    """The test-split gold objects of a release: canonical JSON -> which row (``track:benchmark_id``)."""

    objects: dict[str, str] = field(default_factory=dict)
    shapes: set[frozenset[str]] = field(default_factory=set)  # key sets of the objects: a cheap filter
    #: Task ids whose answers are secret -> which item (``kind:id``): found in a row holding the task
    #: id (``id`` or ``task_id``) beside ``values`` or ``answers`` (a label, a final label, a decision).
    tasks: dict[str, str] = field(default_factory=dict)

    def add(self, gold: Any, where: str) -> None:
        if not isinstance(gold, dict) or not any(v not in (None, "", [], {}) for v in gold.values()):
            return
        self.objects.setdefault(canonical_json(gold), where)
        self.shapes.add(frozenset(gold))

    def __len__(self) -> int:
        return len(self.objects) + len(self.tasks)

    def found_in(self, value: Any) -> Iterator[str]:
        """The rows whose gold ``value`` contains (nested anywhere, JSON strings included)."""
        # Only containers and strings that may hold JSON go on the stack: a release's rows are mostly
        # dialogue text, and walking each leaf once (not pushing and popping it) halves the scan.
        sizes = {len(shape) for shape in self.shapes}
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, str):
                if len(v) > 1 and v[0] in "{[":
                    with contextlib.suppress(ValueError):  # a string that only looks like JSON
                        stack.append(json.loads(v))
                continue
            if isinstance(v, dict):
                if len(v) in sizes and frozenset(v) in self.shapes:
                    hit = self.objects.get(canonical_json(v))
                    if hit:
                        yield hit
                if self.tasks and (v.get("values") is not None or v.get("answers") is not None):
                    task = v.get("task_id", v.get("id"))
                    if isinstance(task, str) and task in self.tasks:
                        yield self.tasks[task]
                children: Iterable[Any] = v.values()
            elif isinstance(v, list):
                children = v
            else:
                continue
            for child in children:
                kind = type(child)  # exact types first: this loop sees every leaf of every row
                if kind is str:
                    if len(child) > 1 and child[0] in "{[":
                        stack.append(child)
                elif kind is dict or kind is list or isinstance(child, dict | list):
                    stack.append(child)


def _obj(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def secrets(planned, private_layout: dict[str, bytes]) -> Secrets:
    """The test gold of a release: the test rows of the private AlpsBench gold configs (the tracks' and
    the unverified packets'), the layout's private ``reference_output.jsonl`` files and the tasks of a
    declared kind's private test answers (whose answers are common values: found by task id)."""
    out = Secrets()
    for cfg in planned:
        if cfg.private and cfg.name.startswith("alpsbench_") and cfg.name.endswith("_gold"):
            track = cfg.name.removeprefix("alpsbench_").removesuffix("_gold")
            for line in cfg.splits.get("test", []):
                row = json.loads(line)
                out.add(_obj(row.get("gold")), f"{row.get('track') or track}:{row.get('benchmark_id')}")
        elif cfg.private and cfg.name.endswith("_test_answers"):  # a declared kind's test answers
            for line in cfg.splits.get("test", []):
                row = json.loads(line)
                out.tasks[row["task_id"]] = f"{cfg.name.removesuffix('_test_answers')}:{row['id']}"
    for path, data in private_layout.items():
        for line in data.decode("utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out.add(row.get("gold"), f"{path.split('/')[-2]}:{row.get('benchmark_id')}")
    return out


def _scan_rows(rows: Iterable[Any], where: str, found: Secrets, out: list[str]) -> None:
    for row in rows:
        for hit in found.found_in(row):
            out.append(f"{where}: test gold of {hit}")


def planned_leaks(planned, public_layout: dict[str, bytes], found: Secrets) -> list[str]:
    """Where a test gold object is in the public configs or the public layout files (before a cut)."""
    out: list[str] = []
    for cfg in planned:
        if cfg.private:
            continue
        for split, lines in cfg.splits.items():
            _scan_rows((json.loads(line) for line in lines), f"data/{cfg.name}/{split}.jsonl", found, out)
    for path, data in sorted(public_layout.items()):
        _scan_rows((json.loads(x) for x in data.decode("utf-8").splitlines() if x.strip()), path, found, out)
    return out


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    yield from pq.read_table(path).to_pylist()


def _duckdb_rows(path: Path) -> Iterator[Any]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        for schema, table in con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
        ).fetchall():
            cur = con.execute(f'SELECT * FROM "{schema}"."{table}"')
            names = [d[0] for d in cur.description]
            for values in cur.fetchall():
                yield dict(zip(names, values, strict=True))
    finally:
        con.close()


def _objects_in_text(text: str) -> Iterator[Any]:
    """Every JSON object written out in a text (a card's example, whatever its key order)."""
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at >= 0:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        yield value
        at = text.find("{", end)


def release_leaks(root: Path, found: Secrets) -> list[str]:
    """Where a test gold object is in any file under ``root`` (a staged or finished release)."""
    out: list[str] = []
    texts = {key: {key, json.dumps(json.loads(key), ensure_ascii=False)} for key in found.objects}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        suffix = path.suffix
        if suffix == ".jsonl":
            lines = path.read_text(encoding="utf-8").splitlines()
            _scan_rows((json.loads(x) for x in lines if x.strip()), rel, found, out)
        elif suffix == ".json":
            _scan_rows([json.loads(path.read_text(encoding="utf-8"))], rel, found, out)
        elif suffix == ".parquet":
            _scan_rows(_parquet_rows(path), rel, found, out)
        elif suffix == ".duckdb":
            _scan_rows(_duckdb_rows(path), rel, found, out)
        elif suffix in (".md", ".txt", ".csv"):
            text = path.read_text(encoding="utf-8")
            out += [
                f"{rel}: test gold of {found.objects[k]}"
                for k, forms in texts.items()
                if any(f in text for f in forms)
            ]
            _scan_rows(_objects_in_text(text), rel, found, out)
    return list(dict.fromkeys(out))  # a place found twice (as text and as an object) is one place
