"""The users' whole journeys, step by step as the docs tell a user, each step the real ``prefkit``
command in a subprocess: what tests/test_journeys.py checks and bench/bench_journey.py times.

The AlpsBench journey (docs/alpsbench.md): import real packets -> memory_verify tasks -> a label file
from ``prefkit tasks export`` -> ``labels import`` -> ``tasks build-alpsbench`` -> task_qc labels the
same way -> ``release check`` -> ``release cut`` -> ``release verify``. The annotators of the label
files decide as a careful person would from what the task shows: three of them keep a candidate memory
whose evidence check found nothing wrong and reject the others as not grounded; on task_qc they pass
every built row but one in ten, which all three call leaking.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PREFKIT = str(Path(sys.executable).with_name("prefkit"))
ANNOTATORS = ("ann1", "ann2", "ann3")
STAMP = "2026-12-01T10:00:00+00:00"


@dataclass
class Journey:
    root: Path  # the project directory
    times: dict[str, float] = field(default_factory=dict)  # seconds per step
    outputs: dict[str, str] = field(default_factory=dict)  # stdout per step

    def run(self, step: str, *argv: str, code: int = 0, stdin: str | None = None) -> str:
        """``prefkit ARGV`` in the project, timed as ``step``; its exit status must be ``code``."""
        t0 = time.perf_counter()
        done = subprocess.run(
            [PREFKIT, *argv],
            cwd=self.root,
            input=stdin,
            capture_output=True,
            text=True,
            env={**os.environ, "PREFKIT_PROJECT": str(self.root)},
            timeout=1800,
        )
        self.times[step] = self.times.get(step, 0.0) + time.perf_counter() - t0
        assert done.returncode == code, (
            f"prefkit {' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
        self.outputs[step] = done.stdout
        return done.stdout

    def timed(self, step: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        out = fn()
        self.times[step] = self.times.get(step, 0.0) + time.perf_counter() - t0
        return out


def sample_packets(sample: Path, dest: Path, n: int) -> Path:
    """The first ``n`` packets of the real sample (whole chunk folders, as published, then the rest of
    the last one left out), copied to ``dest``."""
    files = sorted(sample.rglob("sess_*.json"))[:n]
    for f in files:
        target = dest / f.relative_to(sample)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
    return dest


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def memory_verify_labels(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every annotator keeps the candidates the evidence check passed and rejects the rest."""
    rows = []
    for task in tasks:
        decisions = []
        for c in task["payload"]["candidates"]:
            keep = c["valid"] and not c["evidence_flags"]
            decisions.append(
                {"key": c["key"], "decision": "accept"}
                if keep
                else {"key": c["key"], "decision": "reject", "reason": "not_grounded"}
            )
        rows += [
            {
                "annotator": a,
                "task_kind": "memory_verify",
                "item_id": task["item_id"],
                "values": {"decisions": decisions},
                "timestamp": STAMP,
                "time_spent_s": 60,
            }
            for a in ANNOTATORS
        ]
    return rows


def task_qc_labels(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every annotator passes the built rows but every tenth (by task id), which all call leaking, and
    every seventh, whose answer all call wrong."""
    rows = []
    for i, task in enumerate(sorted(tasks, key=lambda t: t["task_id"])):
        values = {
            "leakage": "leaks" if i % 10 == 0 else "none",
            "answer": "incorrect" if i % 7 == 3 else "correct",
        }
        rows += [
            {
                "annotator": a,
                "task_kind": "task_qc",
                "item_id": task["item_id"],
                "values": values,
                "timestamp": STAMP,
                "time_spent_s": 30,
            }
            for a in ANNOTATORS
        ]
    return rows


def alpsbench_journey(sample: Path, work: Path, n_packets: int, version: str = "1.0.0") -> Journey:
    """The whole AlpsBench journey on ``n_packets`` real packets; returns the project and its times."""
    packets = sample_packets(sample, work / "packets", n_packets)
    subprocess.run([PREFKIT, "init", "proj"], cwd=work, check=True, capture_output=True)
    j = Journey(work / "proj")
    toml = j.root / "prefkit.toml"  # the built rows come from the offline backend: allowed, explicitly
    toml.write_text(
        toml.read_text(encoding="utf-8").replace("allow_offline = false", "allow_offline = true"),
        encoding="utf-8",
    )
    for a in ANNOTATORS:
        j.run(
            "users", "users", "add", a, "--role", "annotator", "--password-stdin", stdin=f"pw-{a}-journey\n"
        )
    j.run("import", "import", "alpsbench", str(packets))
    j.run("memory_verify tasks", "tasks", "create", "--kind", "memory_verify")
    j.run("memory_verify labels", "tasks", "export", "--kind", "memory_verify", "mv_tasks.jsonl")
    rows = j.timed(
        "memory_verify labels", lambda: memory_verify_labels(read_jsonl(j.root / "mv_tasks.jsonl"))
    )
    write_jsonl(j.root / "mv_labels.jsonl", rows)
    j.run("memory_verify labels", "labels", "import", "mv_labels.jsonl")
    j.run("build", "tasks", "build-alpsbench", "--backend", "offline")
    j.run("task_qc labels", "tasks", "export", "--kind", "task_qc", "qc_tasks.jsonl")
    rows = j.timed("task_qc labels", lambda: task_qc_labels(read_jsonl(j.root / "qc_tasks.jsonl")))
    write_jsonl(j.root / "qc_labels.jsonl", rows)
    j.run("task_qc labels", "labels", "import", "qc_labels.jsonl")
    j.run("release check", "release", "check", "--json", code=1)  # no gold items: gold_accuracy fails
    j.run("release cut", "release", "cut", "--version", version, "--override", "journey: no gold items yet")
    j.run("release verify", "release", "verify", f"releases/{version}")
    return j


def cupid_journey(work: Path, version: str = "1.0.0") -> Journey:
    """The CUPID journey of the README's tour: generate -> accounts -> tasks -> the tour's label file ->
    the tie adjudicated -> cut -> verify."""
    subprocess.run([PREFKIT, "init", "proj"], cwd=work, check=True, capture_output=True)
    j = Journey(work / "proj")
    j.run("generate", "generate", "--personas", "2", "--seed", "0")
    j.run("examples", "examples")
    for name in ("alice", "bob", "carol"):
        j.run(
            "users", "users", "add", name, "--role", "annotator", "--password-stdin", stdin="prefkit-demo\n"
        )
    j.run(
        "users",
        "users",
        "add",
        "maintainer",
        "--role",
        "maintainer",
        "--password-stdin",
        stdin="prefkit-demo\n",
    )
    j.run("tasks", "tasks", "pairs", "from-instances")
    for kind in ("preference_match", "preference_expressed"):
        j.run("tasks", "tasks", "create", "--kind", kind, "--overlap", "3", "--batch", "week1")
    j.run("labels", "labels", "import", "examples/labels.jsonl")
    queue = json.loads(j.run("adjudicate", "adjudicate", "queue", "--kind", "preference_match", "--json"))
    for tie in queue:
        j.run(
            "adjudicate",
            "adjudicate",
            "decide",
            tie["task_id"],
            "--as",
            "maintainer",
            "--values",
            '{"coverage": "partially"}',
            "--note",
            "journey",
        )
    j.run(
        "release cut", "release", "cut", "--version", version, "--override", "journey: offline demo content"
    )
    j.run("release verify", "release", "verify", f"releases/{version}")
    return j
