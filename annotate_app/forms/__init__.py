"""One form module per task kind: ``render`` (annotate an item), ``edit`` (draw the form prefilled: an
earlier label, a decision), ``read`` (what the person chose on it) and ``unit_title`` (name an agreement
unit on the adjudication page); optionally ``summary``,
``describe`` and ``cell``, the item and a label in words (:mod:`prefkit.annotate_app.forms.text`).

``form_for(kind)`` is the form that shows tasks of a kind: the one the kind names (``TaskKind.app_form``,
an import reference), imported when the app first shows the kind
(:func:`~prefkit.curation.annotation.task_kinds.declared_part`). Importing this package imports no
form: it knows no kind and imports no form by name. :func:`read` is how every editor reads a form.
"""

from __future__ import annotations

from typing import Any

from prefkit.annotate_app import ui
from prefkit.curation.annotation.task_kinds import (
    TASK_KIND_REGISTRY,
    KindPluginError,
    LabelError,
    declared_part,
    get_kind,
)

#: What the app calls on a form.
FORM_FUNCTIONS = ("render", "edit", "read", "unit_title")


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


def read(task: Any, prefix: str) -> tuple[dict[str, Any] | None, Any]:
    """What the person chose on ``task``'s form drawn under ``prefix``: ``(values, "")``, or ``(None, what
    is missing)`` naming each required part left open. Read from the widgets' state when called, so
    every editor (Annotate, the *previous item* editor, My items, adjudication, the gold answer) calls
    it in its Submit or Save callback, by click or key, and none keeps a copy of the values."""
    return form_for(task.kind).read(task, prefix)


def submit_button(user: str, item: Any, prefix: str) -> None:
    """The primary Submit button (Ctrl+Enter) of a form, in the item's action bar: records what the
    form holds at the moment of the click or key (:func:`read`). What stops a submit is drawn at the
    top of the item (``screen.show_problem``), where the page scrolls, not under this button."""
    ui.action_bar(item).button(
        "Submit",
        type="primary",
        shortcut="Ctrl+Enter",
        key=f"{prefix}:submit",
        icon=":material/check_circle:",
        on_click=lambda: ui.submit_now(user, item, prefix, *read(item.task, prefix)),
    )
