"""How long the AlpsBench journey takes, stage by stage, on the real packets in ../shared.

The journey of docs/alpsbench.md as a user runs it (tests/journeykit.py: every step the real
``prefkit`` command): import -> memory_verify tasks -> memory_verify labels (tasks export, a label
file, labels import) -> build-alpsbench (offline backend) -> task_qc labels -> release check ->
release cut -> release verify. Prints seconds per stage and the total, with the core count.

    python bench/bench_journey.py [--packets 400] [--sample ../shared/data/alpsbench/annotation_packets_sample]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the journey's steps are the tests' own (tests/journeykit.py)

from journeykit import alpsbench_journey  # noqa: E402

DEFAULT_SAMPLE = ROOT.parent / "shared" / "data" / "alpsbench" / "annotation_packets_sample"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=400)
    ap.add_argument("--sample", type=Path, default=DEFAULT_SAMPLE)
    args = ap.parse_args()
    if not args.sample.is_dir():
        print(f"no AlpsBench sample at {args.sample} (../shared is absent)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as work:
        t0 = time.perf_counter()
        journey = alpsbench_journey(args.sample, Path(work), args.packets)
        total = time.perf_counter() - t0
    print(f"AlpsBench journey on {args.packets} real packets, {os.cpu_count()} cores")
    print(f"{'stage':<24} {'seconds':>8}")
    for stage, seconds in journey.times.items():
        print(f"{stage:<24} {seconds:8.1f}")
    print(f"{'total (with set-up)':<24} {total:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
