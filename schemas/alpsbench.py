"""AlpsBench memory contracts (SIGIR 2026), field for field, plus the looser model-output shape.

Gold memories validate strictly against :class:`MemoryItem`. Model extractions are *data to judge*,
not input errors: :func:`check_candidate` reports what is wrong with one without rejecting it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from prefkit.schemas.common import Contract, validation_problems
from pydantic import AfterValidator, Field, ValidationError

#: time_scope values the AlpsBench docs name.
DOCUMENTED_TIME_SCOPES = ("long_term", "short_term", "unknown")
#: Further values the real gold data uses; kept, never rejected.
OBSERVED_TIME_SCOPES = ("recent", "past", "current", "past_only", "future", "project_duration", "recurring")

_LABEL_RE = re.compile(r"^(UNMAPPED|[A-Za-z][A-Za-z0-9_'\-]*(/[A-Za-z][A-Za-z0-9_'\-]*)*)$")

#: Top-level taxonomy with the leaves seen in the AlpsBench gold; the app offers these as choices.
TAXONOMY: tuple[str, ...] = tuple(
    """Constraints_and_Boundaries/Disliked_Topics Constraints_and_Boundaries/Do_Not_Remember
    Constraints_and_Boundaries/Sensitive_Topics Personal_Background/Education
    Personal_Background/Family Personal_Background/Identity Personal_Background/Location
    Personal_Background/Occupation Plans/Commitments Plans/Schedule Possessions/Car
    Possessions/Important_Items Possessions/Pet Preferences/Communication_Format
    Preferences/Entertainment Preferences/Food Preferences/Interaction_Preferences
    Preferences/Music Preferences/Reading Preferences/Shopping Preferences/Sports
    Preferences/Travel_Mode Social_Relationships/Colleagues Social_Relationships/Family
    Social_Relationships/Friends Social_Relationships/Partners States_Experiences/Mental_State
    States_Experiences/Past_Experience States_Experiences/Physical_State Thoughts/Curiosity
    Thoughts/Goals/Long_Term Thoughts/Goals/Short_Term Thoughts/Opinions/Negative
    Thoughts/Opinions/Positive UNMAPPED""".split()
)


def _check_label(v: str) -> str:
    if not _LABEL_RE.match(v):
        raise ValueError(f"label {v!r} is not a taxonomy path like 'Preferences/Food' or 'UNMAPPED'")
    return v


TaxonomyLabel = Annotated[str, AfterValidator(_check_label)]


class Evidence(Contract):
    """Where in a dialogue a memory is grounded."""

    session_id: str | None = Field(description="Session (packet) id the evidence is in.")
    utterance_index: int | list[int] | None = Field(
        description="0-based index of the utterance in the dialogue; the real gold sometimes lists several."
    )
    text: str | None = Field(description="The quoted evidence text.")


class MemoryItem(Contract):
    """One structured user memory in the AlpsBench format."""

    memory_id: str = Field(description="Id within the session, e.g. 'm1'.")
    type: Literal["direct", "indirect"] = Field(description="direct = stated explicitly; indirect = implied.")
    label: TaxonomyLabel = Field(
        description="Taxonomy path such as 'Preferences/Entertainment', or 'UNMAPPED'."
    )
    label_suggestion: str | None = Field(default=None, description="Proposed new label when UNMAPPED.")
    value: str = Field(min_length=1, description="The memory as a short statement.")
    reasoning: str | None = Field(default=None, description="Why the memory follows from the evidence.")
    evidence: Evidence | None = Field(default=None, description="Grounding in the dialogue.")
    confidence: float | None = Field(ge=0.0, le=1.0, description="Confidence in [0, 1].")
    time_scope: str | None = Field(
        default=None,
        description="Documented: long_term | short_term | unknown. The real gold also uses recent, past, "
        "current (and a few others); every value is kept as written.",
    )
    emotion: str | None = Field(default=None, description="Emotion attached to the memory, if any.")
    preference_attitude: str | None = Field(default=None, description="like / dislike / preference / ...")
    updated_at: str | None = Field(default=None, description="ISO-8601 time of the last update.")

    @property
    def time_scope_documented(self) -> bool:
        """Whether ``time_scope`` is one of the three documented values."""
        return self.time_scope in DOCUMENTED_TIME_SCOPES


class ExtractedMemory(Contract):
    """The shape a memory-extraction model is asked to return (AlpsBench task 1 output)."""

    memory_id: str = Field(description="Id within the model's answer, e.g. 'p1'.")
    type: Literal["direct", "indirect"] = Field(description="direct or indirect.")
    label: TaxonomyLabel = Field(description="Taxonomy path or 'UNMAPPED'.")
    value: str = Field(min_length=1, description="The memory as a short statement.")
    confidence: float = Field(ge=0.0, le=1.0, description="Confidence in [0, 1].")
    evidence_text: str = Field(description="Quoted evidence from the dialogue.")


def check_candidate(raw: Any) -> list[str]:
    """Problems of one model-extracted memory, as ``'field: message'`` strings (empty = valid)."""
    if not isinstance(raw, dict):
        return [f"<root>: expected an object, got {type(raw).__name__}"]
    try:
        ExtractedMemory.model_validate(raw)
    except ValidationError as exc:
        return validation_problems(exc, root="<root>")
    return []
