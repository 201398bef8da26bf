"""One form module per task kind: ``render`` (annotate an item), ``edit`` (change an earlier label) and
``unit_title`` (name an agreement unit on the adjudication page); optionally ``summary``,
``describe`` and ``cell``, the item and a label in words (:mod:`prefkit.annotate_app.forms.text`).

The registry is :mod:`prefkit.annotate_app.forms.registry`. Importing this package imports no form: a
kind names its form module (``TaskKind.app_form = "prefkit.annotate_app.forms.<form>"``), which the app
imports when it first shows the kind.
"""

from prefkit.annotate_app.forms.registry import form_for

__all__ = ["form_for"]
