"""What a model answers when it suggests a label (``prefkit suggest``): strict contracts the LLM layer
validates (a schema-invalid answer is re-asked, then a failure; never a suggestion)."""

from __future__ import annotations

from typing import Literal

from prefkit.schemas.common import Contract
from pydantic import Field


class CoverageSuggestion(Contract):
    """Preference matching: how much of the checklist item the candidate covers."""

    reason: str = Field(description="One sentence: what the candidate covers and what it misses.")
    coverage: Literal["not_covered", "partially", "fully"] = Field(description="The suggested coverage.")


class ExpressedDecision(Contract):
    item: int = Field(ge=0, description="0-based checklist item index.")
    expressed: bool = Field(description="Whether the user's messages express the item.")
    evidence: list[int] = Field(
        default_factory=list, description="Indexes of the user turns that express it."
    )


class ExpressedSuggestion(Contract):
    """Preference expressed: per checklist item, expressed or not, and the evidence turns."""

    items: list[ExpressedDecision] = Field(description="One decision per checklist item, in order.")


class MemorySupport(Contract):
    """Memory verification (optional judge): does the dialogue support the memory?"""

    reason: str = Field(description="One sentence: which turn supports it, or why nothing does.")
    supported: bool = Field(description="Whether the user's own words in the dialogue support the memory.")


class TaskQcJudgement(Contract):
    """Task QC: does the generated text give the memory away, and is the gold answer right?"""

    leak_reason: str = Field(description="One sentence on whether the text states the memory.")
    leaks: bool = Field(description="Whether the generated text gives the memory away.")
    answer_reason: str = Field(description="One sentence on whether the gold answer fits the input.")
    answer_correct: bool = Field(description="Whether the gold answer is right for this input.")
