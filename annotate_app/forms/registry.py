"""The forms of the annotation app, by task kind: ``form_for(kind)`` is the module (or object) with
``render``, ``edit`` and ``unit_title`` that shows tasks of that kind.

A form registers against its task kind's name with :func:`register_form` (a form module ends in
``register_this("<kind>", __name__)``); a kind from another distribution names its form instead
(``TaskKind.app_form``), imported when the app first shows the kind. This module knows no kind and
imports no form; the package (:mod:`prefkit.annotate_app.forms`) imports the built-in ones.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from prefkit.curation.annotation.task_kinds import (
    TASK_KIND_REGISTRY,
    KindPluginError,
    LabelError,
    declared_part,
    get_kind,
)

#: The form of every task kind the app can show, by kind name.
FORMS: dict[str, Any] = {}


def register_form(kind: str, form: ModuleType | Any) -> None:
    """Show tasks of ``kind`` (a registered task kind) with ``form``."""
    get_kind(kind)  # the one clear error for an unknown kind
    FORMS[kind] = form


def register_this(kind: str, module_name: str) -> None:
    """``register_form`` for the calling module: ``register_this("my_kind", __name__)``."""
    register_form(kind, sys.modules[module_name])


#: What the app calls on a form.
FORM_FUNCTIONS = ("render", "edit", "unit_title")


def form_for(kind: str) -> Any:
    """The form of ``kind``: registered, or the one the kind names (``TaskKind.app_form``)."""
    task_kind = get_kind(kind)  # the one clear error for an unknown kind
    if kind not in FORMS:
        declared = declared_part(task_kind, "app_form")
        if declared is None:
            raise LabelError(f"task kind {kind!r} has no app form (register_form, or TaskKind.app_form)")
        missing = [f for f in FORM_FUNCTIONS if not callable(getattr(declared, f, None))]
        if missing:
            where = TASK_KIND_REGISTRY.origin(kind) or f"module {type(task_kind).__module__}"
            raise KindPluginError(
                f"task kind {kind!r} from {where}: its app_form {task_kind.app_form!r} has no "
                + ", ".join(missing)
            )
        register_form(kind, declared)
    return FORMS[kind]
