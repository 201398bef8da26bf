"""A LongMemEval-style "memory QA" declared kind: a chat history in sessions with dates, a question, the
model's answer and three candidates; a span, a label, a ranking of the candidates' texts and an
optional text question. Shared by the long-item tests (library, app, browser, Label Studio), the
screenshots (docs/screenshots.py) and the declared case of bench/bench_browser.py."""

from __future__ import annotations

from datetime import date, timedelta

NAME = "memory_qa"

TOML = """name = "memory_qa"
title = "Does the answer remember the user?"
summary = "question"

[[fields]]
name = "history"
type = "chat"
title = "Earlier sessions"
[[fields]]
name = "question"
type = "text"
title = "The question"
[[fields]]
name = "answer"
type = "text"
title = "The model's answer"
[[fields]]
name = "candidate_a"
type = "text"
title = "Candidate A"
[[fields]]
name = "candidate_b"
type = "text"
title = "Candidate B"
[[fields]]
name = "candidate_c"
type = "text"
title = "Candidate C"

[[questions]]
name = "evidence"
type = "span"
field = "history"
labels = ["evidence"]
title = "Mark the words of the history that answer the question"
required = false
[[questions]]
name = "verdict"
type = "label"
labels = ["correct", "wrong", "not_answerable"]
titles = { not_answerable = "Not answerable" }
title = "Is the model's answer right?"
[[questions]]
name = "best"
type = "ranking"
values_from = ["candidate_a", "candidate_b", "candidate_c"]
title = "Rank the candidates"
[[questions]]
name = "note"
type = "text"
max_length = 300
required = false
title = "Anything else (optional)"
"""

_WORDS = (
    "we talked about the trip to Lisbon and the hotel near the river that you booked for the second "
    "week of May with a view of the bridge and a small kitchen for cooking breakfast each morning"
).split()


def _turn(n: int, words: int) -> str:
    return " ".join(_WORDS[(n + k) % len(_WORDS)] for k in range(words))


def history(sessions: int = 3, turns: int = 6, words: int = 20) -> list[dict]:
    """``sessions`` sessions of ``turns`` turns of ``words`` words; each session's first turn names it
    and its date."""
    out = []
    for s in range(sessions):
        for t in range(turns):
            turn = {"role": "user" if t % 2 == 0 else "assistant", "content": _turn(s * turns + t, words)}
            if t == 0:
                turn |= {"session": f"Session {s + 1}", "date": str(date(2024, 1, 3) + timedelta(weeks=s))}
            out.append(turn)
    out[1]["content"] = "I moved to Porto last spring, so my dentist is there now."
    return out


def item(n: int, sessions: int = 3, turns: int = 6, words: int = 20) -> dict:
    return {
        "id": f"q{n}",
        "history": history(sessions, turns, words),
        "question": f"Where does the user live now? ({n})",
        "answer": "The user lives in Porto.",
        "candidate_a": "In Lisbon, near the river.",
        "candidate_b": "In Porto: they moved there last spring.",
        "candidate_c": "The history does not say.",
    }


ITEMS = [item(n) for n in (1, 2)]
