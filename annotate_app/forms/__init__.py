"""One form module per task kind: ``render`` (annotate an item), ``edit`` (change an earlier label) and
``unit_title`` (name an agreement unit on the adjudication page); optionally ``summary``,
``describe`` and ``cell``, the item and a label in words (:mod:`prefkit.annotate_app.forms.text`).

The registry is :mod:`prefkit.annotate_app.forms.registry`; importing this package registers the
built-in forms. A new kind's form is its own module ending in ``register_this("<kind>", __name__)``.
"""

from prefkit.annotate_app.forms import expressed, match, memory, task_qc  # noqa: F401 - they register
from prefkit.annotate_app.forms.registry import FORMS, form_for, register_form, register_this

__all__ = ["FORMS", "form_for", "register_form", "register_this"]
