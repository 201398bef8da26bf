"""Generation-side contracts: personas, context factors, preferences, checklists, sessions.

These are the shapes the CUPID-style pipeline (``pipelines/``) produces and the LLM returns.
"""

from __future__ import annotations

from typing import Literal

from prefkit.schemas.common import Contract, Record
from pydantic import Field, field_validator

CAREER_LEVELS = ("entry", "mid", "senior")
BIG_FIVE = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")
SCHWARTZ_VALUES = tuple(
    """self-direction stimulation hedonism achievement power security conformity tradition
    benevolence universalism""".split()
)
DECISION_STYLES = ("rational", "intuitive", "dependent", "avoidant")  # Scott & Bruce (prefkit's default)
#: CUPID's persona sampler draws from Rowe's four styles instead ([generation] decision_styles = "cupid").
CUPID_DECISION_STYLES = ("analytical", "directive", "conceptual", "behavioral")
#: Factor, preference and task types are project configuration, not part of the contract: the
#: generation pipeline checks them against its taxonomy (``pipelines/generation/taxonomy.json``,
#: CUPID's by default, replaceable per project).


class BigFiveTrait(Contract):
    """One Big-Five trait with its pole."""

    trait: Literal["openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism"] = Field(
        description="The Big-Five dimension."
    )
    level: Literal["High", "Low"] = Field(description="Which pole of the dimension the persona sits at.")


class PersonaAttributes(Contract):
    """Attributes sampled by code (balanced across a batch) before the LLM writes the persona."""

    career_level: Literal["entry", "mid", "senior"] = Field(description="Career stage.")
    big_five: list[BigFiveTrait] = Field(min_length=2, max_length=2, description="Two Big-Five traits.")
    values: list[str] = Field(min_length=2, max_length=2, description="Two Schwartz basic values.")
    decision_style: Literal[
        "rational",
        "intuitive",
        "dependent",
        "avoidant",
        "analytical",
        "directive",
        "conceptual",
        "behavioral",
    ] = Field(description="Decision-making style (Scott & Bruce's four, or CUPID's Rowe four).")

    @field_validator("values")
    @classmethod
    def _known_values(cls, v: list[str]) -> list[str]:
        unknown = [x for x in v if x not in SCHWARTZ_VALUES]
        if unknown:
            raise ValueError(f"unknown Schwartz value(s): {unknown}")
        if len(set(v)) != len(v):
            raise ValueError("values must be distinct")
        return v

    @field_validator("big_five")
    @classmethod
    def _distinct_traits(cls, v: list[BigFiveTrait]) -> list[BigFiveTrait]:
        if len({t.trait for t in v}) != len(v):
            raise ValueError("Big-Five traits must be distinct")
        return v


class Persona(Record):
    """A simulated user: a short description, an occupation and the attributes it was written from."""

    persona_id: str = Field(description="Stable id, unique in the project.")
    text: str = Field(min_length=1, description="Short persona: identity, goals, pains, habits.")
    occupation: str = Field(min_length=1, description="The persona's occupation.")
    attributes: PersonaAttributes = Field(description="Sampled attributes the persona was written from.")
    seed_persona: str | None = Field(default=None, description="Seed description the persona started from.")
    seed_licence: str | None = Field(default=None, description="Licence of the seed persona source.")


class ContextualPreference(Contract):
    """A personal preference that applies when a context factor is present."""

    text: str = Field(min_length=1, description="The preference, understandable on its own.")
    family: str = Field(min_length=1, description="Preference family of the taxonomy, e.g. 'Style'.")
    preference_type: str = Field(
        min_length=1, description="Preference type within its family, e.g. 'Format'."
    )


class ContextFactor(Contract):
    """Something in the user's life (a person, object, place, ...) that conditions a preference."""

    factor_id: str = Field(description="Stable id, unique in the project.")
    type: str = Field(
        min_length=1, description="Kind of factor, a type of the taxonomy, e.g. 'Person/Group'."
    )
    name: str = Field(min_length=1, description="The entity's name as the user would say it.")
    background: str = Field(min_length=1, description="Why this factor matters to the persona.")
    task_types: list[str] = Field(min_length=1, description="Task types where the factor comes up.")
    preference: ContextualPreference = Field(description="The persona's preference in this context.")


class ChecklistItem(Contract):
    """A yes/no question a reply must satisfy for a preference to count as met."""

    question: str = Field(min_length=1, description="A yes/no question about the assistant's reply.")

    @field_validator("question")
    @classmethod
    def _is_question(cls, v: str) -> str:
        if not v.rstrip().endswith("?"):
            raise ValueError("a checklist item must be a yes/no question ending with '?'")
        return v


class SessionSlot(Contract):
    """One planned session: which factor and which preference it carries."""

    index: int = Field(ge=1, description="Chronological position, 1-based.")
    factor_id: str = Field(description="Context factor of the session.")
    role: Literal["A", "A_prime", "B", "other"] = Field(
        description="A = target factor with its first preference, A_prime = A with the changed preference, "
        "B = contrastive partner, other = filler factor."
    )
    preference_text: str = Field(description="The preference in force in this session.")
    story: str = Field(default="", description="What happens in the user's life in this session.")
    opening_request: str = Field(default="", description="The user's first message (names the factor).")


class SessionPlan(Record):
    """The chronological plan for one persona, placed by code."""

    persona_id: str = Field(description="The persona this plan belongs to.")
    slots: list[SessionSlot] = Field(min_length=1, description="Sessions in chronological order.")


class Turn(Contract):
    """One message of a dialogue."""

    index: int = Field(ge=0, description="0-based position in the dialogue.")
    role: Literal["user", "assistant", "system"] = Field(description="Who wrote the message.")
    content: str = Field(description="Message text (untrusted; rendered as text, never as HTML).")


class Session(Record):
    """A simulated, chronologically placed conversation between a persona and an assistant."""

    session_id: str = Field(description="Stable id, unique in the project.")
    persona_id: str = Field(description="The persona who is the user.")
    index: int = Field(ge=1, description="Chronological position among the persona's sessions.")
    timestamp: str = Field(description="Simulated ISO-8601 time of the session.")
    context_factor: ContextFactor = Field(description="The factor present in this session.")
    preference: ContextualPreference = Field(description="The preference in force in this session.")
    checklist: list[ChecklistItem] = Field(max_length=4, description="At most 4 yes/no checklist items.")
    turns: list[Turn] = Field(default_factory=list, description="The dialogue, in order.")
    satisfied: bool = Field(default=False, description="Whether the simulated user saw every item met.")

    # The parts a session imported from a CUPID row also has, read the same way on both records.
    @property
    def factor_name(self) -> str:
        return self.context_factor.name

    @property
    def preference_text(self) -> str:
        return self.preference.text

    @property
    def questions(self) -> list[str]:
        return [c.question for c in self.checklist]
