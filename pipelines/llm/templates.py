"""Prompt templates: ``.jinja2`` files kept beside the stage module that uses them.

Every template's text is hashed (:func:`template_hash`) and the hash goes into each generated row's
provenance, so a changed prompt is visible in the data. Templates render with ``StrictUndefined``: a
missing variable is an error, never an empty string in a prompt. This module must never read
templates from anywhere but a package's own files.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import cast

import jinja2
from prefkit.schemas.common import PrefkitError


class PromptTemplate(jinja2.Template):
    """A prompt template carrying the hash of its text (recorded in provenance) and the text."""

    hash: str
    source_text: str


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
            template.source_text = text
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
