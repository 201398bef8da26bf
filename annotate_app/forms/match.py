"""Preference matching: a gold checklist item beside a candidate preference; one key labels and moves on.

Keys: 1 fully covered, 2 partially covered, 3 not covered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from annotate_app import ui
from annotate_app.forms import register_this
from annotate_app.safe_text import md_escape
from curation.annotation import workflow
from curation.annotation.kinds.preference_match import KIND

if TYPE_CHECKING:
    from curation.project import Project

CHOICES = (
    ("fully", "Fully covered", "1"),
    ("partially", "Partially covered", "2"),
    ("not_covered", "Not covered", "3"),
)
TITLES = {value: title for value, title, _ in CHOICES}


def pair(task) -> None:
    p = task.payload
    c1, c2 = st.columns(2, gap="large", border=True)  # bordered columns: two elements fewer per item
    c1.markdown("**Gold checklist item**  \n" + md_escape(p["checklist_item"]))
    c2.markdown(
        "**Candidate preference**  \n"
        + md_escape(p["candidate"])
        + ui.safe("  \n:gray[from {}]", p.get("origin") or "unknown")
    )


def render(project: Project, user: str, item: workflow.ShownItem) -> None:
    prefix = item.event_id
    pair(item.task)
    st.text_input("Comment (optional, type it before choosing)", key=f"{prefix}:comment")
    row = st.container(horizontal=True)
    for value, title, key in CHOICES:
        row.button(title, shortcut=key, key=f"{prefix}:{value}", width="stretch", type="primary",
                   on_click=ui.submit_now, args=(user, item, prefix, {"coverage": value}))  # fmt: skip


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
        format_func=TITLES.get,
        default=initial.get("coverage"),
        key=f"{prefix}:coverage",
    )
    note = st.text_input("Comment", value=comment or "", key=f"{prefix}:comment") if show_comment else None
    return ({"coverage": choice} if choice else None), (note or None)


def unit_title(task, unit: str, field: str) -> str:
    return field


register_this(KIND, __name__)
