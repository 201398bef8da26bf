"""The app's one way to draw a model's suggestion (``prefkit suggest``): which arm the annotator is in
for the item on screen, and how a pre-filled value is marked as a suggestion until it is confirmed or
changed.

The exposure is read once per item (one indexed read) and kept with the item's other state; a control
item's exposure carries no values, so a form cannot draw what it was not given. The submit callbacks
(:func:`prefkit.annotate_app.ui.submit_now`) pass it on, and the label event records the arm and the
suggestion's id. Render only: the arm is decided in :mod:`prefkit.curation.annotation.suggestions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st
from prefkit.annotate_app import ui
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation.suggestions import Exposure, exposure_for

if TYPE_CHECKING:
    from prefkit.curation.annotation import workflow
    from prefkit.curation.project import Project

#: The mark of a suggested value, on every control that holds one.
ICON = ":material/smart_toy:"


def exposure(project: Project, user: str, item: workflow.ShownItem) -> Exposure | None:
    """What ``user`` is shown of the item's suggestion (None: the item has none), read once per item."""
    key = ui.assist_key(item)
    if key not in st.session_state:
        st.session_state[key] = exposure_for(project, user, item.task)
    return st.session_state[key]


def shown(project: Project, user: str, item: workflow.ShownItem) -> Exposure | None:
    """The exposure when its values may be drawn (the assisted arm), else None."""
    exp = exposure(project, user, item)
    return exp if exp is not None and exp.shown else None


def source(exp: Exposure) -> str:
    """Who suggested it, as escaped markdown: the model, and *offline* for a stand-in answer."""
    return md_escape(exp.model) + (" (offline stand-in)" if exp.offline else "")


def confirm_label(exp: Exposure, value_title: str) -> str:
    """The confirm button's label: the value and that it is a suggestion until confirmed."""
    return f"Suggested: {value_title} · confirm"


def note(exp: Exposure, summary: str) -> str:
    """A one-line markdown note for forms that pre-fill several controls: the suggestion, its source,
    and that it stays a suggestion until confirmed or changed (``summary`` is escaped by the caller)."""
    return f":violet[{ICON} Suggestion by {source(exp)}: {summary}] :gray[· pre-filled until you confirm or change it]"
