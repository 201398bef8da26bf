"""Benchmark: prefkit push into Label Studio at 100k tasks against the plain SDK import of the same
tasks (goal: push <= 1.2x), then an annotator's step (``GET /api/projects/{id}/next`` + ``POST`` an
annotation) p50/p95 over 500 steps, then one pull.

Needs a running Label Studio (``bash .ci/labelstudio.sh start`` and source the env file it prints);
without one it says so and exits 0 so ``make bench`` still runs the other benchmarks. In one run:
``--tasks`` preference_match pairs go (1) into a fresh Label Studio project with one plain
``client.projects.import_tasks`` call (the task data made beforehand from tasks built in memory,
untimed) and (2) into another fresh project with one ``bridge.push`` starting from the stored pairs
alone (building and storing the tasks, the import requests and the id map timed); ``--order
push-first`` swaps the two. Besides wall time it prints the CPU seconds of this process and of the
Label Studio server (found through /proc when it runs on this machine) for each, which a loaded
machine disturbs much less than wall time. The Label Studio projects are deleted at the end
(``--keep`` keeps them). ``--rounds`` also pushes in rounds of 10,000 into a growing project.
Run: .venv/bin/python bench/bench_labelstudio.py [--tasks 100000] [--steps 500] [--order push-first]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prefkit.annotate_app.labelstudio import bridge  # noqa: E402
from prefkit.annotate_app.labelstudio.accounts import login  # noqa: E402
from prefkit.annotate_app.labelstudio.config import ls_kind  # noqa: E402
from prefkit.curation.project import Project  # noqa: E402
from prefkit.curation.store import PreferencePair  # noqa: E402
from prefkit.schemas.curation import Provenance  # noqa: E402

ROUND = 10_000
CPU: dict[str, tuple[float, float]] = {}  # step -> (this process's CPU s, the server's CPU s)
CREATED: list[int] = []  # Label Studio projects this run made (deleted at the end unless --keep)


def _pairs(start: int, n: int) -> list[PreferencePair]:
    return [
        PreferencePair(
            f"bench{i:07d}",
            f"Does the reply follow preference number {i}?",
            f"The user prefers option {i % 97} when context {i % 13} applies.",
            "bench",
        )
        for i in range(start, start + n)
    ]


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def push_rounds(project: Project, url: str, target: int, budget_s: float) -> tuple[int, float, list[str]]:
    """Add pairs and push in rounds until ``target`` tasks or the budget is spent."""
    total, spent, lines = 0, 0.0, []
    while total < target and spent < budget_s:
        n = min(ROUND, target - total)
        project.store.content.add_preference_pairs(_pairs(total, n), Provenance(source="bench"))
        t0 = time.perf_counter()
        report = bridge.push(project, "preference_match", url)
        took = time.perf_counter() - t0
        spent += took
        total += report.imported
        lines.append(
            f"push round: +{report.imported} tasks in {took:.1f} s ({report.imported / took:.0f} tasks/s)"
        )
        print(lines[-1], flush=True)
    return total, spent, lines


def server_pid(url: str) -> int | None:
    """The pid of the Label Studio server listening on ``url``'s port on this machine, if any."""
    port = str(urlparse(url).port or "")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any("label-studio" in a for a in argv) and port in argv:
            return int(entry.name)
    return None


def cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system, all threads) the process has used so far; 0 when unknown."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def push_vs_plain(project: Project, url: str, n: int, order: str) -> tuple[float, float, int]:
    """Seconds for one plain SDK import of ``n`` tasks and for one prefkit push of the same tasks,
    each into a fresh Label Studio project, in ``order``; and how many import requests the push sent.

    The plain import gets its task data made beforehand (untimed) from tasks built in memory; the
    push starts from the stored pairs alone (no task in the store): building, storing, the import
    requests and the id map are all timed."""
    from prefkit.annotate_app.labelstudio.bridge import _project_settings, connect, task_data
    from prefkit.curation.annotation.task_kinds import get_kind

    project.store.content.add_preference_pairs(_pairs(0, n), Provenance(source="bench"))
    built = get_kind("preference_match").build_tasks(project.store, 3, "default")
    items = [{"data": task_data(t)} for t in built]
    del built
    assert not project.store.labels.tasks(kind="preference_match")
    client = connect(url, os.environ["LABEL_STUDIO_API_KEY"])
    times: dict[str, float] = {}
    requests = 0
    pid = server_pid(url)

    def plain() -> None:
        settings = {**_project_settings(project, "preference_match", 3), "title": "bench plain SDK import"}
        created = client.projects.create(**settings)
        CREATED.append(int(created.id))
        t0, c0, s0 = time.perf_counter(), time.process_time(), cpu_s(pid)
        resp = client.projects.import_tasks(
            created.id,
            request=items,
            return_task_ids=True,
            # The push's own request options: one attempt, a long wait (a loaded server is slow).
            request_options={"max_retries": 0, "timeout_in_seconds": bridge.IMPORT_TIMEOUT_S},
        )
        times["plain"] = time.perf_counter() - t0
        CPU["plain"] = (time.process_time() - c0, cpu_s(pid) - s0)
        assert len(resp.task_ids or []) == n

    def push() -> None:
        nonlocal requests
        t0, c0, s0 = time.perf_counter(), time.process_time(), cpu_s(pid)
        report = bridge.push(project, "preference_match", url)
        times["push"] = time.perf_counter() - t0
        CPU["push"] = (time.process_time() - c0, cpu_s(pid) - s0)
        CREATED.append(report.ls_project_id)
        assert report.imported == n and len(project.store.labels.tasks(kind="preference_match")) == n
        requests = report.requests

    for step in (plain, push) if order == "plain-first" else (push, plain):
        step()
    return times["plain"], times["push"], requests


def annotate_steps(url: str, pid: int, steps: int) -> tuple[list[float], list[float]]:
    """``steps`` times: take the next task, submit a coverage label. Returns ms per GET and per POST."""
    admin = login(url, os.environ["LABEL_STUDIO_ADMIN_EMAIL"], os.environ["LABEL_STUDIO_ADMIN_PASSWORD"])
    result = ls_kind("preference_match").results({"coverage": "fully"}, None)
    gets, posts = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        task = admin.next_task(pid)
        t1 = time.perf_counter()
        admin.submit(task["id"], result, lead_time=1.0)
        t2 = time.perf_counter()
        gets.append((t1 - t0) * 1000)
        posts.append((t2 - t1) * 1000)
    return gets, posts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=500, help="annotation steps after the push (0: none)")
    ap.add_argument("--order", choices=("plain-first", "push-first"), default="plain-first")
    ap.add_argument("--budget-s", type=float, default=300.0, help="with --rounds: stop after this long")
    ap.add_argument("--rounds", action="store_true", help="also push in rounds into a growing project")
    ap.add_argument("--keep", action="store_true", help="keep the Label Studio projects made by the run")
    args = ap.parse_args(argv)
    url = os.environ.get("LABEL_STUDIO_URL")
    if not (url and os.environ.get("LABEL_STUDIO_API_KEY") and os.environ.get("LABEL_STUDIO_ADMIN_PASSWORD")):
        print(
            "skipped: no Label Studio; run `bash .ci/labelstudio.sh start` and source the env file it prints"
        )
        return 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            project = Project.init(Path(tmp) / "bench", name="bench-ls")
            run(project, url, args)
            project.close()
    finally:
        if not args.keep:
            client = bridge.connect(url, os.environ["LABEL_STUDIO_API_KEY"])
            for pid in CREATED:
                client.projects.delete(pid)
    return 0


def run(project: Project, url: str, args: argparse.Namespace) -> None:
    total = args.tasks
    load = os.getloadavg()[0]
    plain_s, push_s, requests = push_vs_plain(project, url, total, args.order)
    print(f"plain SDK import of {total} tasks (one call): {plain_s:.1f} s ({total / plain_s:.0f} tasks/s)")
    print(
        f"prefkit push of the same {total} tasks:       {push_s:.1f} s ({total / push_s:.0f} tasks/s, "
        f"{requests} import requests)"
    )
    print(
        f"push / plain import: {push_s / plain_s:.2f}x (goal <= 1.2x; {args.order}; nproc={os.cpu_count()}, "
        f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after)",
        flush=True,
    )
    if CPU["plain"][1] or CPU["push"][1]:
        (pc, ps), (uc, us) = CPU["plain"], CPU["push"]
        print(
            f"CPU seconds, client + Label Studio server: plain {pc:.1f} + {ps:.1f} = {pc + ps:.1f}; "
            f"push {uc:.1f} + {us:.1f} = {uc + us:.1f}  (server-side push / plain: {us / ps:.2f}x)",
            flush=True,
        )
    if args.rounds:
        with tempfile.TemporaryDirectory() as tmp2:
            grown = Project.init(Path(tmp2) / "rounds", name="bench-ls-rounds")
            n, spent, _ = push_rounds(grown, url, total, args.budget_s)
            CREATED.append(grown.store.labelstudio.project_id(url, "preference_match"))
            print(f"pushed {n} tasks in rounds in {spent:.1f} s ({n / spent:.0f} tasks/s)")
            grown.close()
    if args.steps <= 0:
        return
    pid = project.store.labelstudio.project_id(url, "preference_match")
    gets, posts = annotate_steps(url, pid, args.steps)
    steps = [g + p for g, p in zip(gets, posts, strict=True)]
    for name, ms in (("GET /next", gets), ("POST annotation", posts), ("step (GET + POST)", steps)):
        print(f"{name:18s} p50 {statistics.median(ms):7.1f} ms   p95 {_pct(ms, 95):7.1f} ms   (n={len(ms)})")
    t0 = time.perf_counter()
    report = bridge.pull(project, "preference_match", url)
    print(
        f"pull of {report.labels} annotations from a {total}-task project: {time.perf_counter() - t0:.1f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
