"""The evaluation prompts: template files in ``prompts/`` beside this module, hashed into every run.

Requests are built by the one builder, :func:`prefkit.pipelines.llm.templates.prompt_request`: the
variables a template is rendered with are also the request's ``offline_context`` (the offline backend
answers from them), so nothing reaches even the offline model that the prompt does not show.
"""

from __future__ import annotations

import functools

from prefkit.pipelines.llm.templates import SPLIT, PromptTemplate, prompt_request
from prefkit.pipelines.llm.templates import template as package_template

PACKAGE = "prefkit.pipelines.eval"
__all__ = ["PACKAGE", "SPLIT", "build_request", "prompt_hashes", "template"]


def template(name: str) -> PromptTemplate:
    return package_template(PACKAGE, name)


def prompt_hashes(names: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``{template name: hash}`` of the templates a run uses (stored with the run)."""
    return {name: template(name).hash for name in sorted(names)}


#: ``build_request(stage, item, role, name, response_model, context, temperature=0.0, max_tokens=None)``
build_request = functools.partial(prompt_request, PACKAGE)
