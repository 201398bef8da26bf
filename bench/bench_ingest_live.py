"""Annotators' submits while a big WildChat ingest writes to the same SQLite project.

A project with 20,000 preference_match items and a few annotators; `prefkit ingest wildchat FILE`
runs in its own process (as an operator would run it beside `prefkit annotate serve`), and meanwhile
each annotator (a thread of this process, as in the app's server) does what the Annotate page does per
click: ``workflow.current_item`` then ``workflow.submit``, one submit every ``--pause`` seconds. Each
submit's wall time is recorded: the time an annotator waits, including any wait for the write lock.
Prints p50 / p95 / max of submits during the ingest and, for comparison, of the same loop with no
ingest running (baseline), and the ingest's wall time and report.

    python bench/bench_ingest_live.py [--file /tmp/wildchat-1m.jsonl] [--conversations 1000000]

The file is written with bench/gen_wildchat.py when missing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import build  # noqa: E402  (bench/ is not a package)
from prefkit.curation.annotation import workflow  # noqa: E402

KIND = "preference_match"


def submit_loop(project, user: str, stop: threading.Event, pause: float, out: list[float], errors: list[str]):
    while not stop.is_set():
        try:
            item = workflow.current_item(project, user, KIND)
            if item is None:
                return
            t0 = time.perf_counter()
            workflow.submit(project, user, item, {"coverage": "fully"})
            out.append(time.perf_counter() - t0)
        except Exception as exc:  # a refused or timed-out submit is what this measures too
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
        time.sleep(pause)


def measure(project, users: list[str], pause: float, until) -> tuple[list[float], list[str]]:
    stop, times, errors = threading.Event(), [], []
    threads = [
        threading.Thread(target=submit_loop, args=(project, u, stop, pause, times, errors)) for u in users
    ]
    for t in threads:
        t.start()
    until()
    stop.set()
    for t in threads:
        t.join()
    return times, errors


def show(name: str, times: list[float], errors: list[str]) -> None:
    if not times:
        print(f"{name}: no submits")
        return
    q = statistics.quantiles(times, n=100)
    print(
        f"{name}: {len(times)} submits, p50 {q[49] * 1000:.1f} ms, p95 {q[94] * 1000:.1f} ms, "
        f"max {max(times) * 1000:.1f} ms, errors {len(errors)}"
    )
    for e in sorted(set(errors))[:3]:
        print(f"  error: {e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=Path(tempfile.gettempdir()) / "wildchat-1m.jsonl")
    ap.add_argument("--conversations", type=int, default=1_000_000)
    ap.add_argument("--annotators", type=int, default=4)
    ap.add_argument("--pause", type=float, default=0.05, help="Seconds between one annotator's submits.")
    ap.add_argument("--baseline-s", type=float, default=10.0)
    args = ap.parse_args()
    if not args.file.exists():
        gen = Path(__file__).resolve().parent / "gen_wildchat.py"
        subprocess.run(
            [sys.executable, str(gen), "--conversations", str(args.conversations), "--out", str(args.file)],
            check=True,
        )
    print(
        f"nproc={os.cpu_count()} load={os.getloadavg()[0]:.2f} file={args.file} "
        f"({args.file.stat().st_size / 1e9:.2f} GB) annotators={args.annotators} pause={args.pause}s"
    )
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        project = build(Path(tmp) / "proj", items=20_000, events=0)
        users = [f"ann{i:02d}" for i in range(args.annotators)]
        times, errors = measure(project, users, args.pause, lambda: time.sleep(args.baseline_s))
        show("baseline (no ingest)", times, errors)
        cmd = [
            sys.executable,
            "-c",
            "from prefkit.cli import main; main()",
            "ingest",
            "wildchat",
            str(args.file),
            "-p",
            str(project.root),
            "--json",
            "--no-progress",
        ]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        times, errors = measure(project, users, args.pause, proc.wait)
        wall = time.perf_counter() - t0
        out, err = proc.communicate()
        show("during the ingest", times, errors)
        if proc.returncode != 0:
            print(f"ingest failed ({proc.returncode}): {err.strip()[-500:]}")
            return
        report = json.loads(out)
        print(
            f"ingest: {wall:.1f} s wall, {report['rows']} rows, {report['kept']} kept, "
            f"{report['dialogues_written']} dialogues; phases {report['seconds']}"
        )
        project.close()


if __name__ == "__main__":
    main()
