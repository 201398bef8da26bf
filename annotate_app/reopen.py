"""Reopening one's own labels: the editor My labels and the *previous item* key share.

A reopened label is shown with its item (the dialogue beside the form, prefilled with what was
chosen); *Save edit* records a new event that supersedes it (``workflow.edit_label``: labels are
append-only, the old one stays in the log). A skip or a flag reopens as an empty form, so the item
can be labelled after all.

Render only: every decision is a call into :mod:`prefkit.curation.annotation.workflow`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st
from prefkit.annotate_app import forms, screen, session, ui
from prefkit.annotate_app.forms import form_for
from prefkit.annotate_app.forms.text import named
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_kinds import LabelError
from prefkit.curation.project import Project
from prefkit.schemas.curation import LabelEvent

#: Session key of the *previous item* view: how many labels back the annotator went (per task kind).
BACK = "_back:{}"


def when(ev: LabelEvent) -> str:
    return ev.created_at[:16].replace("T", " ") + " UTC"


def label_editor(
    project: Project, user: str, ev: LabelEvent, on_saved: Callable[[LabelEvent], None] | None = None
) -> None:
    """One of the annotator's own labels, reopened: its item and the form prefilled with it, or with
    the changes left unsaved on it (a draft). ``on_saved`` gets the new event after a saved edit
    (inside the button's callback; default: a confirmation at the top of the next run)."""
    task = project.store.labels.task(ev.task_id)
    prefix = _prefix(ev)
    head = ui.safe("**{}** · {} · {}", ui.KIND_TITLES.get(ev.kind, ev.kind), named(task), when(ev))
    st.markdown(head + (" · edited" if ev.supersedes else ""))
    if ev.action != "label":
        st.caption(
            ui.safe("You chose to {}: {} — label it now below if you can.", ev.action, ev.comment or "")
        )
    form_col = st.container()
    if task.payload.get("turns"):  # the dialogue the label is about, beside the form
        left, form_col = st.columns([2, 3], gap="large")
        with left, st.container(height=480, autoscroll=False, key=f"dialogue-{prefix}"):
            ui.transcript(workflow.display_turns(project, task))
    with form_col:
        session.reopen(prefix, lambda: workflow.edit_draft(project, user, ev))
        screen.take_problem(prefix)  # why the last Save edit recorded nothing
        screen.show_problem(prefix)
        form_for(ev.kind).edit(project, task, prefix, ev.values if ev.action == "label" else {}, ev.comment)
        changed = session.keep(prefix, lambda state: workflow.save_edit_draft(project, user, ev, state))

        def save() -> None:
            values, missing = forms.read(task, prefix)
            if values is None:  # what is left open, by name: nothing recorded
                return screen.problem(prefix, missing)
            comment = st.session_state.get(f"{prefix}:comment") or None
            try:
                new = workflow.edit_label(
                    project, user, ev.event_id, values, comment, signed_in=True, session=ui.session_token()
                )
            except workflow.AccountInactive:  # the session ended: nothing written, the next run signs in
                return ui.sign_out()
            except (LabelError, workflow.WorkflowError) as exc:
                return screen.problem(prefix, f"Not saved: {exc}")
            session.done(prefix)
            (on_saved or (lambda _: ui.flash("Edit saved")))(new)

        def discard() -> None:
            project.store.drafts.drop_draft(user, ev.task_id, ev.event_id)
            session.done(prefix)
            st.session_state[_ROUND.format(ev.event_id)] = (
                st.session_state.get(_ROUND.format(ev.event_id), 0) + 1
            )

        row = st.container(horizontal=True, vertical_alignment="center")
        row.button(
            "Save edit",
            key=f"{prefix}:save",
            type="primary",
            on_click=save,
            icon=":material/save:",
            shortcut="Ctrl+Enter",
        )
        if changed:
            row.button("Discard changes", key=f"{prefix}:discard", on_click=discard, icon=":material/undo:")
            row.caption("Unsaved changes, kept as a draft: Save edit records them.")


#: Session key of how many times an editor's changes were discarded: a fresh round of widgets each time
#: (the browser keeps a widget's value while its key stays the same).
_ROUND = "_edit_round:{}"


def _prefix(ev: LabelEvent) -> str:
    n = st.session_state.get(_ROUND.format(ev.event_id), 0)
    return f"edit{n or ''}:{ev.event_id}"


def _go_back(kind: str, step: int) -> None:
    """The *previous item* key (one label further back), or with ``step`` 0 back to the current item."""
    key = BACK.format(kind)
    if step:
        st.session_state[key] = st.session_state.get(key, -1) + 1
    else:
        st.session_state.pop(key, None)


def previous_button(kind: str, where: Any = st, **style: Any) -> None:
    """The *previous item* key (``P``) of every item (in its action bar): reopens the label the
    annotator gave last (or, in the editor, the one before it). ``style`` overrides the tertiary look."""
    where.button(
        "Previous item",
        key=f"prev:{kind}",
        shortcut="P",
        icon=":material/undo:",
        on_click=_go_back,
        args=(kind, 1),
        **{"type": "tertiary", **style},
    )


def _saved(kind: str, item_ref: str) -> None:
    st.session_state["_last_done"] = ("Edit saved", item_ref)  # shown inline above the current item
    _go_back(kind, 0)


def previous_panel(project: Project, user: str, kind: str) -> bool:
    """While the annotator went back with ``P``: their ``n``-th last label of ``kind`` in the editor,
    with keys to go one further back (``P``) or return to the current item (``Esc``). False when they
    did not go back."""
    back = st.session_state.get(BACK.format(kind))
    if back is None:
        return False
    ev = workflow.previous_label(project, user, kind, back)
    while ev is None and back > 0:  # already at the first label: stay there
        back -= 1
        ev = workflow.previous_label(project, user, kind, back)
    st.session_state[BACK.format(kind)] = back
    st.markdown(f"#### {ui.KIND_TITLES[kind]} · your label {back + 1} back")
    row = st.container(horizontal=True)
    row.button(
        "Back to the current item",
        key=f"cur:{kind}",
        shortcut="Escape",
        type="primary",
        icon=":material/redo:",
        on_click=_go_back,
        args=(kind, 0),
    )
    previous_button(kind, row, type="secondary", disabled=ev is None)
    if ev is None:
        st.info("Nothing to go back to yet: you have not finished an item of this kind.")
        return True
    st.caption("A change is saved as a new label that replaces this one; the item you were on waits.")
    ref = project.store.labels.task(ev.task_id).item_ref
    label_editor(project, user, ev, on_saved=lambda _new: _saved(kind, ref))
    return True
