"""Benchmark of a span question's word units: one label with N spans on an N-word field.

Run: .venv/bin/python bench/bench_spans.py [--words 8000] [--repeat 3]

Prints the wall time (median of --repeat runs) of checking the answer (``answers``) and of splitting it
into word units (``item_units``, what every agreement, decision and gate pass recomputes), and of
deciding three annotators' units and assembling the spans again, at N/4, N/2 and N words, so the growth shows, and the core count. Goal: under 2 s at 8,000 words and 8,000 spans,
growing near-linearly.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prefkit.curation.annotation.declared import DeclaredKind, KindDeclaration  # noqa: E402

DECLARATION = {
    "name": "marks",
    "title": "Marks",
    "fields": [{"name": "response", "type": "text"}],
    "questions": [{"name": "marks", "type": "span", "field": "response", "labels": ["follows", "breaks"]}],
}


def case(words: int) -> tuple[dict, dict]:
    """An N-word field and one label marking every word (N spans), alternating the two labels."""
    text = " ".join(f"w{n}" for n in range(words))
    spans, at = [], 0
    for n in range(words):
        end = at + len(f"w{n}")
        spans.append({"start": at, "end": end, "label": ("follows", "breaks")[n % 2]})
        at = end + 1
    return {"response": text}, {"marks": spans}


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--words", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    kind = DeclaredKind(KindDeclaration.model_validate(DECLARATION), Path("."))
    print(f"cores: {os.cpu_count()}")
    for words in (args.words // 4, args.words // 2, args.words):
        payload, values = case(words)
        task = SimpleNamespace(payload=payload)
        t_check = timed(lambda p=payload, v=values: kind.answers(v, p), args.repeat)
        t_units = timed(lambda v=values, t=task: kind.item_units(v, t), args.repeat)
        units = kind.item_units(values, task)
        votes = {u: [v, v, "no"] for u, v in units.items()}  # three annotators, two marking each word
        t_decide = timed(lambda v=votes: kind.assemble(kind.decide(v)[0], {}), args.repeat)
        print(
            f"{words:>6,} words, {words:>6,} spans: answers {t_check:6.3f} s, item_units {t_units:6.3f} s ({len(units):,} units), decide and assemble {t_decide:6.3f} s"
        )


if __name__ == "__main__":
    main()
