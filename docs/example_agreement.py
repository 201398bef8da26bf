"""Write ``pipelines/examples/agreement/``: the inputs of docs/agreement.md's walk-through.

``pairs.jsonl`` holds 40 preference pairs (``p00`` .. ``p39``); ``human_labels.jsonl`` the coverage labels
of three annotators of different care (``ann2`` careful, ``ann1`` middling, ``ann3`` hasty);
``judge_labels.jsonl`` those of an LLM judge (``gpt-judge``). Drawn with a fixed seed, so the files are
byte-stable; ``prefkit examples`` copies them. Run ``python docs/example_agreement.py`` to rewrite them;
the page's console blocks (``tests/test_console_blocks.py``) fail when they no longer fit.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "pipelines" / "examples" / "agreement"
COVERAGE = ("not_covered", "partially", "fully")
#: annotator -> (share of answers equal to the truth, mean seconds per label)
RATERS = {"ann1": (0.8, 16.0), "ann2": (0.93, 18.0), "ann3": (0.65, 19.0)}
JUDGE = ("gpt-judge", 0.82)
TOPICS = (
    "metric units when cooking",
    "short answers on a phone",
    "vegetarian recipes",
    "morning workouts",
    "budget travel",
    "quiet cafés for work",
    "audiobooks on the commute",
    "dark mode everywhere",
    "step-by-step instructions",
    "British spelling",
)


def pairs() -> list[dict]:
    return [
        {
            "pair_id": f"p{i:02d}",
            "checklist_item": f"Does the answer respect the user's preference for {TOPICS[i % 10]}? ({i})",
            "candidate": f"Prefers {TOPICS[(i * 3) % 10]} ({i})",
        }
        for i in range(40)
    ]


def _answer(rng: random.Random, truth: str, accuracy: float) -> str:
    return truth if rng.random() < accuracy else rng.choice([c for c in COVERAGE if c != truth])


def labels(seed: int = 11) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    human, judge = [], []
    for i in range(40):
        truth = rng.choice(COVERAGE)
        for k, (who, (accuracy, seconds)) in enumerate(RATERS.items()):
            human.append(
                {
                    "annotator": who,
                    "task_kind": "preference_match",
                    "item_id": f"pair:p{i:02d}",
                    "values": {"coverage": _answer(rng, truth, accuracy)},
                    "time_spent_s": round(rng.uniform(0.5, 1.5) * seconds, 1),
                    "timestamp": f"2026-11-20T{10 + i // 20:02d}:{(i * 3) % 60:02d}:{k:02d}Z",
                }
            )
        judge.append(
            {
                "annotator": JUDGE[0],
                "task_kind": "preference_match",
                "item_id": f"pair:p{i:02d}",
                "values": {"coverage": _answer(rng, truth, JUDGE[1])},
                "timestamp": f"2026-11-20T11:{i:02d}:30Z",
            }
        )
    return human, judge


def _write(name: str, rows: list[dict]) -> None:
    (OUT / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    human, judge = labels()
    _write("pairs.jsonl", pairs())
    _write("human_labels.jsonl", human)
    _write("judge_labels.jsonl", judge)
    print(f"wrote 40 pairs, {len(human)} human and {len(judge)} judge labels to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
