"""A generation stage's requests (through the one builder, :func:`prefkit.pipelines.llm.templates.
prompt_request`, from the templates in ``prompts/``) and the validated run of them."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from prefkit.pipelines.llm.layer import every
from prefkit.pipelines.llm.templates import prompt_request
from prefkit.pipelines.llm.types import LLMRequest, LLMResponse
from prefkit.schemas.common import validation_problems
from prefkit.schemas.curation import Provenance
from pydantic import ValidationError

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

PACKAGE = "prefkit.pipelines.generation"
#: ``build_request(stage, item, role, name, response_model, context, temperature=0.7, extra_messages=())``
build_request = functools.partial(prompt_request, PACKAGE, temperature=0.7)


def retry_request(request: LLMRequest, attempt: int, reason: str) -> LLMRequest:
    """The same request once more, told why its last answer was rejected (a new cache key)."""
    note = ("user", f"Your previous answer was rejected: {reason}. Answer again, fixing that.")
    return LLMRequest(
        stage=request.stage,
        item=f"{request.item}#retry{attempt}",
        role=request.role,
        messages=request.messages + (note,),
        response_model=request.response_model,
        temperature=request.temperature,
        template_hash=request.template_hash,
        offline_context={**request.offline_context, "attempt": attempt},
        offline_answers=request.offline_answers,
    )


@dataclass
class Outcome:
    """What came of one request: the accepted response and value, or why nothing was accepted."""

    response: LLMResponse | None = None
    value: Any = None
    reason: str = "no answer"
    transient: bool = False  # the call itself failed (endpoint, network): a rerun should try again

    @property
    def ok(self) -> bool:
        return self.response is not None

    @property
    def provenance(self) -> Provenance:
        """The provenance of the accepted response (only an ``ok`` outcome has one)."""
        if self.response is None:
            raise ValueError(f"no accepted response ({self.reason}): nothing to take provenance from")
        return self.response.provenance


def _reason(exc: ValueError) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        return validation_problems(exc, root="answer")[0]
    return str(exc).splitlines()[0]


async def validated(
    layer, store: ProjectStore, request: LLMRequest, validate, attempts: int, progress=None
) -> Outcome:
    """Ask ``request``; re-ask (up to ``attempts`` in all) while ``validate`` rejects the answer.

    ``validate(parsed)`` returns the accepted value or raises ValueError. Every rejection is a failure
    row naming the stage, the item and why (the layer records its own failures). ``progress``: the
    layer's bar the calls count on.
    """
    outcome = Outcome()
    for attempt in range(1, attempts + 1):
        (response,) = await layer.arun([request], progress=progress)
        if not response.ok:  # the layer already retried transport errors and recorded the failure
            return Outcome(reason=response.error or "the model call failed", transient=True)
        try:
            return Outcome(response, validate(response.parsed if request.response_model else response.text))
        except ValueError as exc:
            outcome = Outcome(reason=_reason(exc))
            store.content.record_failure(request.stage, request.item, outcome.reason, response.text)
            request = retry_request(request, attempt, outcome.reason)
    return outcome


def run_validated(
    layer, store: ProjectStore, requests: list[LLMRequest], validate, attempts: int, desc: str
) -> list[Outcome]:
    """:func:`validated` for each of ``requests`` at once, each re-asked as soon as its answer is
    rejected; ``validate(i, parsed)`` for the i-th request."""

    async def asks() -> list[Outcome]:
        bar = layer.stage(desc)
        try:
            return await every(
                validated(layer, store, r, partial(validate, i), attempts, bar)
                for i, r in enumerate(requests)
            )
        finally:
            bar.close()

    return layer.wait(asks()) if requests else []
