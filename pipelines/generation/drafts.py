"""What the LLM hands back at each generation stage (structured outputs), validated strictly.

These are the response models of the stage requests; the stages turn them into the stored records of
``prefkit.schemas.generation`` (ids, attributes and positions are added by code, never by the LLM).
"""

from __future__ import annotations

from prefkit.schemas.common import Contract
from prefkit.schemas.generation import ChecklistItem, ContextualPreference
from pydantic import Field


class PersonaDraft(Contract):
    """A persona the writer model wrote from sampled attributes."""

    text: str = Field(
        min_length=40, description="Short persona: identity, goals, pains, habits (3-5 sentences)."
    )
    occupation: str = Field(min_length=2, max_length=80, description="The persona's occupation.")


class FactorDraft(Contract):
    """One context factor with the persona's preference when it is present."""

    type: str = Field(description="Kind of factor, one of the taxonomy's factor types (e.g. 'Person/Group').")
    name: str = Field(min_length=2, description="The entity's specific name as the user would say it.")
    background: str = Field(min_length=20, description="The persona's history with the factor.")
    task_types: list[str] = Field(min_length=1, description="Task types where the factor comes up.")
    preference: ContextualPreference = Field(description="The persona's personal preference in this context.")


class FactorsDraft(Contract):
    """All context factors of one persona; the last two are the contrastive pair."""

    factors: list[FactorDraft] = Field(min_length=3, description="Context factors, contrastive pair last.")


class SessionStory(Contract):
    """The story and opening request of one planned session."""

    index: int = Field(ge=1, description="The session's position in the plan, 1-based.")
    story: str = Field(min_length=20, description="What happens in the user's life in this session.")
    opening_request: str = Field(
        min_length=10, description="The user's first message: names the factor, never states the preference."
    )


class SessionStoriesDraft(Contract):
    """The changed preference A' and a story plus opening request for every planned session."""

    changed_preference: str = Field(
        min_length=10, description="A': conflicts with A's preference but is worded the same way."
    )
    sessions: list[SessionStory] = Field(min_length=1, description="One entry per planned session, in order.")


class ChecklistDraft(Contract):
    """A preference decomposed into yes/no questions about a reply."""

    items: list[ChecklistItem] = Field(min_length=1, description="At most 4 yes/no questions.")


class ItemScore(Contract):
    """The user simulator's score of the latest reply on one checklist item."""

    item: int = Field(ge=1, description="Checklist item number, 1-based.")
    score: int = Field(ge=1, le=10, description="1 = not at all, 10 = fully satisfied.")


class SimulatorVerdict(Contract):
    """The user simulator's turn: scores of the latest reply, then its next message."""

    scores: list[ItemScore] = Field(min_length=1, description="One score per checklist item.")
    feedback_items: list[int] = Field(
        default_factory=list, description="Checklist item numbers the next message alludes to."
    )
    message: str = Field(
        default="", description="The user's next message (indirect, concise); empty when done."
    )
