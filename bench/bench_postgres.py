"""Annotation submits on SQLite and on PostgreSQL, side by side in one run, and app replicas.

One "submit" is what the Annotate page does between a click and the next item: ``workflow.submit``
then ``workflow.current_item`` (which pulls a new chunk of 10 every 10 items). Every configuration
starts from a fresh project with the same tasks (preference_match, overlap 3) and 16 annotators:

- 16 processes x 1 annotator (the 16-writer test, timed) on SQLite and on PostgreSQL;
- replicas: 1 process serving all 16 annotators (a thread each, like one ``annotate serve``) vs
  2 processes serving 8 each (two replicas behind a load balancer), on PostgreSQL and on SQLite.

Prints submits per second, per-submit p50/p95 in ms, and where the CPU went: the client processes'
CPU seconds and (PostgreSQL, local server) the server's backends' CPU seconds, next to the wall time
times the core count. Without ``--pg-url`` (or ``PREFKIT_TEST_PG_URL``) it starts a throwaway server
with .ci/postgres.sh and stops it at the end.

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

from curation.annotation import workflow  # noqa: E402
from curation.annotation.task_admin import create_tasks  # noqa: E402
from curation.project import Project  # noqa: E402
from schemas.common import utcnow  # noqa: E402
from schemas.curation import Provenance  # noqa: E402

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
    project = Project(root)
    project.store.count("tasks")  # connected and reflected before the clock starts
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
    Path(out).write_text(json.dumps({"lat": lat, "cpu": cpu}))


# -- set-up -------------------------------------------------------------------------------------------
def build(root: Path, database: str | None, per_user: int) -> list[str]:
    project = Project.init(root, name="bench-pg", database=database)
    store, now = project.store, utcnow()
    users = [f"ann{i:02d}" for i in range(ANNOTATORS)]
    with store.write() as conn:
        conn.execute(store.t["users"].insert(), [
            {"username": u, "role": "annotator", "password_hash": "x", "email": None, "active": True, "created_at": now}
            for u in users
        ])  # fmt: skip
    items = ANNOTATORS * per_user // OVERLAP + 200
    pairs = [
        {"pair_id": f"p{i:06d}", "checklist_item": f"Does the reply mention deadline {i}?",
         "candidate": f"The user wants deadlines for task {i} called out.", "origin": "bench",
         "instance_id": None, "meta_json": None}
        for i in range(items)
    ]  # fmt: skip
    store.add_preference_pairs(pairs, Provenance(source="bench.pairs"))
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
    """Samples ``pg_stat_activity`` of one database every 20 ms while a run goes: how many backends
    are running a statement, and how many of those wait on a lock (row, advisory or other)."""

    def __init__(self, url: str | None):
        self.url, self.samples, self._stop = url, [], threading.Event()

    def __enter__(self):
        if self.url:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        import psycopg

        q = (
            "SELECT count(*) FILTER (WHERE state = 'active'), "
            "count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock') "
            "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.wait(0.02):
                self.samples.append(conn.execute(q).fetchone())

    def __exit__(self, *exc):
        self._stop.set()
        if self.url:
            self._thread.join()

    def summary(self) -> str:
        if not self.samples:
            return "-"
        active = statistics.mean(a for a, _ in self.samples)
        waiting = statistics.mean(w for _, w in self.samples)
        return f"{active:.1f} active, {waiting:.2f} on locks"


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
    with PgActivity(database) as activity:
        t0 = time.perf_counter()
        go.set()
        for p in procs:
            p.join()
        wall = time.perf_counter() - t0
    server = (pg_cpu.seconds() - server0) if pg_cpu and server0 is not None else None
    results = [json.loads(Path(o).read_text()) for o in outs]
    lat = sorted(x for r in results for x in r["lat"])
    return {
        "config": name,
        "submits": len(lat),
        "wall_s": round(wall, 2),
        "per_s": round(len(lat) / wall, 1),
        "p50_ms": round(1000 * statistics.median(lat), 1),
        "p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 1),
        "client_cpu_s": round(sum(r["cpu"] for r in results), 1),
        "server_cpu_s": None if server is None else round(server, 1),
        "backends": activity.summary(),
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
    """One annotator alone: latency per submit and what it is made of (statements, transactions and
    the pool's liveness checks), i.e. the round trips PostgreSQL adds over an in-process SQLite."""
    from sqlalchemy import event

    root = tmp / uuid.uuid4().hex[:8]
    build(root, database, n)
    project = Project(root)
    counts = {"statements": 0, "transactions": 0, "pings": 0}
    engine = project.store.engine

    @event.listens_for(engine, "before_cursor_execute")
    def _count(conn, cursor, statement, *args):
        counts["statements"] += 1

    ping = engine.dialect.do_ping  # counted, not changed: the pool's liveness check at each checkout

    def counted_ping(dbapi_connection):
        counts["pings"] += 1
        return ping(dbapi_connection)

    engine.dialect.do_ping = counted_ping

    @event.listens_for(engine, "begin")
    def _begin(conn):
        counts["transactions"] += 1

    lat: list[float] = []
    _annotate(project, "ann00", n, lat)
    project.close()
    lat.sort()
    return {
        "p50_ms": round(1000 * statistics.median(lat), 2),
        "p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 2),
        **{k: round(v / len(lat), 1) for k, v in counts.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-user", type=int, default=150, help="Submits per annotator per configuration.")
    ap.add_argument("--only", default="", help="Run only the configurations whose name contains this.")
    ap.add_argument(
        "--pg-url", default=os.environ.get("PREFKIT_TEST_PG_URL"), help="A PostgreSQL superuser URL."
    )
    args = ap.parse_args()
    started_env = None
    if not args.pg_url:
        args.pg_url, started_env = _start_server()
    from sqlalchemy.engine import make_url

    print(
        f"nproc={os.cpu_count()}  annotators={ANNOTATORS}  submits/annotator={args.per_user}  overlap={OVERLAP}"
    )
    pg_cpu = PgServerCpu(args.pg_url)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for backend in ("sqlite", "postgres"):
                if args.only and args.only.strip() != "solo":
                    break
                database = None
                if backend == "postgres":
                    db = "prefkit_bench_" + uuid.uuid4().hex[:8]
                    _admin(args.pg_url, f'CREATE DATABASE "{db}"')
                    database = make_url(args.pg_url).set(database=db).render_as_string(hide_password=False)
                r = solo(database, Path(tmp))
                print(
                    f"{backend:<8} 1 annotator alone: p50 {r['p50_ms']} ms  p95 {r['p95_ms']} ms  per submit: "
                    f"{r['statements']} statements, {r['transactions']} transactions, {r['pings']} pool pings",
                    flush=True,
                )
                if database:
                    _admin(args.pg_url, f'DROP DATABASE "{db}" WITH (FORCE)')
            configs = [
                ("sqlite   16 processes x 1", None, [1] * ANNOTATORS),
                ("postgres 16 processes x 1", "pg", [1] * ANNOTATORS),
                ("sqlite   1 replica x 16", None, [ANNOTATORS]),
                ("sqlite   2 replicas x 8", None, [ANNOTATORS // 2] * 2),
                ("postgres 1 replica x 16", "pg", [ANNOTATORS]),
                ("postgres 2 replicas x 8", "pg", [ANNOTATORS // 2] * 2),
            ]
            for name, backend, layout in configs:
                if args.only not in name or args.only == "solo":
                    continue
                database = None
                if backend == "pg":
                    db = "prefkit_bench_" + uuid.uuid4().hex[:8]
                    _admin(args.pg_url, f'CREATE DATABASE "{db}"')
                    database = make_url(args.pg_url).set(database=db).render_as_string(hide_password=False)
                row = run(name, database, layout, args.per_user, Path(tmp), pg_cpu if backend else None)
                rows.append(row)
                if backend == "pg":
                    _admin(args.pg_url, f'DROP DATABASE "{db}" WITH (FORCE)')
                print(
                    f"{row['config']:<28} {row['submits']:>5} submits  {row['per_s']:>6} /s  "
                    f"p50 {row['p50_ms']:>6} ms  p95 {row['p95_ms']:>6} ms  wall {row['wall_s']:>6} s  "
                    f"client CPU {row['client_cpu_s']:>6} s  server CPU {row['server_cpu_s'] if row['server_cpu_s'] is not None else '-':>6} s  "
                    f"backends {row['backends']}",
                    flush=True,
                )
    finally:
        if started_env is not None:
            subprocess.run(["bash", str(ROOT / ".ci/postgres.sh"), "stop"], env=started_env, check=False)
    by = {r["config"]: r for r in rows}
    for backend in ("sqlite  ", "postgres"):
        one, two = by.get(f"{backend} 1 replica x 16"), by.get(f"{backend} 2 replicas x 8")
        if one and two:
            print(f"{backend.strip()}: 2 replicas / 1 replica throughput = {two['per_s'] / one['per_s']:.2f}")
    cores = os.cpu_count() or 1
    for r in rows:
        busy = r["client_cpu_s"] + (r["server_cpu_s"] or 0)
        print(
            f"{r['config']:<28} CPU used {busy:6.1f} s of {cores * r['wall_s']:6.1f} s available ({busy / (cores * r['wall_s']):.0%})"
        )


if __name__ == "__main__":
    main()
