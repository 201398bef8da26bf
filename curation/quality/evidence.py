"""The evidence check: is a memory's quoted evidence really in the dialogue turn it cites?

One implementation serves the release gate (``gold_evidence``) and ``prefkit memories check-evidence``.
Each memory gets a status, ``pass``, ``near_miss`` or ``fail``; what each means, elided quotes and the
differences that are not failures are in docs/alpsbench.md (*The evidence check*). Model extractions in
AlpsBench's format cite no turn: for them a quote found in any turn passes. This module reads the store
and never writes.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefkit.curation.store import DialogueTurn, ProjectStore, StoredMemory

#: Marks of elided text inside a quote.
ELISION = re.compile(
    r"\[\s*(?:\.\.\.|…|\d+\s*(?:characters?|chars?|words?|tokens?)(?:\s+omitted)?)\s*\]|\.\.\.+|…",
    re.IGNORECASE,
)
STATUSES = ("pass", "near_miss", "fail")


class _Dropped(dict):
    """``str.translate``'s table for :func:`normalize`: whitespace, punctuation (``P*``) and invisible
    format characters (``Cf``) map to None (deleted), every other character to itself. Each character's
    verdict is worked out the first time it is met and kept, so translating runs at C speed (a release
    check normalizes every dialogue of every packet)."""

    def __missing__(self, code: int) -> int | None:
        ch = chr(code)
        cat = unicodedata.category(ch)
        kept = None if ch.isspace() or cat == "Cf" or cat.startswith("P") else code
        self[code] = kept
        return kept


_DROPPED = _Dropped()


def normalize(text: str) -> str:
    """NFKC, casefolded, without whitespace, punctuation or invisible format characters."""
    return unicodedata.normalize("NFKC", text).casefold().translate(_DROPPED)


def pieces(quote: str) -> list[str]:
    """The normalized fragments of a quote, split at its elision marks (empty ones dropped)."""
    return [p for p in (normalize(f) for f in ELISION.split(quote)) if p]


def quote_in(quote_pieces: list[str], haystack: str) -> bool:
    r"""Whether the pieces occur in order in ``haystack`` (a turn's text after :func:`normalize`)."""
    if not quote_pieces:
        return False
    at = 0
    for piece in quote_pieces:
        found = haystack.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def find_quote(text: str | None, turns: list[tuple[int, str]]) -> int | None:
    """The first of ``turns`` (``(index, text)`` pairs) that holds the quote under the rules above
    (elisions, case, spacing and punctuation aside), or None: where an edit of a memory that cites no
    turn should point."""
    quote = pieces(str(text or ""))
    return next((i for i, content in turns if quote and quote_in(quote, normalize(content))), None)


class Normalized(dict):
    """A dialogue's turns as ``{index: normalized text}``, computed once per dialogue."""

    def __init__(self, turns: list[DialogueTurn]):
        super().__init__((t.index, normalize(t.content)) for t in turns)
        self.n_turns = len(turns)


@dataclass(frozen=True)
class Verdict:
    status: str  # pass | near_miss | fail
    reason: str
    found_in: int | None = None  # the turn where the quote was found, if any


def check_quote(
    text: str | None, index: int | list[int] | None, turns: list[DialogueTurn] | Normalized
) -> Verdict:
    """The verdict for one quote citing ``index`` (an int, a list of ints, or None = no turn cited)."""
    if text is None or not str(text).strip():
        return Verdict("fail", "empty quote")
    quote = pieces(str(text))
    if not quote:
        return Verdict("fail", "quote has no text besides elisions and punctuation")
    contents = turns if isinstance(turns, Normalized) else Normalized(turns)
    cited = [] if index is None else (index if isinstance(index, list) else [index])
    if any(not isinstance(i, int) or isinstance(i, bool) for i in cited):
        return Verdict("fail", f"utterance_index {index!r} is not an integer")
    outside = [i for i in cited if i not in contents]
    if outside:
        return Verdict("fail", f"utterance_index {outside} outside the dialogue ({contents.n_turns} turns)")
    for i in cited:
        if quote_in(quote, contents[i]):
            return Verdict("pass", f"found in cited turn {i}", i)
    elsewhere = next((i for i in sorted(contents) if i not in cited and quote_in(quote, contents[i])), None)
    if not cited:
        if elsewhere is None:
            return Verdict("fail", "quote not found in any turn")
        return Verdict("pass", f"no turn cited; found in turn {elsewhere}", elsewhere)
    if elsewhere is not None:
        return Verdict("near_miss", f"not in cited turn {index}; found in turn {elsewhere}", elsewhere)
    return Verdict("fail", f"quote not found at utterance_index {index} nor in any other turn")


def memory_evidence(memory: Any) -> tuple[str | None, Any]:
    """``(quote, cited index)`` of a gold MemoryItem, a model extraction (``evidence_text``) or a
    candidate in MemoryItem form."""
    if not isinstance(memory, dict):
        return None, None
    evidence = memory.get("evidence")
    if isinstance(evidence, dict):
        return evidence.get("text"), evidence.get("utterance_index")
    return memory.get("evidence_text"), None


def check_memory(memory: Any, turns: list[DialogueTurn] | Normalized, cite_required: bool) -> Verdict:
    text, index = memory_evidence(memory)
    verdict = check_quote(text, index, turns)
    if cite_required and index is None and verdict.status == "pass":
        return Verdict(
            "near_miss", f"no utterance_index; quote found in turn {verdict.found_in}", verdict.found_in
        )
    return verdict


def _source_of(m: StoredMemory) -> str:
    return "gold" if m.origin == "gold" else m.source_model


def evidence_rows(store: ProjectStore, source: str = "all") -> list[dict[str, Any]]:
    """One row per memory of ``source`` (``gold``, a model name, or ``all``) with its verdict."""
    rows: list[dict[str, Any]] = []
    memories = store.content.memories(origin="gold") if source == "gold" else store.content.memories()
    by_dialogue: dict[str, list[StoredMemory]] = {}
    for m in memories:
        if m.origin not in ("gold", "candidate"):
            continue
        if source not in ("all", _source_of(m)):
            continue
        by_dialogue.setdefault(m.dialogue_id, []).append(m)
    for dialogue_id in sorted(by_dialogue):
        turns = Normalized(store.content.original_turns(dialogue_id))
        for m in by_dialogue[dialogue_id]:
            gold = m.origin == "gold"
            memory = m.record if gold else m.raw
            v = check_memory(
                memory, turns, cite_required=gold or isinstance((memory or {}).get("evidence"), dict)
            )
            rows.append(
                {
                    "session_id": dialogue_id,
                    "memory_id": m.memory_id,
                    "source": _source_of(m),
                    "position": m.position,
                    **asdict(v),
                }
            )
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Counts per source: memories, pass, near_miss, fail and the pass rate."""
    by_source: dict[str, Counter] = {}
    for r in rows:
        by_source.setdefault(r["source"], Counter())[r["status"]] += 1
    out = []
    for source in sorted(by_source, key=lambda s: (s != "gold", s)):
        c = by_source[source]
        n = sum(c.values())
        out.append(
            {
                "source": source,
                "memories": n,
                **{s: c[s] for s in STATUSES},
                "pass_rate": round(c["pass"] / n, 3) if n else None,
            }
        )
    return out


def sources(store: ProjectStore) -> list[str]:
    """``gold`` (when there is gold) and every model with extractions in the project."""
    names = {_source_of(m) for m in store.content.memories() if m.origin in ("gold", "candidate")}
    return sorted(names, key=lambda s: (s != "gold", s))
