"""What the memory-extraction stages ask an LLM to return (``prefkit memories extract``).

Stage 1 proposes candidates in the AlpsBench :class:`~prefkit.schemas.alpsbench.MemoryItem` shape (without ids,
which prefkit assigns); stage 2 judges each candidate by id and may neither add nor remove any.
"""

from __future__ import annotations

from typing import Literal

from prefkit.schemas.alpsbench import TaxonomyLabel
from prefkit.schemas.common import Contract
from pydantic import Field

#: Stage-2 confidence levels: certain, likely, plausible, weak; a rejected candidate gets 0.10.
CONFIDENCE_LEVELS = (0.95, 0.80, 0.65, 0.50)
REJECTED_CONFIDENCE = 0.10


class CandidateEvidence(Contract):
    utterance_index: int = Field(ge=0, description="0-based index of the turn that holds the evidence.")
    text: str = Field(min_length=1, description="Verbatim quote from that turn ('...' marks elided text).")


class MemoryCandidate(Contract):
    """One proposed memory (stage 1)."""

    type: Literal["direct", "indirect"] = Field(description="direct = stated; indirect = implied.")
    label: TaxonomyLabel = Field(description="Taxonomy path such as 'Preferences/Food', or 'UNMAPPED'.")
    label_suggestion: str | None = Field(default=None, description="A proposed label when UNMAPPED.")
    value: str = Field(min_length=1, description="The memory as one short statement about the user.")
    reasoning: str = Field(min_length=1, description="Why the evidence supports the memory.")
    evidence: CandidateEvidence = Field(description="Where the memory is grounded.")
    confidence: float = Field(ge=0.0, le=1.0, description="The proposer's confidence in [0, 1].")
    time_scope: Literal["long_term", "short_term", "unknown"] = Field(description="How long it holds.")


class CandidateList(Contract):
    memories: list[MemoryCandidate] = Field(description="Every candidate memory, high recall.")


class Judgement(Contract):
    """Stage 2's verdict on one candidate."""

    memory_id: str = Field(description="The candidate's id as given (m1, m2, ...).")
    verdict: Literal["keep", "reject"] = Field(description="keep, or reject when not supported.")
    confidence: float = Field(
        description="0.95 certain, 0.80 likely, 0.65 plausible, 0.50 weak; 0.10 when rejected."
    )
    reason: str = Field(min_length=1, description="One sentence: why this verdict and level.")


class JudgementList(Contract):
    judgements: list[Judgement] = Field(description="Exactly one judgement per candidate, same ids.")


# -- task building (``prefkit tasks build-alpsbench``) -------------------------------------------------
class UserQuery(Contract):
    """A request the user might send next (tasks 3 and 4)."""

    query: str = Field(min_length=1, description="The user's next message, in their language and voice.")


class SegmentTurn(Contract):
    role: Literal["user", "assistant"] = Field(description="Who speaks.")
    text: str = Field(min_length=1, description="What they say.")


class SegmentMemory(Contract):
    type: Literal["direct", "indirect"] = Field(description="direct or indirect.")
    label: TaxonomyLabel = Field(description="Taxonomy path.")
    value: str = Field(min_length=1, description="The memory as one short statement about the user.")


class Segment(Contract):
    kind: Literal["neutral", "new", "conflict"] = Field(
        description="neutral: nothing personal; new: reveals one new memory; conflict: contradicts the target."
    )
    turns: list[SegmentTurn] = Field(min_length=2, description="The segment's turns, user first.")
    memory: SegmentMemory | None = Field(default=None, description="The memory it reveals (new / conflict).")


class UpdateDialogue(Contract):
    """A follow-up conversation in controlled segments (task 2)."""

    segments: list[Segment] = Field(
        min_length=3, description="Neutral, new and conflict segments in any order."
    )
