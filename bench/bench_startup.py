"""Benchmark: start-up of the ``prefkit`` command, paired with a bare ``python -c pass``.

Each command runs N times, alternating with ``python -c pass`` (so both see the same machine load);
printed per command: min / median / max wall seconds and the ratio of its median to the bare
interpreter's. ``prefkit status`` runs in a fresh ``prefkit init`` project in a temporary directory.
``import sqlalchemy, pydantic`` is timed too, as the floor of ``status`` (it opens the store).
Goal: ``prefkit --help`` and ``prefkit status`` in at most 0.3 s on a 2-core machine.

Each command runs once untimed first, so bytecode caches are written where they can be (with
``PYTHONDONTWRITEBYTECODE`` set, every run compiles what has no cache: the header says so).

Usage: .venv/bin/python bench/bench_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def prefkit_argv() -> list[str]:
    """The installed ``prefkit`` script beside this interpreter, else the same entry point through ``-c``."""
    script = Path(sys.executable).with_name("prefkit")
    return (
        [str(script)] if script.exists() else [sys.executable, "-c", "from prefkit.cli import main; main()"]
    )


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="Timed runs of each command (default 15).")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="prefkit-startup-") as tmp:
        project = str(Path(tmp) / "bench")
        prefkit = prefkit_argv()
        subprocess.run([*prefkit, "init", project], check=True, stdout=subprocess.DEVNULL)
        bare = [sys.executable, "-c", "pass"]
        commands = {
            "prefkit --help": [*prefkit, "--help"],
            "prefkit status": [*prefkit, "status", "--project", project],
            "prefkit init --help": [*prefkit, "init", "--help"],
            "prefkit tasks list --help": [*prefkit, "tasks", "list", "--help"],
            "prefkit release cut --help": [*prefkit, "release", "cut", "--help"],
            "prefkit eval cupid --help": [*prefkit, "eval", "cupid", "--help"],
            "import sqlalchemy, pydantic": [sys.executable, "-c", "import sqlalchemy, pydantic"],
        }
        for argv in (bare, *commands.values()):
            wall(argv)  # untimed: writes bytecode caches where it can
        base: list[float] = []
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                base.append(wall(bare))
                times[name].append(wall(argv))

    bytecode = "off (PYTHONDONTWRITEBYTECODE)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    print(f"cores: {os.cpu_count()}   runs: {args.runs} each   bytecode caching: {bytecode}")
    base_median = statistics.median(base)
    rows = [("python -c pass", base), *times.items()]
    width = max(len(name) for name, _ in rows)
    print(f"{'command':<{width}}  {'min':>6}  {'median':>6}  {'max':>6}  {'x pass':>6}")
    for name, samples in rows:
        med = statistics.median(samples)
        print(
            f"{name:<{width}}  {min(samples):6.3f}  {med:6.3f}  {max(samples):6.3f}  {med / base_median:6.1f}"
        )


if __name__ == "__main__":
    main()
