"""A declared task kind with span questions (words of a text field and of a chat field's turns), its
items and three annotators' spans, shared by the span tests (library, app, browser, Label Studio,
release). Agreement and decisions on these answers are worked out by hand in tests/test_declared_spans.py."""

from __future__ import annotations

from pathlib import Path

import declaredkind

NAME = "marked_words"

TOML = """name = "marked_words"
title = "Mark the words"

[[fields]]
name = "history"
type = "chat"
title = "Earlier conversation"
[[fields]]
name = "response"
type = "text"
title = "The response"

[[questions]]
name = "marks"
type = "span"
field = "response"
labels = ["pref", "bad"]
title = "Mark what follows a preference, and what breaks one"
[[questions]]
name = "said"
type = "span"
field = "history"
labels = ["pref"]
title = "Where does the user state a preference?"
required = false
"""

ITEMS = [
    {
        "id": "s1",
        "history": [
            {"role": "user", "content": "I like short answers please"},
            {"role": "assistant", "content": "ok"},
        ],
        "response": "ride the bike lane",
    }
]

#: ``{annotator: values}`` for item s1. response words: ride 0-4, the 5-8, bike 9-13, lane 14-18;
#: turn 0 words: I 0-1, like 2-6, short 7-12, answers 13-20, please 21-27; turn 1: ok 0-2.
ANSWERS = {
    "ann1": {
        "marks": [{"start": 9, "end": 18, "label": "pref"}],
        "said": [{"turn": 0, "start": 7, "end": 20, "label": "pref"}],
    },
    "ann2": {
        "marks": [{"start": 0, "end": 4, "label": "bad"}, {"start": 14, "end": 18, "label": "pref"}],
        "said": [{"turn": 0, "start": 7, "end": 12, "label": "pref"}],
    },
    "ann3": {"marks": [{"start": 9, "end": 13, "label": "pref"}]},
}

#: bike and lane are marked pref by two of three (one span again), ride bad by one of three (not kept);
#: short by both who answered, answers by one of two (not a majority).
DECIDED = {
    "marks": [{"start": 9, "end": 18, "label": "pref"}],
    "said": [{"turn": 0, "start": 7, "end": 12, "label": "pref"}],
}


def declare(root: Path, toml: str = TOML) -> Path:
    return declaredkind.declare(root, toml, NAME)


def write_items(path: Path, items: list[dict] | None = None) -> Path:
    return declaredkind.write_items(path, items or ITEMS)


def declared_project(root: Path, title: str | None, overlap: str = "3", items: list[dict] | None = None):
    return declaredkind.declared_project(root, title, overlap, TOML, NAME, items or ITEMS)


def labelled(project, tmp_path: Path) -> tuple[int, int]:
    return declaredkind.labelled(project, tmp_path, TOML, NAME, ITEMS, label_rows())


def label_rows() -> list[dict]:
    """The answers as a labels file's rows (``prefkit labels import``)."""
    return declaredkind.label_rows({who: {"s1": values} for who, values in ANSWERS.items()}, NAME)
