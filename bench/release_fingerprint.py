"""Fingerprint of two releases built from scratch: the demo project and a CUPID import.

A refactor that must not change behaviour runs this before and after and compares the output: one
``sha256  path`` line per file of each release. Everything a cut depends on is made deterministic for
the run (the clock is frozen, ``uuid4`` and the project's annotator salt come from counters; labels are
drawn from a seeded hash of task and annotator), so two runs of the same code print the same lines and
any difference is a change of behaviour.

    python bench/release_fingerprint.py > before.txt   # on the old code
    python bench/release_fingerprint.py > after.txt    # on the new code
    diff before.txt after.txt

``--server`` generates the demo's sessions through the scripted loopback server (tests/fakeopenai.py
answering like bench/bench_generation.py, on a fixed port, so the endpoint in provenance is stable)
instead of the offline backend.

Both projects go through the CLI (``prefkit demo``, ``prefkit import cupid``, ``prefkit labels import``,
``prefkit adjudicate decide``, ``prefkit release cut``) in this process.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import secrets
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

FROZEN = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


class _FrozenDatetime(datetime):
    @classmethod
    def now(cls, tz=None):
        return FROZEN if tz is not None else FROZEN.replace(tzinfo=None)


def _freeze() -> None:
    import prefkit.schemas.common as common

    common.datetime = _FrozenDatetime  # utcnow() is the one clock every record's time comes from
    counter = itertools.count(1)
    uuid.uuid4 = lambda: uuid.UUID(int=next(counter))
    salts = itertools.count(1)
    secrets.token_hex = lambda n=32: hashlib.sha256(f"salt{next(salts)}".encode()).hexdigest()[: 2 * n]


def _cli(*argv: str, stdin: str | None = None) -> str:
    from prefkit.cli import cli

    done = CliRunner().invoke(cli, list(argv), input=stdin, catch_exceptions=False)
    if done.exit_code != 0:
        raise SystemExit(f"prefkit {' '.join(argv)} exited {done.exit_code}: {done.output}")
    return done.output


def _draw(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:4], "big")


def _values(task, annotator: str) -> dict:
    """A label for ``task``: annotators agree on most units, disagree on some (seeded by ids)."""

    def pick(unit: str, options: tuple) -> object:
        base = _draw(task.task_id, unit) % len(options)
        if _draw(task.task_id, unit, annotator) % 5 == 0:
            return options[(base + 1) % len(options)]
        return options[base]

    if task.kind == "preference_match":
        return {"coverage": pick("coverage", ("fully", "partially", "not_covered", "fully"))}
    if task.kind == "preference_expressed":
        user = [t["index"] for t in task.payload["turns"] if t["role"] == "user"]
        items = []
        for i, _ in enumerate(task.payload["checklist"]):
            expressed = pick(f"item{i}", (True, True, False))
            items.append({"item": i, "expressed": expressed, "evidence": user[:1] if expressed else []})
        return {"items": items}
    if task.kind == "memory_verify":
        decisions = []
        for c in task.payload["candidates"]:
            decision = pick(c["key"], ("accept", "accept", "reject"))
            decisions.append(
                {"key": c["key"], "decision": decision}
                | ({"reason": "not_grounded"} if decision == "reject" else {})
            )
        return {"decisions": decisions}
    raise SystemExit(f"no labels drawn for kind {task.kind}")


def _label_all(root: Path, annotators: tuple[str, ...], maintainer: str) -> None:
    from prefkit.curation.project import Project
    from prefkit.curation.quality.consensus import disagreements

    project = Project(root)
    rows = []
    for n, task in enumerate(sorted(project.store.labels.tasks(), key=lambda t: t.task_id)):
        for k, who in enumerate(annotators):
            if task.is_gold or _draw(task.task_id, who, "skip") % 7 != 0:
                stamp = f"2026-11-25T{9 + n // 60 % 10:02d}:{n % 60:02d}:{k:02d}Z"
                row = {"annotator": who, "task_kind": task.kind, "item_id": task.task_id}
                rows.append(
                    row | {"values": _values(task, who), "time_spent_s": 10.0 + k, "timestamp": stamp}
                )
    project.close()
    labels = root / "fingerprint-labels.jsonl"
    labels.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    _cli("labels", "import", str(labels), "--project", str(root))
    project = Project(root)
    ties = sorted((d for d in disagreements(project.store) if d.tied), key=lambda d: d.task_id)
    project.close()
    for d in ties[::2]:  # half the ties decided by the maintainer, half left for the gates to report
        values = next(iter(sorted(d.labels.items())))[1]
        _cli(
            "adjudicate",
            "decide",
            d.task_id,
            "--as",
            maintainer,
            "--values",
            json.dumps(values),
            "--note",
            "fingerprint",
            "--project",
            str(root),
        )


def _allow_offline(root: Path) -> None:
    toml = root / "prefkit.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("allow_offline = false", "allow_offline = true"))


def build_demo(root: Path) -> Path:
    _cli("demo", "--project", str(root), "--personas", "2", "--seed", "3", "--no-serve")
    _allow_offline(root)
    _label_all(root, ("alice", "bob", "carol"), "maintainer")
    _cli("release", "cut", "--version", "1.0.0", "--override", "fingerprint", "--project", str(root))
    return root / "releases" / "1.0.0"


def build_cupid(root: Path, examples: Path) -> Path:
    _cli("init", str(root))
    _cli(
        "import",
        "cupid",
        str(examples / "release" / "cupid.jsonl"),
        "--licence",
        "MIT",
        "--project",
        str(root),
    )
    _cli(
        "import",
        "cupid",
        str(examples / "release" / "cupid_more.jsonl"),
        "--licence",
        "MIT",
        "--project",
        str(root),
    )
    _cli(
        "users",
        "add",
        "maintainer",
        "--role",
        "maintainer",
        "--password-stdin",
        "--project",
        str(root),
        stdin="fingerprint-maintainer\n",
    )
    for name in ("ann1", "ann2", "ann3"):
        _cli(
            "users",
            "add",
            name,
            "--role",
            "annotator",
            "--password-stdin",
            "--project",
            str(root),
            stdin="fingerprint-annotator\n",
        )
    _cli("tasks", "pairs", "import", str(examples / "release" / "pairs.jsonl"), "--project", str(root))
    for kind in ("preference_expressed", "preference_match"):
        _cli("tasks", "create", "--kind", kind, "--overlap", "3", "--project", str(root))
    _label_all(root, ("ann1", "ann2", "ann3"), "maintainer")
    _cli("release", "cut", "--version", "1.0.0", "--override", "fingerprint", "--project", str(root))
    return root / "releases" / "1.0.0"


def _duckdb_content(path: Path) -> str:
    """DuckDB's file is not byte-stable between two writes of the same rows: hash what it holds."""
    import duckdb

    digest = hashlib.sha256()
    with duckdb.connect(str(path), read_only=True) as con:
        names = con.sql(
            "SELECT table_name, table_type FROM information_schema.tables ORDER BY ALL"
        ).fetchall()
        for name, kind in names:
            rows = con.sql(f'SELECT * FROM "{name}"').fetchall()
            digest.update(f"{name} {kind} {sorted(map(repr, rows))}".encode())
    return digest.hexdigest()


def fingerprint(release: Path, name: str) -> list[str]:
    """``sha256  name/path`` per file; the .duckdb file by its content, and the manifest with that
    file's byte hash blanked (the only byte in a release that is not reproducible)."""
    lines = []
    for p in sorted(release.rglob("*")):
        if not p.is_file():
            continue
        data = p.read_bytes()
        label = p.relative_to(release).as_posix()
        if p.suffix == ".duckdb":
            lines.append(f"{_duckdb_content(p)}  {name}/{label} (tables and views, row by row)")
            continue
        if label == "manifest.json":
            duck = next(release.glob("*.duckdb"))
            data = data.replace(hashlib.sha256(duck.read_bytes()).hexdigest().encode(), b"<duckdb>")
            label += " (the .duckdb sha256 blanked)"
        lines.append(f"{hashlib.sha256(data).hexdigest()}  {name}/{label}")
    return lines


def _serve_generation() -> None:
    """The demo's generation through the scripted server instead of the offline backend."""
    import os

    import prefkit.demo as demo
    from prefkit.pipelines.generation.run import generate

    sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parent.parent / "tests")]
    from bench_generation import answer
    from fakeopenai import FakeOpenAI

    server = FakeOpenAI(answer).start(port=SERVER_PORT)
    os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-fingerprint-not-a-key")
    demo._generate = lambda project, personas, seed: generate(
        project, backend="openai", personas=personas, seed=seed
    )


SERVER_PORT = 47162


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, help="build in this directory (kept) instead of a temporary one")
    parser.add_argument("--server", action="store_true", help="generate through the scripted server")
    args = parser.parse_args()
    _freeze()
    if args.server:
        _serve_generation()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        _cli("examples", str(work / "examples"))
        lines = fingerprint(build_demo(work / "demo"), "demo") + fingerprint(
            build_cupid(work / "cupid", work / "examples"), "cupid"
        )
    print("\n".join(lines))
    print(f"{len(lines)} files", file=sys.stderr)


if __name__ == "__main__":
    main()
