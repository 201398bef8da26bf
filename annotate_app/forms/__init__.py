"""One form module per task kind: ``render`` (annotate an item), ``edit`` (change an earlier label) and
``unit_title`` (name an agreement unit on the adjudication page).

A form registers against its task kind's name with :func:`register_form`; the pages find it with
``FORMS[kind]``. A new kind's form is its own module ending in ``register_form("<kind>", <module>)``.
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


from prefkit.annotate_app.forms import expressed, match, memory, task_qc  # noqa: E402, F401 - they register
