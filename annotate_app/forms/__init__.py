"""One form module per task kind: ``render`` (annotate an item), ``edit`` (change an earlier label) and
``unit_title`` (name an agreement unit on the adjudication page); optionally ``summary``,
``describe`` and ``cell``, the item and a label in words (:mod:`prefkit.annotate_app.forms.text`).

``form_for(kind)`` is the form that shows tasks of a kind: the one the kind names (``TaskKind.app_form``,
an import reference), imported when the app first shows the kind
(:func:`~prefkit.curation.annotation.task_kinds.declared_part`). Importing this package imports no
form: it knows no kind and imports no form by name.
"""

from __future__ import annotations

from typing import Any

from prefkit.curation.annotation.task_kinds import (
    TASK_KIND_REGISTRY,
    KindPluginError,
    LabelError,
    declared_part,
    get_kind,
)

#: What the app calls on a form.
FORM_FUNCTIONS = ("render", "edit", "unit_title")


def form_for(kind: str) -> Any:
    """The form of ``kind``, the one the kind names (``TaskKind.app_form``: a module, or a class made
    with the kind, one form per kind drawn from its declaration)."""
    task_kind = get_kind(kind)  # the one clear error for an unknown kind
    form = declared_part(task_kind, "app_form")
    if form is None:
        raise LabelError(f"task kind {kind!r} has no app form (TaskKind.app_form)")
    missing = [f for f in FORM_FUNCTIONS if not callable(getattr(form, f, None))]
    if missing:
        where = TASK_KIND_REGISTRY.origin(kind) or f"module {type(task_kind).__module__}"
        raise KindPluginError(
            f"task kind {kind!r} from {where}: its app_form {task_kind.app_form!r} has no "
            + ", ".join(missing)
        )
    return form
