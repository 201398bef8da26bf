"""The evaluation prompts: template files in ``prompts/`` beside this module, hashed into every run.

Each template holds the system message, a line ``=== USER ===``, then the user message. The variables
a template is rendered with are also the request's ``offline_context`` (the offline backend answers
from them), so nothing reaches even the offline model that the prompt does not show.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from prefkit.pipelines.llm import load_template
from prefkit.pipelines.llm.types import LLMRequest, Role
from pydantic import BaseModel

PACKAGE = "prefkit.pipelines.eval"
SPLIT = "=== USER ==="


@cache
def template(name: str):
    return load_template(PACKAGE, name)


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
    t = template(name)
    system, _, user = t.render(**context).partition(SPLIT)
    messages = tuple(m for m in (("system", system.strip()), ("user", user.strip())) if m[1])
    return LLMRequest(
        stage=stage,
        item=item,
        role=role,
        messages=messages,
        response_model=response_model,
        temperature=temperature,
        max_tokens=max_tokens,
        template_hash=t.hash,
        offline_context=context,
    )
