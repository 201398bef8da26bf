"""The CUPID release row format (COLM 2025), field for field.

A :class:`BenchmarkInstance` serialises to exactly the keys of a CUPID release row, so it carries no
``schema_version`` field; the store records the version beside each row instead.
"""

from __future__ import annotations

from typing import Literal

from prefkit.schemas.common import Contract, RecordId
from pydantic import Field


class DialogueMessage(Contract):
    """One message of a prior interaction, as CUPID stores it."""

    role: Literal["user", "assistant", "system"] = Field(description="Who wrote the message.")
    content: str = Field(description="Message text.")


class PriorInteraction(Contract):
    """One earlier session the model can learn the user's preferences from."""

    context_factor: str = Field(description="The context factor present in that session.")
    contextual_preference: str = Field(description="The preference the user held in that session.")
    dialogue: list[DialogueMessage] = Field(description="The session's messages in order.")


class BenchmarkInstance(Contract):
    """One CUPID benchmark row: a current request plus the prior sessions to infer preferences from."""

    persona_id: RecordId = Field(description="Persona (simulated user) id.")
    instance_type: Literal["consistent", "contrastive", "changing"] = Field(
        description="consistent: same preference as before; contrastive: a partner factor with an "
        "exclusive preference is also present; changing: the preference changed over time."
    )
    current_request: str = Field(min_length=1, description="The user's request to answer now.")
    current_context_factor: str = Field(description="The context factor of the current request.")
    current_contextual_preference: str = Field(description="The gold preference for the current request.")
    current_checklist: list[str] = Field(max_length=4, description="Gold yes/no checklist (at most 4).")
    prior_interactions: list[PriorInteraction] = Field(description="Earlier sessions, oldest first.")
