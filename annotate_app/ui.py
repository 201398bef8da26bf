"""Rendering helpers shared by the pages: the project, the signed-in user, dialogue bubbles, progress.

Render only: every decision is a call into :mod:`curation.workflow` (or another curation module).
"""

from __future__ import annotations

import os
from typing import Any

import streamlit as st

from annotate_app.safe_text import md_escape
from curation import workflow
from curation.project import Project
from curation.task_kinds import LabelError, get_kind
from schemas.common import PrefkitError
from schemas.curation import TASK_KINDS

KIND_TITLES = {k: get_kind(k).title for k in TASK_KINDS}
ROLE_AVATARS = {
    "user": ":material/person:",
    "assistant": ":material/smart_toy:",
    "system": ":material/settings:",
}


@st.cache_resource(show_spinner=False)
def _open_project(root: str) -> Project:
    return Project(root)


def project() -> Project:
    """The served project: ``$PREFKIT_PROJECT`` (set by ``prefkit annotate serve``) or the cwd."""
    try:
        return _open_project(os.path.abspath(os.environ.get("PREFKIT_PROJECT", ".")))
    except PrefkitError as exc:
        st.error(str(exc))
        st.stop()


def signed_in() -> dict[str, Any] | None:
    return st.session_state.get("user")


def require(role: str) -> dict[str, Any]:
    """The signed-in user when allowed on this page; otherwise the page stops here."""
    try:
        return workflow.require_role(signed_in(), role)
    except workflow.AuthError as exc:
        st.error(str(exc))
        st.stop()


def sign_out() -> None:
    for key in list(st.session_state.keys()):
        del st.session_state[key]


def flash(message: str) -> None:
    """A toast shown after the next rerun (st.rerun would swallow one shown now)."""
    st.session_state["_flash"] = message


def show_flash() -> None:
    message = st.session_state.pop("_flash", None)
    if message:
        st.toast(message, icon=":material/check_circle:")


def text(value: str, *, caption: bool = False) -> None:
    """Untrusted text, displayed exactly as written (never as HTML or markdown)."""
    (st.caption if caption else st.markdown)(md_escape(value))


def bubble(turn: dict[str, Any], note: str = "") -> Any:
    """One chat bubble; returns its container so callers can add controls under the text."""
    box = st.chat_message(turn["role"], avatar=ROLE_AVATARS.get(turn["role"]))
    with box:
        st.caption(f"turn {turn['index']} · {turn['role']}{note}")
        text(turn["content"])
    return box


def submit_values(
    proj: Project, user: str, item: workflow.ShownItem, values: dict, comment: str | None
) -> None:
    """Record a label and move on; a validation problem is shown and the item stays."""
    try:
        written = workflow.submit(proj, user, item, values, comment)
    except LabelError as exc:
        st.error(f"Not saved: {exc}")
        return
    flash("Saved" if written else "Already saved")
    st.rerun()


def submit_button(
    proj: Project, user: str, item: workflow.ShownItem, prefix: str, vals: dict | None, missing: str, where=st
) -> None:
    """The primary Submit button (Ctrl+Enter) of a form; warns with ``missing`` while ``vals`` is None."""
    if where.button(
        "Submit",
        type="primary",
        shortcut="Ctrl+Enter",
        key=f"{prefix}:submit",
        icon=":material/check_circle:",
    ):
        if vals is None:
            st.warning(missing)
        else:
            submit_values(proj, user, item, vals, st.session_state.get(f"{prefix}:comment"))


def skip_and_flag(proj: Project, user: str, item: workflow.ShownItem) -> None:
    """The skip/flag panel under every item."""
    with st.expander("Skip or report this item"):
        c1, c2 = st.columns(2)
        with c1:
            reason = st.selectbox("Skip reason", workflow.SKIP_REASONS, key=f"{item.event_id}:skipr")
            if st.button("Skip", key=f"{item.event_id}:skip", icon=":material/skip_next:"):
                workflow.skip(proj, user, item, reason)
                flash("Skipped")
                st.rerun()
        with c2:
            why = st.selectbox("What is broken", workflow.FLAG_REASONS, key=f"{item.event_id}:flagr")
            if st.button("Flag as broken", key=f"{item.event_id}:flag", icon=":material/flag:"):
                workflow.flag(proj, user, item, why)
                flash("Flagged for the maintainers")
                st.rerun()


@st.cache_data(ttl=60, show_spinner=False)
def _available(root: str, user: str, kind: str, assigned: int) -> int:
    """The pool count, recomputed when the annotator is given new items or after a minute."""
    return workflow.available(_open_project(root), user, kind)


def progress_sidebar(proj: Project, user: str, kind: str) -> dict[str, Any]:
    """The annotator's progress in the sidebar; returns the counts of ``kind``."""
    mine = workflow.progress(proj, user)
    st.sidebar.subheader("Progress")
    c1, c2 = st.sidebar.columns(2)
    c1.metric("Done / assigned", f"{mine[kind]['done']} / {mine[kind]['assigned']}")
    c2.metric("Today", sum(c["today"] for c in mine.values()))
    more = _available(str(proj.root), user, kind, mine[kind]["assigned"])
    total = mine[kind]["assigned"] + more
    st.sidebar.progress(mine[kind]["done"] / total if total else 1.0, text=f"{more} more in the pool")
    rows = mine[kind]["batches"]
    if len(rows) > 1:
        st.sidebar.caption(" · ".join(f"{r['batch_id']}: {r['done']}/{r['assigned']}" for r in rows))
    return mine[kind]
