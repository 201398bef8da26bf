"""Prompt templates: ``.jinja2`` files kept beside the stage module that uses them.

Every template's text is hashed (:func:`template_hash`) and the hash goes into each generated row's
provenance, so a changed prompt is visible in the data. Templates render with ``StrictUndefined``: a
missing variable is an error, never an empty string in a prompt. This module must never read
templates from anywhere but a package's own files.

:func:`rendered_request` is the one builder of a templated request, and :func:`prompt_request` renders a
package template into it (generation, evaluation, memory extraction and suggestions use them; the
official CUPID protocol passes the messages of the prompt files it loaded). A template holds the
system message, a line ``=== USER ===``, then the user message; the template's hash goes into the request (and so into provenance), and the variables it was
rendered with become the request's ``offline_context``, so the offline backend sees exactly what the
prompt was built from.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from typing import Any, cast

import jinja2
from prefkit.pipelines.llm.types import LLMRequest, Role
from prefkit.schemas.common import PrefkitError
from pydantic import BaseModel

#: The line between a template's system message and its user message.
SPLIT = "=== USER ==="


class PromptTemplate(jinja2.Template):
    """A prompt template carrying the hash of its text (recorded in provenance)."""

    hash: str


_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
_ENV.template_class = PromptTemplate


class TemplateNotFound(PrefkitError):
    """A stage asked for a prompt template its package does not ship."""


def template_hash(text: str) -> str:
    """sha256 hex prefix (12 characters) of a template's text, recorded in provenance."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def load_template(package: str, name: str) -> PromptTemplate:
    """``<package>/<name>`` (``.jinja2`` added when missing) as a Template carrying ``.hash``.

    ``package`` may be a module name (``__name__`` of the stage); its folder is searched, then a
    ``prompts/`` or ``templates/`` folder inside it.
    """
    filename = name if name.endswith(".jinja2") else f"{name}.jinja2"
    base = resources.files(package.rpartition(".")[0] if _is_module(package) else package)
    for candidate in (base / filename, base / "prompts" / filename, base / "templates" / filename):
        if candidate.is_file():
            text = candidate.read_text(encoding="utf-8")
            template = cast(PromptTemplate, _ENV.from_string(text))  # _ENV's template_class
            template.hash = template_hash(text)
            return template
    raise TemplateNotFound(f"no prompt template {filename!r} in package {package!r}")


def _is_module(name: str) -> bool:
    """True for a plain module (``pkg.stage``), False for a package (``pkg``)."""
    try:
        resources.files(name)
    except TypeError:
        return True
    except ModuleNotFoundError:
        raise TemplateNotFound(f"no package {name!r} to load prompt templates from") from None
    return False


@cache
def template(package: str, name: str) -> PromptTemplate:
    """:func:`load_template`, read once per process."""
    return load_template(package, name)


def render_messages(
    package: str, name: str, context: dict[str, Any]
) -> tuple[tuple[tuple[str, str], ...], str]:
    """The (system, user) messages of a template rendered with ``context`` (an empty one left out)
    and the template's hash."""
    t = template(package, name)
    system, _, user = t.render(**context).partition(SPLIT)
    messages = tuple(m for m in (("system", system.strip()), ("user", user.strip())) if m[1])
    return messages, t.hash


def prompt_request(
    package: str,
    stage: str,
    item: str,
    role: Role,
    name: str,
    response_model: type[BaseModel] | None,
    context: dict[str, Any],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    extra_messages: tuple[tuple[str, str], ...] = (),
) -> LLMRequest:
    """The request of one templated call: template ``name`` of ``package`` rendered with ``context``
    (then ``extra_messages``), its hash, and ``context`` as the offline backend's input. A stage binds
    its package (and temperature): ``functools.partial(prompt_request, PACKAGE)``."""
    messages, digest = render_messages(package, name, context)
    return rendered_request(
        messages + extra_messages,
        digest,
        stage=stage,
        item=item,
        role=role,
        response_model=response_model,
        context=context,
        temperature=temperature,
        max_tokens=max_tokens,
        offline_answers=f"{package}.offline",
    )


def rendered_request(
    messages: tuple[tuple[str, str], ...],
    digest: str,
    *,
    stage: str,
    item: str,
    role: Role,
    response_model: type[BaseModel] | None,
    context: dict[str, Any],
    temperature: float,
    max_tokens: int | None = None,
    offline_answers: str | None = None,
) -> LLMRequest:
    """The request of messages already rendered from a prompt whose text hashes to ``digest`` (a
    package template, or prompt files a user supplied): the hash goes into provenance and ``context``
    becomes the offline backend's input. Every templated request is built here."""
    return LLMRequest(
        stage=stage,
        item=item,
        role=role,
        messages=messages,
        response_model=response_model,
        temperature=temperature,
        max_tokens=max_tokens,
        template_hash=digest,
        offline_context=context,
        offline_answers=offline_answers,
    )
