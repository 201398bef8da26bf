"""A task and a label in words, for tables and pickers: ``summary(task)`` (the item's text in one
line), ``describe(task, values)`` (a whole label), ``cell(task, values, unit, field)`` (one agreement
unit of a label, with the annotator's evidence). Each asks the kind's form (its functions of the
same names) and falls back to the item reference and the raw values for a form without them.

Everything here is plain text: the pages show it in tables and pickers, which never render markdown.
"""

from __future__ import annotations

import json
from typing import Any

from prefkit.annotate_app.forms import form_for
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.schemas.common import PrefkitError


def excerpt(text: Any, n: int = 90) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``n`` characters with an ellipsis."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= n else flat[: n - 1].rstrip() + "…"


def _form(kind: str) -> Any:
    """The kind's form, or None when it has none the app can load (the fallbacks below apply)."""
    try:
        return form_for(kind)
    except PrefkitError:
        return None


def summary(task) -> str:
    """The item's text in one line (the form's ``summary``), or its reference."""
    form = _form(task.kind)
    return str(form.summary(task)) if form is not None and hasattr(form, "summary") else task.item_ref


def named(task, n: int = 100) -> str:
    """The item as every picker and heading names it: its id and its text (:func:`summary`), cut to ``n``."""
    words = summary(task)
    return task.item_ref if words == task.item_ref else f"{task.item_ref} · {excerpt(words, n)}"


def describe(task, values: dict[str, Any]) -> str:
    """A label's values in words (the form's ``describe``), or as JSON."""
    form = _form(task.kind)
    if form is not None and hasattr(form, "describe"):
        return str(form.describe(task, values))
    return json.dumps(values, ensure_ascii=False, sort_keys=True)


def cell(task, values: dict[str, Any], unit: str, field: str) -> str:
    """One agreement unit of a label in words (the form's ``cell``), or the unit's raw value."""
    form = _form(task.kind)
    if form is not None and hasattr(form, "cell"):
        return str(form.cell(task, values, unit, field))
    value = get_kind(task.kind).item_units(values, task).get((unit, field))
    return "–" if value is None else str(value)
