"""*My items* on a big project: what one page of an annotator's items costs.

Builds the project ``bench_app.py`` builds (100,000 preference_match items, 300,000 label events, 20
annotators; the annotator timed holds ~15,000 labels) and times
:func:`prefkit.curation.annotation.my_items.my_items`, the one call the page makes per run, for:

- the first page, every status (what the page opens with);
- a later page, and the *done* status alone;
- a search by an item's reference (one match) and by words every item has (``deadline``: the worst
  case, every one of the annotator's items matches and is checked on its own text);
- the batch filter's choices (``my_batches``).

Each is run ``--repeat`` times; p50 and max in milliseconds.

Usage: python bench/bench_my_items.py [--items 100000] [--events 300000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import build  # noqa: E402 (the bench folder is no package)
from prefkit.curation.annotation.my_items import my_batches, my_items  # noqa: E402


def timed(call, repeat: int) -> tuple[float, float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        project = build(Path(tmp) / "proj", args.items, args.events)
        print(
            f"built {args.items:,} items, {project.store.count('label_events'):,} events in "
            f"{time.perf_counter() - t0:.1f}s"
        )
        user = "ann00"
        some = my_items(project, user, page=3).items[0].task.item_ref
        cases = {
            "first page, every status": lambda: my_items(project, user),
            "page 50": lambda: my_items(project, user, page=50),
            "status done": lambda: my_items(project, user, statuses=["done"]),
            f"search {some!r} (one item)": lambda: my_items(project, user, search=some),
            "search 'deadline' (every item)": lambda: my_items(project, user, search="deadline"),
            "batch choices": lambda: my_batches(project, user),
        }
        for name, call in cases.items():
            p50, worst, out = timed(call, args.repeat)
            total = getattr(out, "total", None)
            extra = f" ({total:,} match)" if total is not None else ""
            print(f"{name:<34} p50 {p50:7.1f} ms   max {worst:7.1f} ms{extra}")
        project.close()


if __name__ == "__main__":
    main()
