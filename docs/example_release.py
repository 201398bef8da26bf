"""Write ``pipelines/examples/release/``: the inputs of docs/release.md's walk-through.

``cupid.jsonl`` (6 instances) and ``cupid_more.jsonl`` (4 more) are CUPID rows of our own (two and one
simulated users, the three instance types each, with one prior interaction); ``pairs.jsonl`` holds 12
preference pairs and ``labels.jsonl`` the coverage labels of three annotators: unanimous on ten, a 2-1
split on one, a three-way tie on one (something to adjudicate). ``prefkit examples`` copies them. Run
``python docs/example_release.py`` to rewrite them; the page's console blocks fail when they no longer fit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "pipelines" / "examples" / "release"
TYPES = ("consistent", "contrastive", "changing")

#: (context factor, preference, the contrasting preference, a request, checklist)
USERS = {
    "u_nurse": (
        "night shifts on the surgical ward",
        "Keep plans to three steps I can read at a glance",
        "Give me the full reasoning with every step spelled out",
        "Plan my week of night shifts.",
        ["Does the plan have at most three steps?", "Can it be read at a glance?"],
    ),
    "u_cyclist": (
        "the Sunday club ride",
        "Suggest routes without busy main roads",
        "Take the fastest route, main roads are fine",
        "Find me a 60 km loop for Sunday.",
        ["Does the route avoid busy main roads?", "Is the loop about 60 km?"],
    ),
    "u_teacher": (
        "marking Year 9 essays",
        "Feedback should start with one thing the student did well",
        "Feedback should go straight to the biggest problem",
        "Help me comment on this essay.",
        ["Does the feedback open with a strength?", "Is the tone encouraging?"],
    ),
}


def cupid_row(persona: str, k: int) -> dict:
    factor, pref, other, request, checklist = USERS[persona]
    kind = TYPES[k % 3]
    request = request if k < 3 else f"{request} Same again for next month."
    current = other if kind == "changing" else pref
    return {
        "persona_id": persona,
        "instance_type": kind,
        "current_request": request if kind != "contrastive" else f"{request} (this time for a colleague)",
        "current_context_factor": factor if kind != "contrastive" else f"a colleague's {factor}",
        "current_contextual_preference": current if kind != "contrastive" else other,
        "current_checklist": checklist,
        "prior_interactions": [
            {
                "context_factor": factor,
                "contextual_preference": pref,
                "dialogue": [
                    {"role": "user", "content": f"{request} Last time it was too much to take in."},
                    {"role": "assistant", "content": "Understood. Here is a shorter version."},
                ],
            }
        ],
    }


def pairs() -> list[dict]:
    rows = []
    for i in range(12):
        factor, pref, _, _, checklist = USERS[list(USERS)[i % 3]]
        rows.append(
            {"pair_id": f"r{i:02d}", "checklist_item": checklist[i % 2], "candidate": f"{pref} ({factor})"}
        )
    return rows


def labels() -> list[dict]:
    rows = []
    for i in range(12):
        answers = ["fully", "partially", "not_covered"][i % 3]
        by = {"ann1": answers, "ann2": answers, "ann3": answers}
        if i == 4:
            by["ann3"] = "not_covered"  # a 2-1 split: the majority decides
        if i == 7:
            by = {"ann1": "fully", "ann2": "partially", "ann3": "not_covered"}  # a tie: a maintainer decides
        for k, (who, value) in enumerate(by.items()):
            rows.append(
                {
                    "annotator": who,
                    "task_kind": "preference_match",
                    "item_id": f"pair:r{i:02d}",
                    "values": {"coverage": value},
                    "time_spent_s": 12.0 + (i * 7 + k * 5) % 20,
                    "timestamp": f"2026-11-25T09:{i * 3 + k:02d}:00Z",
                }
            )
    return rows


def _write(name: str, rows: list[dict]) -> None:
    (OUT / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    _write("cupid.jsonl", [cupid_row(p, k) for p in ("u_nurse", "u_cyclist") for k in range(3)])
    _write("cupid_more.jsonl", [cupid_row("u_teacher", k) for k in range(3)] + [cupid_row("u_nurse", 3)])
    _write("pairs.jsonl", pairs())
    _write("labels.jsonl", labels())
    print(f"wrote the release example files to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
