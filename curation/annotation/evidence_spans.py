"""Evidence as spans: the words of a dialogue turn an annotator selected as showing a preference or a
memory, kept with the turn and character offsets (Python string indexes: code points) and the text
itself, checked against the turn as the task shows it. Turn-level evidence stays the quick way; a span
is the precise one, and both are released with the labels.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prefkit.curation.annotation.task_kinds import LabelError
from prefkit.schemas.common import Contract
from pydantic import Field, model_validator


class EvidenceSpan(Contract):
    turn: int = Field(ge=0, description="Index of the dialogue turn the words are in.")
    start: int = Field(ge=0, description="Offset of the first character in the turn's text (code points).")
    end: int = Field(gt=0, description="Offset just after the last character (code points).")
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


def merge_spans(span_lists: Iterable[Iterable[dict[str, Any]] | None]) -> list[dict[str, Any]]:
    """The spans of several labels as one list: each span once, in dialogue order."""
    seen: dict[tuple[int, int, int], dict[str, Any]] = {}
    for spans in span_lists:
        for s in spans or []:
            seen.setdefault((s["turn"], s["start"], s["end"]), dict(s))
    return [seen[k] for k in sorted(seen)]
