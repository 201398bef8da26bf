"""Benchmark: `release cut` of 10,000 CUPID instances vs a raw DuckDB `COPY ... TO` JSONL + Parquet of
the same rows, in the same run. Goal: the cut takes at most 1.5x the raw copy.

The cut does more than the baseline (reads the project store, checks gates, writes a DuckDB file, a
card, Croissant metadata and a manifest with every file's sha256), so the ratio is the price of all
that over the bare export. Imports (numpy and pandas via the agreement code, duckdb, pyarrow) are warmed
first: they are a one-time process cost, not a cost of the cut.

Usage: .venv/bin/python bench/bench_release.py [--n 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prefkit.curation.project import Project

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = (
    "trip",
    "kids",
    "budget",
    "metric",
    "vegetarian",
    "quiet",
    "morning",
    "museum",
    "train",
    "spicy",
    "concise",
    "formal",
    "bullet",
    "summary",
    "hiking",
    "rain",
    "weekend",
    "recipe",
    "allergy",
    "jazz",
)


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def cupid_rows(n: int, seed: int = 0) -> list[dict]:
    """CUPID-shaped rows of realistic size: 4 prior sessions of 6 messages each (~6 KB per row)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        prior = [
            {
                "context_factor": _text(rng, 4),
                "contextual_preference": _text(rng, 12),
                "dialogue": [
                    {"role": ("user", "assistant")[k % 2], "content": _text(rng, 35)} for k in range(6)
                ],
            }
            for _ in range(4)
        ]
        rows.append(
            {
                "persona_id": f"persona_{i // 25:04d}",
                "instance_type": ("consistent", "contrastive", "changing")[i % 3],
                "current_request": f"{_text(rng, 20)} ({i})",
                "current_context_factor": _text(rng, 4),
                "current_contextual_preference": _text(rng, 12),
                "current_checklist": [_text(rng, 8) for _ in range(3)],
                "prior_interactions": prior,
            }
        )
    return rows


def baseline(src: Path, out: Path) -> float:
    """DuckDB reads the rows and COPYs them to JSONL and to Parquet (zstd)."""
    import duckdb

    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    con = duckdb.connect()
    con.execute(f"CREATE TABLE cupid AS SELECT * FROM read_json('{src}', format='newline_delimited')")
    con.execute(f"COPY cupid TO '{out / 'test.jsonl'}' (FORMAT json)")
    con.execute(f"COPY cupid TO '{out / 'test.parquet'}' (FORMAT parquet, COMPRESSION zstd)")
    con.close()
    return time.perf_counter() - start


def cut(project: Project, version: str) -> float:
    from prefkit.exports.release import cut_release

    start = time.perf_counter()
    cut_release(project, version)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import duckdb  # noqa: F401
    import prefkit.curation.quality.agreement  # noqa: F401 - warm the heavy imports outside the timings
    import pyarrow.parquet  # noqa: F401
    from prefkit.curation.project import Project
    from prefkit.pipelines.ingest import cupid

    tmp = Path(tempfile.mkdtemp(prefix="bench_release_"))
    try:
        src = tmp / "cupid.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in cupid_rows(args.n)), encoding="utf-8")
        project = Project.init(tmp / "proj", name="bench")
        # Imported rows nobody verified: the release is the unverified CUPID config (the verified one
        # would be empty and its label gates would refuse the cut).
        toml = project.root / "prefkit.toml"
        toml.write_text(
            toml.read_text().replace("[release]\n", '[release]\nconfigs = ["cupid_unverified"]\n', 1)
        )
        project.__dict__.pop("config", None)
        t0 = time.perf_counter()
        project.store.content.import_bundle(cupid.build_bundle(src, "MIT"))
        print(
            f"setup: {args.n} CUPID instances ({src.stat().st_size / 1e6:.1f} MB JSONL) imported in "
            f"{time.perf_counter() - t0:.2f}s; nproc={os.cpu_count()}"
        )
        cuts, raws = [], []
        for i in range(args.repeat):
            raws.append(baseline(src, tmp / f"raw{i}"))
            cuts.append(cut(project, f"1.0.{i}"))
        rel = project.releases_dir / "1.0.0"
        size = sum(p.stat().st_size for p in rel.rglob("*") if p.is_file())
        raw_t, cut_t = statistics.median(raws), statistics.median(cuts)
        print(
            f"raw DuckDB COPY to JSONL + Parquet : median {raw_t:.2f}s  (runs: {', '.join(f'{x:.2f}' for x in raws)})"
        )
        print(
            f"prefkit release cut                : median {cut_t:.2f}s  (runs: {', '.join(f'{x:.2f}' for x in cuts)})"
        )
        print(f"release size {size / 1e6:.1f} MB in {sum(1 for p in rel.rglob('*') if p.is_file())} files")
        print(f"ratio cut / raw: {cut_t / raw_t:.2f}x (goal <= 1.5x)")
        project.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
