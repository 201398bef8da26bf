"""Evidence as spans: the words of a dialogue turn an annotator selected as showing a preference or a
memory, kept with the turn and character offsets (Python string indexes: code points) and the text
itself, checked against the turn as the task shows it. Turn-level evidence stays the quick way; a span
is the precise one, and both are released with the labels.

Offsets are integers (never ``"3"`` or ``3.0``), and a span never splits a grapheme cluster (an
accented letter written as a letter and a combining mark, an emoji with its skin tone or joined
emoji, a flag): what a reader sees as one character is in the span whole or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import regex
from prefkit.curation.annotation.task_kinds import LabelError
from prefkit.schemas.common import Contract
from pydantic import Field, ValidationError, model_validator


class EvidenceSpan(Contract):
    turn: int = Field(ge=0, strict=True, description="Index of the dialogue turn the words are in.")
    start: int = Field(
        ge=0, strict=True, description="Offset of the first character in the turn's text (code points)."
    )
    end: int = Field(gt=0, strict=True, description="Offset just after the last character (code points).")
    text: str = Field(min_length=1, description="The selected words, exactly as in the turn.")

    @model_validator(mode="after")
    def _consistent(self) -> EvidenceSpan:
        if self.end <= self.start:
            raise ValueError("end must be after start")
        if len(self.text) != self.end - self.start:
            raise ValueError(
                f"text has {len(self.text)} characters, the offsets span {self.end - self.start}"
            )
        return self


def check_spans(
    spans: Iterable[Any], turns: list[dict[str, Any]], where: str, roles: tuple[str, ...] = ()
) -> None:
    """Every span's words are the turn's text at its offsets (and, with ``roles``, a turn of one of
    them); otherwise :class:`LabelError` naming the span (``items.0.spans.1: ...``)."""
    by_index = {t["index"]: t for t in turns}
    for i, span in enumerate(spans):
        turn = by_index.get(span.turn)
        if turn is None:
            raise LabelError(f"{where}.spans.{i}: the dialogue has no turn {span.turn}")
        if roles and turn["role"] not in roles:
            raise LabelError(f"{where}.spans.{i}: turn {span.turn} is not a {' or '.join(roles)} turn")
        if turn["content"][span.start : span.end] != span.text:
            raise LabelError(
                f"{where}.spans.{i}: turn {span.turn} does not have {span.text!r} at characters "
                f"{span.start}-{span.end}"
            )
        ok = grapheme_bounds(turn["content"])
        if span.start not in ok or span.end not in ok:
            raise LabelError(
                f"{where}.spans.{i}: characters {span.start}-{span.end} of turn {span.turn} split a "
                "character (a letter from its accent, or an emoji from its modifier): select it whole"
            )


@lru_cache(maxsize=256)
def grapheme_bounds(text: str) -> frozenset[int]:
    """The offsets (code points) between the grapheme clusters of ``text``, both ends included: where a
    span may start and end (Unicode's extended grapheme clusters, as a browser moves its caret)."""
    bounds, at = {0}, 0
    for cluster in regex.findall(r"\X", text):
        at += len(cluster)
        bounds.add(at)
    return frozenset(bounds)


def draft_spans(value: Any, turns: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """``value`` as a list of spans a form may show again (a draft's, put back after a reload): each a
    valid :class:`EvidenceSpan` whose words are still the turn's at its offsets (a turn rewritten
    since takes its spans with it). None when ``value`` is no list of spans at all."""
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, dict) and "label" not in v for v in value)
    ):
        return None  # not evidence spans (a declared kind's span question checks its own: its form)
    kept = []
    for v in value:
        try:
            span = EvidenceSpan.model_validate(v)
            check_spans([span], turns, "draft")
        except (ValidationError, LabelError):
            continue
        kept.append(span.model_dump())
    return kept


def merge_spans(span_lists: Iterable[Iterable[dict[str, Any]] | None]) -> list[dict[str, Any]]:
    """The spans of several labels as one list: each span once, in dialogue order."""
    seen: dict[tuple[int, int, int], dict[str, Any]] = {}
    for spans in span_lists:
        for s in spans or []:
            seen.setdefault((s["turn"], s["start"], s["end"]), dict(s))
    return [seen[k] for k in sorted(seen)]
