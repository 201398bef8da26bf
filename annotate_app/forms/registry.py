"""The forms of the annotation app, by task kind: ``form_for(kind)`` is the module (or object) with
``render``, ``edit`` and ``unit_title`` that shows tasks of that kind.

Every kind names its form (``TaskKind.app_form``, an import reference), imported when the app first
shows the kind; :func:`register_form` sets one in-process. This module knows no kind and imports no
form by name, and neither does the package (:mod:`prefkit.annotate_app.forms`).
"""

from __future__ import annotations

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


#: What the app calls on a form.
FORM_FUNCTIONS = ("render", "edit", "unit_title")


def form_for(kind: str) -> Any:
    """The form of ``kind``: registered, or the one the kind names (``TaskKind.app_form``: a module,
    or a class made with the kind, one form per kind drawn from its declaration)."""
    task_kind = get_kind(kind)  # the one clear error for an unknown kind
    if kind not in FORMS or getattr(FORMS[kind], "kind", task_kind) is not task_kind:
        declared = declared_part(task_kind, "app_form")
        if isinstance(declared, type):
            declared = declared(task_kind)
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
