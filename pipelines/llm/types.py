"""The LLM layer's request/response types: the one interface every pipeline stage talks to.

Stages build :class:`LLMRequest` objects and hand a batch of them to the layer
(``pipelines.llm.LLMLayer``); the layer returns one :class:`LLMResponse` per request, in order, never
``None`` and never silently dropped: a request that failed after its retries is a response with
``ok=False`` and an ``error`` (and a failure row in the project store).
Both the OpenAI-compatible backend and the offline backend implement :class:`Backend`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from schemas.curation import Provenance

Role = Literal["writer", "user_simulator", "assistant", "judge"]


@dataclass(frozen=True)
class LLMRequest:
    """One chat completion a stage needs."""

    stage: str  # e.g. "personas", "factors", "sessions", "checklists", "dialogues"
    item: str  # what it is for, e.g. a persona id or "<session_id>:turn3"; (stage, item) names failures
    role: Role  # which configured model answers
    messages: tuple[tuple[str, str], ...]  # ((role, content), ...) — hashable, order-preserving
    response_model: type[BaseModel] | None = None  # structured output; None = free text
    temperature: float = 0.7
    max_tokens: int | None = None
    template_hash: str | None = None  # sha256 prefix of the prompt template, for provenance
    # What the offline backend needs to produce a deterministic, schema-valid answer
    # (e.g. the sampled persona attributes); ignored by real backends and not part of the cache key.
    offline_context: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def chat_messages(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


@dataclass
class LLMResponse:
    """The outcome of one request."""

    request: LLMRequest
    ok: bool
    parsed: BaseModel | None  # set when ok and request.response_model is set
    text: str | None  # raw text of the answer (also kept for failures)
    error: str | None  # why it failed, when not ok
    provenance: Provenance
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    from_cache: bool = False


class Backend(Protocol):
    """What the layer needs from a backend: answer one request (retries/limits are the layer's)."""

    name: str  # "openai" or "offline"
    offline: bool

    async def complete(self, request: LLMRequest, model: str, seed: int) -> tuple[str, Usage, dict[str, Any]]:
        """Raw answer text, usage, and metadata (e.g. system_fingerprint, endpoint host)."""
        ...
