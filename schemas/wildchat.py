"""WildChat-1M conversation rows (allenai/WildChat-1M, ODC-BY) as prefkit imports them.

Rows are checked in pydantic's strict mode (as the ingest's DuckDB scan checks the same types): a
number is not text, ``"yes"`` is not a boolean, ``3.0`` is not a count.

``conversation_hash`` is *not* unique in WildChat: identify a conversation by the hash together with
its first turn's ``turn_identifier`` (see :meth:`WildChatConversation.stable_id`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from prefkit.schemas.common import Contract, content_hash
from pydantic import Field, field_validator


class WildChatTurn(Contract):
    """One turn of a WildChat conversation. The request-metadata fields are set on user turns only."""

    content: str = Field(description="Message text.")
    role: Literal["user", "assistant"] = Field(description="Who wrote the message.")
    language: str | None = Field(default=None, description="Detected language of the turn.")
    redacted: bool | None = Field(default=None, description="Whether PII was redacted in this turn.")
    toxic: bool | None = Field(default=None, description="Whether the turn was flagged toxic.")
    turn_identifier: int | None = Field(default=None, description="WildChat's id of the turn.")
    timestamp: Any = Field(default=None, description="Time of the turn.")
    hashed_ip: str | None = Field(default=None, description="Hashed IP of the user (user turns).")
    state: str | None = Field(default=None, description="User's state/region (user turns).")
    country: str | None = Field(default=None, description="User's country (user turns).")
    header: dict[str, Any] | None = Field(default=None, description="Request headers (user turns).")


class WildChatConversation(Contract):
    """One WildChat-1M row."""

    conversation_hash: str = Field(description="Hash of the conversation text (not unique).")
    model: str = Field(description="The OpenAI model that answered.")
    timestamp: str = Field(description="Time of the last turn (ISO-8601).")
    conversation: list[WildChatTurn] = Field(min_length=1, description="The turns in order.")
    turn: int = Field(ge=0, description="Number of user-assistant exchanges.")
    language: str = Field(description="Detected language of the conversation.")
    openai_moderation: list[Any] = Field(description="OpenAI moderation result per turn.")
    detoxify_moderation: list[Any] = Field(description="Detoxify scores per turn.")
    toxic: bool = Field(description="Whether any turn was flagged toxic.")
    redacted: bool = Field(description="Whether any turn was redacted.")
    state: str | None = Field(default=None, description="User's state/region.")
    country: str | None = Field(default=None, description="User's country.")
    hashed_ip: str | None = Field(default=None, description="Hashed IP of the user.")
    header: dict[str, Any] | None = Field(default=None, description="Request headers.")

    @field_validator("timestamp")
    @classmethod
    def _a_time(cls, value: str) -> str:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"not an ISO-8601 time: {value[:40]!r}") from None
        return value

    def stable_id(self) -> str:
        """A unique id: the hash plus the first turn's identifier (or its content when absent)."""
        first = self.conversation[0]
        tail = first.turn_identifier if first.turn_identifier is not None else content_hash(first.content, 8)
        return f"wc_{self.conversation_hash}_{tail}"
