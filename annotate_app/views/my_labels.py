"""Undo: the annotator's last labels (config annotation.undo_depth), each editable."""

import streamlit as st
from prefkit.annotate_app import ui
from prefkit.annotate_app.forms import form_for
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_kinds import LabelError

user = ui.require("annotator").username
project = ui.open_project()
st.title("My recent labels")
recent = workflow.recent_labels(project, user)
st.caption(
    f"Your last {workflow.undo_depth(project)} items; an edit is recorded as a new label that replaces the old."
)
if not recent:
    st.info("No labels yet.")

for ev in recent:
    task = project.store.labels.task(ev.task_id)
    when = ev.created_at[:19].replace("T", " ")
    title = ui.safe("{} · {} · {} · {} UTC", ui.KIND_TITLES[ev.kind], task.item_ref, ev.action, when)
    with st.expander(title + (" · edited" if ev.supersedes else "")):
        if ev.action != "label":
            st.caption(ui.safe("{}: {} — label it now below if you can.", ev.action, ev.comment or ""))
        prefix = f"edit:{ev.event_id}"
        form_col = st.container()
        if task.payload.get("turns"):  # the dialogue the label is about, beside the form
            left, form_col = st.columns([2, 3], gap="large")
            with left, st.container(height=480, autoscroll=False):
                ui.transcript(workflow.display_turns(project, task))
        with form_col:
            values, comment = form_for(ev.kind).edit(
                project, task, prefix, ev.values if ev.action == "label" else {}, ev.comment
            )
            if st.button("Save edit", key=f"{prefix}:save", type="primary", disabled=values is None):
                try:
                    workflow.edit_label(project, user, ev.event_id, values, comment)
                except (LabelError, workflow.WorkflowError) as exc:
                    st.error(ui.safe("Not saved: {}", exc))
                else:
                    ui.flash("Edit saved")
                    st.rerun()
