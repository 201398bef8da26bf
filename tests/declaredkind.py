"""A declared task kind with every question type, its items and three annotators' answers, shared
by the tests of declared kinds (library, CLI, browser, Label Studio, release). The agreement values
and decisions these answers give are computed by hand in tests/test_declared_kinds.py."""

from __future__ import annotations

import json
from pathlib import Path

NAME = "pairwise_alignment"

TOML = """name = "pairwise_alignment"
title = "Which response follows the user better?"

[[fields]]
name = "history"
type = "chat"
title = "Earlier conversation"
[[fields]]
name = "preferences"
type = "list"
[[fields]]
name = "response_a"
type = "text"

[[questions]]
name = "better"
type = "label"
labels = ["A", "B", "tie"]
title = "Which response follows the user's preferences better?"
[[questions]]
name = "strength"
type = "rating"
values = [1, 2, 3, 4, 5]
title = "How clear is the difference?"
[[questions]]
name = "tags"
type = "multi_label"
labels = ["x", "y"]
title = "What applies?"
required = false
[[questions]]
name = "order"
type = "ranking"
values = ["m1", "m2", "m3"]
title = "Order the models"
[[questions]]
name = "why"
type = "text"
max_length = 200
required = false
"""

ITEMS = [
    {
        "id": f"i{n}",
        "history": [
            {"role": "user", "content": f"<b>question {n}</b>"},
            {"role": "assistant", "content": "an answer"},
        ],
        "preferences": ["short answers", "no jargon"],
        "response_a": f"response **{n}**",
    }
    for n in (1, 2)
]

#: ``{annotator: {item id: values}}``
ANSWERS = {
    "ann1": {
        "i1": {"better": "A", "strength": 1, "tags": ["x"], "order": ["m1", "m2", "m3"], "why": "clear"},
        "i2": {"better": "B", "strength": 4, "tags": ["y"], "order": ["m3", "m2", "m1"]},
    },
    "ann2": {
        "i1": {"better": "A", "strength": 1, "tags": ["x", "y"], "order": ["m1", "m2", "m3"]},
        "i2": {"better": "B", "strength": 4, "tags": ["y"], "order": ["m3", "m1", "m2"]},
    },
    "ann3": {
        "i1": {"better": "B", "strength": 2, "tags": ["x"], "order": ["m2", "m1", "m3"]},
        "i2": {"better": "B", "strength": 5, "order": ["m2", "m3", "m1"]},
    },
}

#: The decisions (worked out in tests/test_declared_kinds.py).
DECIDED = {
    "i1": {"better": "A", "strength": 1, "tags": ["x"], "order": ["m1", "m2", "m3"]},
    "i2": {"better": "B", "strength": 4, "tags": ["y"], "order": ["m3", "m2", "m1"]},
}


def declare(root: Path) -> Path:
    path = Path(root) / "kinds" / f"{NAME}.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(TOML, encoding="utf-8")
    return path


def write_items(path: Path, items: list[dict] | None = None) -> Path:
    Path(path).write_text("".join(json.dumps(i) + "\n" for i in items or ITEMS), encoding="utf-8")
    return Path(path)


def label_rows() -> list[dict]:
    """The answers as a labels file's rows (``prefkit labels import``)."""
    return [
        {
            "annotator": who,
            "task_kind": NAME,
            "item_id": item,
            "action": "label",
            "timestamp": "2026-01-01T00:00:00+00:00",
            "values": values,
        }
        for who, mine in ANSWERS.items()
        for item, values in mine.items()
    ]
