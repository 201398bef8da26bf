"""The forms of the annotation app, by task kind: ``FORMS[kind]`` is the module (or object) with
``render``, ``edit`` and ``unit_title`` that shows tasks of that kind.

A form registers against its task kind's name with :func:`register_form` (a form module ends in
``register_this("<kind>", __name__)``). This module knows no kind and imports no form; the package
(:mod:`prefkit.annotate_app.forms`) imports the built-in ones.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from prefkit.curation.annotation.task_kinds import get_kind

#: The form of every task kind the app can show, by kind name.
FORMS: dict[str, Any] = {}


def register_form(kind: str, form: ModuleType | Any) -> None:
    """Show tasks of ``kind`` (a registered task kind) with ``form``."""
    get_kind(kind)  # the one clear error for an unknown kind
    FORMS[kind] = form


def register_this(kind: str, module_name: str) -> None:
    """``register_form`` for the calling module: ``register_this("my_kind", __name__)``."""
    register_form(kind, sys.modules[module_name])
