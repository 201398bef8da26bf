"""Annotation submits on SQLite and on PostgreSQL, side by side in one run, and app replicas.

One "submit" is what the Annotate page does between a click and the next item: ``workflow.submit``
then ``workflow.current_item`` (which pulls a new chunk of 10 every 10 items). Every configuration
starts from a fresh project with the same tasks (preference_match, overlap 3) and 16 annotators:

- 16 processes x 1 annotator (the 16-writer test, timed) on SQLite and on PostgreSQL;
- replicas: 1 process serving all 16 annotators (a thread each, like one ``annotate serve``) vs
  2 processes serving 8 each (two replicas behind a load balancer), on PostgreSQL and on SQLite.

First, one annotator alone: statements per submit and, on PostgreSQL, round trips on the wire
(libpq's trace, see ``prefkit.curation.store.roundtrips``). Then per configuration: submits per second,
per-submit p50/p95 in ms, and where the CPU went: the app processes' CPU (getrusage), the server's
(the postmaster's process tree; this database's backends alone in brackets), everything else the
machine ran meanwhile (/proc/stat), submits per CPU-second, and what the backends were doing
(pg_stat_activity every 20 ms). Without ``--pg-url`` it starts a throwaway server with
.ci/postgres.sh (its CPU is then all this benchmark's) and stops it at the end.

Usage: python bench/bench_postgres.py [--per-user 150] [--pg-url postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prefkit.curation.annotation import workflow  # noqa: E402
from prefkit.curation.annotation.task_admin import create_tasks  # noqa: E402
from prefkit.curation.project import Project  # noqa: E402
from prefkit.curation.store import PreferencePair  # noqa: E402
from prefkit.schemas.common import utcnow  # noqa: E402
from prefkit.schemas.curation import Provenance  # noqa: E402

ANNOTATORS = 16
OVERLAP = 3
KIND = "preference_match"


# -- one replica process ------------------------------------------------------------------------------
def _annotate(project: Project, user: str, n: int, lat: list[float]) -> None:
    item = workflow.current_item(project, user, KIND)
    for _ in range(n):
        if item is None:
            return
        t0 = time.perf_counter()
        workflow.submit(project, user, item, {"coverage": "fully"})
        item = workflow.current_item(project, user, KIND)
        lat.append(time.perf_counter() - t0)


def replica(root: str, users: list[str], n: int, ready, go, out: str) -> None:
    from sqlalchemy import event

    project = Project(root)
    project.store.count("tasks")  # connected and reflected before the clock starts
    connects = 0

    @event.listens_for(project.store.engine, "connect")
    def _connected(*_args):
        nonlocal connects
        connects += 1

    ready.release()
    go.wait()
    before = resource.getrusage(resource.RUSAGE_SELF)
    lat: list[float] = []
    threads = [threading.Thread(target=_annotate, args=(project, u, n, lat)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    project.close()
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    Path(out).write_text(json.dumps({"lat": lat, "cpu": cpu, "connects": connects}))


# -- set-up -------------------------------------------------------------------------------------------
def build(root: Path, database: str | None, per_user: int) -> list[str]:
    project = Project.init(root, name="bench-pg", database=database)
    store, now = project.store, utcnow()
    users = [f"ann{i:02d}" for i in range(ANNOTATORS)]
    with store.write() as conn:
        conn.execute(
            store.t["users"].insert(),
            [
                {
                    "username": u,
                    "role": "annotator",
                    "password_hash": "x",
                    "email": None,
                    "active": True,
                    "created_at": now,
                }
                for u in users
            ],
        )
    items = ANNOTATORS * per_user // OVERLAP + 200
    pairs = [
        PreferencePair(
            f"p{i:06d}",
            f"Does the reply mention deadline {i}?",
            f"The user wants deadlines for task {i} called out.",
            "bench",
        )
        for i in range(items)
    ]
    store.content.add_preference_pairs(pairs, Provenance(source="bench.pairs"))
    create_tasks(project, KIND, overlap=OVERLAP, gold_rate=0)
    with store.write() as conn:
        conn.exec_driver_sql("ANALYZE")
    project.close()
    return users


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)


class PgServerCpu:
    """CPU seconds of a local PostgreSQL server's processes: the postmaster's reaped children plus
    the live ones (every backend is a child of the postmaster)."""

    def __init__(self, url: str):
        import psycopg

        self.postmaster = None
        try:
            with psycopg.connect(url) as conn:
                backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            self.postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            self.postmaster = None  # a remote server: its CPU is not ours to see

    @staticmethod
    def _stat(pid: int) -> list[str]:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()

    def seconds(self) -> float | None:
        if self.postmaster is None:
            return None
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        try:
            st = self._stat(self.postmaster)
            total += sum(int(x) for x in st[11:15])  # utime stime cutime cstime
            for child in Path(f"/proc/{self.postmaster}/task/{self.postmaster}/children").read_text().split():
                cst = self._stat(int(child))
                total += int(cst[11]) + int(cst[12])
        except OSError:
            return None
        return total / tick


class PgActivity:
    """Samples ``pg_stat_activity`` of prefkit's connections every 20 ms while a run goes: how many
    backends are running a statement on the CPU, waiting on a lock, waiting on something else (I/O,
    an LWLock), or idle waiting for the app, inside a transaction or between transactions."""

    STATES = ("cpu", "lock", "other wait", "idle in tx", "idle")

    def __init__(self, url: str | None):
        self.url, self.samples, self._stop = url, [], threading.Event()
        self.cpu_start: dict[int, float] = {}
        self.cpu_last: dict[int, float] = {}

    _STATES_Q = (
        "SELECT count(*) FILTER (WHERE state = 'active' AND wait_event_type IS NULL), "
        "count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock'), "
        "count(*) FILTER (WHERE state = 'active' AND wait_event_type <> 'Lock'), "
        "count(*) FILTER (WHERE state LIKE 'idle in transaction%'), "
        "count(*) FILTER (WHERE state = 'idle'), "
        "array_agg(pid) "
        "FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'prefkit'"
    )

    def __enter__(self):
        if self.url:
            import psycopg

            self._conn = psycopg.connect(self.url, autocommit=True)
            pids = self._conn.execute(self._STATES_Q).fetchone()[-1] or []
            self.cpu_start = {pid: cpu for pid in pids if (cpu := _process_cpu_s(pid)) is not None}
            self.cpu_last = dict(self.cpu_start)
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            *counts, pids = self._conn.execute(self._STATES_Q).fetchone()
            self.samples.append(counts)
            for pid in pids or []:  # a backend's CPU, last seen (a closed connection's is kept)
                cpu = _process_cpu_s(pid)
                if cpu is not None:
                    self.cpu_last[pid] = cpu

    def __exit__(self, *exc):
        self._stop.set()
        if self.url:
            self._thread.join()
            self._conn.close()

    def backend_cpu_s(self) -> float | None:
        """CPU seconds of this database's prefkit backends during the run (None: a remote server)."""
        if not self.cpu_last:
            return None
        return sum(self.cpu_last.values()) - sum(self.cpu_start.values())

    def means(self) -> dict[str, float] | None:
        if not self.samples:
            return None
        return {k: round(statistics.mean(x[i] for x in self.samples), 2) for i, k in enumerate(self.STATES)}


def _process_cpu_s(pid: int) -> float | None:
    """utime + stime of a process from /proc (None when it is gone or not on this machine)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds every core of the machine has spent busy since boot (all processes, /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run(name: str, database: str | None, layout: list[int], per_user: int, tmp: Path, pg_cpu) -> dict:
    root = tmp / uuid.uuid4().hex[:8]
    users = build(root, database, per_user)
    ctx = mp.get_context("spawn")
    ready, go = ctx.Semaphore(0), ctx.Event()
    procs, outs, start = [], [], 0
    for i, size in enumerate(layout):
        out = str(tmp / f"{root.name}-{i}.json")
        outs.append(out)
        procs.append(
            ctx.Process(
                target=replica, args=(str(root), users[start : start + size], per_user, ready, go, out)
            )
        )
        start += size
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire()
    server0 = pg_cpu.seconds() if pg_cpu else None
    machine0 = machine_busy_s()
    with PgActivity(database) as activity:
        t0 = time.perf_counter()
        go.set()
        for p in procs:
            p.join()
        wall = time.perf_counter() - t0
    machine = machine_busy_s() - machine0
    server = (pg_cpu.seconds() - server0) if pg_cpu and server0 is not None else None
    results = [json.loads(Path(o).read_text()) for o in outs]
    lat = sorted(x for r in results for x in r["lat"])
    client = sum(r["cpu"] for r in results)
    ours = client + (server or 0)
    return {
        "config": name,
        "submits": len(lat),
        "wall_s": round(wall, 2),
        "per_s": round(len(lat) / wall, 1),
        "p50_ms": round(1000 * statistics.median(lat), 1),
        "p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 1),
        "client_cpu_s": round(client, 1),
        "server_cpu_s": None if server is None else round(server, 1),
        "backend_cpu_s": None if activity.backend_cpu_s() is None else round(activity.backend_cpu_s(), 1),
        "connects": sum(r["connects"] for r in results),
        "per_cpu_s": round(len(lat) / ours, 1),
        "client_ms_per_submit": round(1000 * client / len(lat), 2),
        "server_ms_per_submit": None if server is None else round(1000 * server / len(lat), 2),
        "machine_busy": round(machine / ((os.cpu_count() or 1) * wall), 2),
        "others_cpu_s": round(max(machine - ours, 0.0), 1),
        "backends": activity.means(),
    }


def _start_server() -> tuple[str, dict[str, str]]:
    state = tempfile.mkdtemp(prefix="prefkit-bench-pg-")
    env = {**os.environ, "PG_STATE": state}
    subprocess.run(
        ["bash", str(ROOT / ".ci/postgres.sh"), "start"], check=True, env=env, stdout=subprocess.DEVNULL
    )
    url = [
        line.split("=", 1)[1]
        for line in Path(state, "env").read_text().splitlines()
        if line.startswith("export PREFKIT_TEST_PG_URL=")
    ][0]
    return url, env


def solo(database: str | None, tmp: Path, n: int = 200) -> dict:
    """One annotator alone: latency per submit and what it costs the database: statements, and on
    PostgreSQL the round trips on the wire (libpq's trace: every ``Query`` and ``Sync`` the app waits
    on, ``BEGIN``/``COMMIT`` and any pool check included)."""
    from prefkit.curation.store import RoundTrips
    from sqlalchemy import event

    root = tmp / uuid.uuid4().hex[:8]
    build(root, database, n)
    project = Project(root)
    engine = project.store.engine
    statements = 0

    @event.listens_for(engine, "before_cursor_execute")
    def _count(conn, cursor, statement, *args):
        nonlocal statements
        statements += 1

    trips = RoundTrips(engine) if engine.dialect.name == "postgresql" else None
    lat: list[float] = []
    _annotate(project, "ann00", n, lat)
    sent = trips.messages() if trips else {}
    if trips:
        trips.close()
    project.close()
    lat.sort()
    return {
        "p50_ms": round(1000 * statistics.median(lat), 2),
        "p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 2),
        "statements": round(statements / len(lat), 2),
        "round_trips": round((sent.get("Query", 0) + sent.get("Sync", 0)) / len(lat), 2) if trips else None,
        "begin_commit": round(sent.get("Query", 0) / len(lat), 2) if trips else None,
    }


def _database(pg_url: str, backend: str | None) -> str | None:
    """A fresh database for one configuration (None: a SQLite file in the project)."""
    if backend != "pg":
        return None
    from sqlalchemy.engine import make_url

    db = "prefkit_bench_" + uuid.uuid4().hex[:8]
    _admin(pg_url, f'CREATE DATABASE "{db}"')
    return make_url(pg_url).set(database=db).render_as_string(hide_password=False)


def _drop(pg_url: str, database: str | None) -> None:
    if database:
        from sqlalchemy.engine import make_url

        _admin(pg_url, f'DROP DATABASE "{make_url(database).database}" WITH (FORCE)')


CONFIGS = [
    ("sqlite   16 processes x 1", None, [1] * ANNOTATORS),
    ("postgres 16 processes x 1", "pg", [1] * ANNOTATORS),
    ("sqlite   1 replica x 16", None, [ANNOTATORS]),
    ("sqlite   2 replicas x 8", None, [ANNOTATORS // 2] * 2),
    ("postgres 1 replica x 16", "pg", [ANNOTATORS]),
    ("postgres 2 replicas x 8", "pg", [ANNOTATORS // 2] * 2),
]


def _print_row(r: dict) -> None:
    b = r["backends"]
    waits = " ".join(f"{k} {v}" for k, v in b.items()) if b else "-"
    server = "-" if r["server_cpu_s"] is None else f"{r['server_cpu_s']:.1f}"
    if r["backend_cpu_s"] is not None:
        server += f" (backends {r['backend_cpu_s']:.1f})"
    print(
        f"{r['config']:<26} {r['submits']:>5} submits {r['per_s']:>6}/s  p50 {r['p50_ms']:>6} ms  "
        f"p95 {r['p95_ms']:>7} ms  wall {r['wall_s']:>6} s  CPU s: app {r['client_cpu_s']:>5} "
        f"server {server:>5} others {r['others_cpu_s']:>5}  machine busy {r['machine_busy']:.0%}  "
        f"{r['per_cpu_s']:>5} submits/CPU-s  connections opened {r['connects']}  backends: {waits}",
        flush=True,
    )


def _summary(rows: list[dict]) -> None:
    if not rows:
        return
    cores = os.cpu_count() or 1
    print(
        "\n| configuration | submits/s | p50 ms | p95 ms | app CPU ms/submit | server CPU ms/submit "
        "| submits per CPU-s | machine busy |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        server = "-" if r["server_ms_per_submit"] is None else r["server_ms_per_submit"]
        print(
            f"| {r['config'].strip()} | {r['per_s']} | {r['p50_ms']} | {r['p95_ms']} | "
            f"{r['client_ms_per_submit']} | {server} | {r['per_cpu_s']} | {r['machine_busy']:.0%} |"
        )
    by = {r["config"]: r for r in rows}
    for backend in ("sqlite  ", "postgres"):
        one, two = by.get(f"{backend} 1 replica x 16"), by.get(f"{backend} 2 replicas x 8")
        if one and two:
            print(
                f"{backend.strip()}: 2 replicas / 1 replica: throughput {two['per_s'] / one['per_s']:.2f}, "
                f"submits per CPU-second {two['per_cpu_s'] / one['per_cpu_s']:.2f}; "
                f"CPU used by the run {(two['client_cpu_s'] + (two['server_cpu_s'] or 0)) / (cores * two['wall_s']):.0%} "
                f"vs {(one['client_cpu_s'] + (one['server_cpu_s'] or 0)) / (cores * one['wall_s']):.0%} of {cores} cores"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-user", type=int, default=150, help="Submits per annotator per configuration.")
    ap.add_argument(
        "--only", default="", help="Run only the configurations whose name contains this ('solo')."
    )
    ap.add_argument(
        "--pg-url",
        default=None,
        help="A PostgreSQL superuser URL to use instead of a throwaway server of .ci/postgres.sh "
        "(a server others use makes its CPU figures include their work).",
    )
    args = ap.parse_args()
    started_env = None
    if not args.pg_url:
        args.pg_url, started_env = _start_server()
    load = os.getloadavg()
    print(
        f"nproc={os.cpu_count()}  load average {load[0]:.1f} {load[1]:.1f}  annotators={ANNOTATORS}  "
        f"submits/annotator={args.per_user}  overlap={OVERLAP}"
    )
    pg_cpu = PgServerCpu(args.pg_url)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for backend in (None, "pg"):
                if args.only and args.only != "solo":
                    break
                database = _database(args.pg_url, backend)
                r = solo(database, Path(tmp))
                _drop(args.pg_url, database)
                wire = (
                    f", {r['round_trips']} round trips ({r['begin_commit']} of them BEGIN/COMMIT)"
                    if r["round_trips"] is not None
                    else " (in-process: no round trips)"
                )
                print(
                    f"{'postgres' if backend else 'sqlite':<8} 1 annotator alone: p50 {r['p50_ms']} ms  "
                    f"p95 {r['p95_ms']} ms  per submit: {r['statements']} statements{wire}",
                    flush=True,
                )
            for name, backend, layout in CONFIGS:
                if args.only not in name or args.only == "solo":
                    continue
                database = _database(args.pg_url, backend)
                row = run(name, database, layout, args.per_user, Path(tmp), pg_cpu if backend else None)
                _drop(args.pg_url, database)
                rows.append(row)
                _print_row(row)
    finally:
        if started_env is not None:
            subprocess.run(["bash", str(ROOT / ".ci/postgres.sh"), "stop"], env=started_env, check=False)
    _summary(rows)


if __name__ == "__main__":
    main()
