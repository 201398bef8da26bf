"""The offline backend: deterministic, schema-valid answers with no network, for demos and tests.

Stages register a generator per response model (or per stage name, for free-text requests)::

    @register_offline(PersonaDraft)
    def fake_persona(request: LLMRequest, rng: random.Random) -> PersonaDraft: ...

A request names the module of its stage's answers (``LLMRequest.offline_answers``: a stage's
``offline.py``, set by :func:`~prefkit.pipelines.llm.templates.prompt_request`), which the backend imports
when it first answers one, so no stage imports it for its side effect. The generator gets a ``random.Random`` seeded from the layer's seed and the request's cache key, so the
same seed gives the same outputs and another seed other outputs. Everything it makes is marked
``offline=True`` in provenance. This module must never open a socket or read a key.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from importlib import import_module
from typing import Any

from prefkit.pipelines.llm.keys import approx_tokens, cache_key, prompt_tokens
from prefkit.pipelines.llm.types import BaseBackend, LLMRequest, Usage
from prefkit.schemas.common import PrefkitError
from pydantic import BaseModel

OfflineGenerator = Callable[[LLMRequest, random.Random], "BaseModel | str"]
_BY_MODEL: dict[type[BaseModel], OfflineGenerator] = {}
_BY_STAGE: dict[str, OfflineGenerator] = {}


class OfflineGeneratorMissing(PrefkitError):
    """A request reached the offline backend with no generator registered for it."""


def register_offline(target: type[BaseModel] | str) -> Callable[[OfflineGenerator], OfflineGenerator]:
    """Register the decorated function as the offline answer for a response model or a stage name."""

    def decorate(fn: OfflineGenerator) -> OfflineGenerator:
        if isinstance(target, str):
            _BY_STAGE[target] = fn
        elif isinstance(target, type) and issubclass(target, BaseModel):
            _BY_MODEL[target] = fn
        else:
            raise TypeError(f"register_offline takes a pydantic model class or a stage name, not {target!r}")
        return fn

    return decorate


def generator_for(request: LLMRequest) -> OfflineGenerator:
    if request.offline_answers:  # the stage's answers, registered where they are written
        import_module(request.offline_answers)
    if request.response_model is not None and request.response_model in _BY_MODEL:
        return _BY_MODEL[request.response_model]
    if request.stage in _BY_STAGE:
        return _BY_STAGE[request.stage]
    wanted = request.response_model.__name__ if request.response_model else f"stage {request.stage!r}"
    decorator = request.response_model.__name__ if request.response_model else repr(request.stage)
    raise OfflineGeneratorMissing(
        f"no offline generator for {wanted} (stage {request.stage!r}, item {request.item!r}); "
        f"register one with @register_offline({decorator}) or use backend 'openai'"
    )


class OfflineBackend(BaseBackend):
    """Answers from registered generators; same seed and request, same answer."""

    name = "offline"
    offline = True

    def check(self, requests: list[LLMRequest]) -> None:
        """Fail before any work when a request has no generator."""
        for request in requests:
            generator_for(request)

    async def complete(self, request: LLMRequest, model: str, seed: int) -> tuple[str, Usage, dict[str, Any]]:
        rng = random.Random(f"{seed}:{cache_key(request, model, seed, offline=True)}")
        answer = generator_for(request)(request, rng)
        if isinstance(answer, BaseModel):
            text = answer.model_dump_json()
        elif isinstance(answer, str):
            text = answer
        else:
            raise TypeError(f"offline generator for stage {request.stage!r} returned {type(answer).__name__}")
        usage = Usage(prompt_tokens(request), approx_tokens(text), 0)
        return text, usage, {"endpoint": None, "system_fingerprint": None}
