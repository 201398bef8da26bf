"""The evaluation prompts: template files in ``prompts/`` beside this module, hashed into every run.

Requests are built by the one builder, :func:`prefkit.pipelines.llm.templates.prompt_request`: the
variables a template is rendered with are also the request's ``offline_context`` (the offline backend
answers from them), so nothing reaches even the offline model that the prompt does not show.
"""

from __future__ import annotations

from typing import Any

from prefkit.pipelines.llm.templates import SPLIT, PromptTemplate, prompt_request
from prefkit.pipelines.llm.templates import template as package_template
from prefkit.pipelines.llm.types import LLMRequest, Role
from pydantic import BaseModel

PACKAGE = "prefkit.pipelines.eval"
__all__ = ["PACKAGE", "SPLIT", "build_request", "prompt_hashes", "template"]


def template(name: str) -> PromptTemplate:
    return package_template(PACKAGE, name)


def prompt_hashes(names: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``{template name: hash}`` of the templates a run uses (stored with the run)."""
    return {name: template(name).hash for name in sorted(names)}


def build_request(
    stage: str,
    item: str,
    role: Role,
    name: str,
    response_model: type[BaseModel] | None,
    context: dict[str, Any],
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> LLMRequest:
    return prompt_request(
        PACKAGE,
        name,
        stage=stage,
        item=item,
        role=role,
        response_model=response_model,
        context=context,
        temperature=temperature,
        max_tokens=max_tokens,
    )
