"""The LLM layer's request/response types: the one interface every pipeline stage talks to.

Stages build :class:`LLMRequest` objects and hand a batch of them to the layer
(``prefkit.pipelines.llm.LLMLayer``); the layer returns one :class:`LLMResponse` per request, in order, never
``None`` and never silently dropped: a request that failed after its retries is a response with
``ok=False`` and an ``error`` (and a failure row in the project store).
Both the OpenAI-compatible backend and the offline backend implement :class:`Backend`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from prefkit.schemas.curation import Provenance
from pydantic import BaseModel

Role = Literal["writer", "user_simulator", "assistant", "judge"]


class CallFailed(Exception):
    """One call could not produce an answer (after the SDK's retries); ``raw`` is what came back and
    ``usage`` what the server counted for it (an answer cut off or refused was still paid for)."""

    def __init__(self, message: str, raw: str | None = None, usage: Usage | None = None):
        super().__init__(message)
        self.raw = raw
        self.usage = usage or Usage()


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
    # The module of the stage's offline answers (``package.offline``): the offline backend imports it.
    offline_answers: str | None = field(default=None, compare=False, hash=False)

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
    """What the layer needs from a backend: answer one request (retries/limits are the layer's).
    :class:`BaseBackend` gives the optional parts their defaults."""

    name: str  # "openai" or "offline"
    offline: bool
    host: str | None  # the endpoint's host, recorded in provenance (None: no endpoint)

    async def complete(self, request: LLMRequest, model: str, seed: int) -> tuple[str, Usage, dict[str, Any]]:
        """Raw answer text, usage, and metadata (e.g. system_fingerprint, endpoint host)."""
        ...

    def check(self, requests: list[LLMRequest]) -> None:
        """Fail fast, before any call, when the backend cannot answer some of ``requests``."""
        ...

    def scrub(self, text: str | None) -> str | None:
        """``text`` with every secret of the backend (an API key) removed, before it is stored."""
        ...

    async def aclose(self) -> None:
        """Release connections opened on the running event loop."""
        ...


@runtime_checkable
class BatchBackend(Backend, Protocol):
    """A backend with a batch API (the OpenAI Batch API): one upload, then poll, then read the lines."""

    def batch_body(self, request: LLMRequest, model: str, seed: int) -> dict[str, Any]:
        """The request body of one batch line: what the live path would send."""
        ...

    async def submit_batch(self, lines: list[dict[str, Any]], stage: str) -> tuple[str, str]:
        """Upload ``lines`` and start one batch; ``(batch_id, input_file_id)``."""
        ...

    async def batch_state(self, batch_id: str) -> BatchState:
        """Where the batch is now."""
        ...

    async def batch_lines(self, file_id: str | None) -> dict[str, dict[str, Any]]:
        """The output (or error) lines of a finished batch by ``custom_id``."""
        ...

    def answer_from_batch_line(self, line: dict[str, Any]) -> tuple[str, Usage, dict[str, Any]]:
        """(text, usage, meta) of one output line; raises for an errored request."""
        ...


@dataclass(frozen=True)
class BatchState:
    id: str
    status: str  # validating, in_progress, finalizing, completed, failed, expired, cancelled, ...
    output_file_id: str | None = None
    error_file_id: str | None = None


class BaseBackend:
    """Defaults for a backend's optional parts: nothing to check, nothing to scrub, nothing to close."""

    host: str | None = None

    def check(self, requests: list[LLMRequest]) -> None:
        return None

    def scrub(self, text: str | None) -> str | None:
        return text

    async def aclose(self) -> None:
        return None
