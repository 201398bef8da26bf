"""Content addresses of LLM requests: the cache key every completed answer is stored under.

A key is the sha256 of the canonical JSON of everything that changes the answer — model, messages,
sampling parameters, the response schema and the seed — and nothing else: no stage or item name (two
stages asking the same thing share one answer), no ``offline_context`` and never an endpoint or key.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.common import canonical_json
from pydantic import BaseModel


@lru_cache(maxsize=256)
def response_schema(model: type[BaseModel] | None) -> dict[str, Any] | None:
    """The JSON schema of a response model (memoised: stages reuse a handful of models)."""
    return None if model is None else model.model_json_schema()


def canonical_request(request: LLMRequest, model: str, seed: int, offline: bool = False) -> dict[str, Any]:
    # The offline backend's answers must never be served to a real-backend run (or the reverse).
    backend = {"backend": "offline"} if offline else {}
    return {
        **backend,
        "model": model,
        "messages": [[role, content] for role, content in request.messages],
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "schema": response_schema(request.response_model),
        "seed": seed,
    }


def cache_key(request: LLMRequest, model: str, seed: int, offline: bool = False) -> str:
    """sha256 hex of the canonical request."""
    text = canonical_json(canonical_request(request, model, seed, offline))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def approx_tokens(text: str) -> int:
    """A cheap token estimate (~4 characters per token) for budgets and cost estimates."""
    return max(1, (len(text) + 3) // 4)


def prompt_tokens(request: LLMRequest) -> int:
    # ~4 tokens of chat framing per message, as OpenAI's own counting guide describes.
    return sum(approx_tokens(content) + 4 for _, content in request.messages)
