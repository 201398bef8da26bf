"""Preference matching: a checklist item beside a candidate preference; one key labels and moves on.

Keys: 1 fully covered, 2 partially covered, 3 not covered. On an item of the assisted arm with a
suggestion (``prefkit suggest``), Enter confirms the suggested value; the suggested button carries the
suggestion mark and the others stay available.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st
from prefkit.annotate_app import ui
from prefkit.annotate_app.forms import suggestion
from prefkit.annotate_app.forms.text import excerpt
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import workflow

if TYPE_CHECKING:
    from prefkit.curation.project import Project

CHOICES = (
    ("fully", "Fully covered", "1"),
    ("partially", "Partially covered", "2"),
    ("not_covered", "Not covered", "3"),
)
TITLES = {value: title for value, title, _ in CHOICES}


# The comment box sits under the item's "skip or report" switch: one key press labels an item, so
# every element drawn per item is paid for on every submit (bench/bench_browser.py).
COMMENT_IN_PANEL = True

#: The keys of this form, for the help overlay (``?``).
SHORTCUTS = tuple((key, f"{title}: label the item and move on") for _, title, key in CHOICES)


def lead(task) -> str:
    """The pair, drawn in the same markdown element as the item's header (one element per item, not
    five: the browser's work per submit grows with the elements drawn)."""
    p = task.payload
    return (
        "**Checklist item** :gray[· what a reply that honours the preference does]  \n"
        + md_escape(p["checklist_item"])
        + "\n\n**Candidate preference**  \n"
        + md_escape(p["candidate"])
    )


def pair(task) -> None:
    st.markdown(lead(task))


def render(project: Project, user: str, item: workflow.ShownItem) -> None:
    prefix = item.event_id  # the pair is the header's lead (lead()), the comment box under the switch
    shown = suggestion.shown(project, user, item)  # None on the control arm: nothing to draw
    suggested = (shown.values or {}).get("coverage") if shown else None
    row = ui.action_bar(item)  # the decision is the submit: kept in the window however long the pair
    if shown and suggested:
        row.button(
            suggestion.confirm_label(shown, TITLES[suggested]),
            shortcut="Enter",
            key=f"{prefix}:confirm",
            icon=suggestion.ICON,
            type="primary",
            help=f"Suggested by {suggestion.source(shown)}",
            on_click=ui.submit_now,
            args=(user, item, prefix, {"coverage": suggested}),
        )
    for value, title, key in CHOICES:
        row.button(
            title,
            shortcut=key,
            key=f"{prefix}:{value}",
            width="stretch",
            type="secondary" if suggested else "primary",
            icon=suggestion.ICON if value == suggested else None,
            on_click=ui.submit_now,
            args=(user, item, prefix, {"coverage": value}),
        )


def edit(
    project: Project,
    task,
    prefix: str,
    initial: dict[str, Any],
    comment: str | None,
    show_comment: bool = True,
) -> tuple[dict | None, str | None]:
    pair(task)
    choice = st.segmented_control(
        "Coverage",
        [value for value, _, _ in CHOICES],
        format_func=lambda v: TITLES.get(v, v),
        default=initial.get("coverage"),
        key=f"{prefix}:coverage",
    )
    note = st.text_input("Comment", value=comment or "", key=f"{prefix}:comment") if show_comment else None
    return ({"coverage": choice} if choice else None), (note or None)


def unit_title(task, unit: str, field: str) -> str:
    return field


def summary(task) -> str:
    p = task.payload
    return f"{excerpt(p['checklist_item'], 70)} ↔ {excerpt(p['candidate'], 70)}"


def describe(task, values: dict[str, Any]) -> str:
    return TITLES.get(str(values.get("coverage")), "–")


def cell(task, values: dict[str, Any], unit: str, field: str) -> str:
    return describe(task, values)
