"""My labels: every label, skip and flag of one's own (newest first), the item's text and what was
chosen, filtered by task kind and day, ``annotation.undo_depth`` at a time; any of them reopens in
place in the editor (a change is a new event that replaces the old one: labels are append-only).

A list of rows, not a table: the item's text wraps at any window width instead of being cut off."""

import datetime as dt

import streamlit as st
from prefkit.annotate_app import reopen, ui
from prefkit.annotate_app.forms.text import describe, summary
from prefkit.curation.annotation import workflow

user = ui.require("annotator").username
project = ui.open_project()
st.title("My recent labels")

f1, f2 = st.columns([1, 1])
kind = f1.selectbox(
    "Task kind", [None, *ui.KIND_TITLES], key="mine_kind",
    format_func=lambda k: "All task kinds" if k is None else ui.KIND_TITLES[k],
)  # fmt: skip
days = f2.date_input(  # a range: empty (every day), one day picked so far, or both ends
    "Days (UTC)", value=[], key="mine_days", max_value=dt.date.today() + dt.timedelta(days=1)
)
since = until = None
if isinstance(days, tuple | list) and days:
    since, until = days[0].isoformat(), days[-1].isoformat()
page_no = st.session_state.get("mine_page", 0)
filters = (kind, since, until)
if st.session_state.get("mine_filters") != filters:  # new filters start at their first page
    st.session_state["mine_filters"], st.session_state["mine_page"], page_no = filters, 0, 0
page = workflow.my_labels(project, user, kind, since, until, page=page_no)
if page.total == 0:
    st.info(
        "No labels yet." if filters == (None, None, None) else "None of your labels matches these filters."
    )
    st.stop()
if not page.events and page_no > 0:  # the last page emptied (filters or edits): back to the first
    st.session_state["mine_page"] = 0
    st.rerun()

tasks = {ev.task_id: project.store.labels.task(ev.task_id) for ev in page.events}
st.caption(
    f"{page.offset + 1}–{page.offset + len(page.events)} of {page.total}, newest first · reopen one to change "
    "it: the change is recorded as a new label that replaces the old one"
)


def _toggle(event_id: str) -> None:
    st.session_state["mine_open"] = None if st.session_state.get("mine_open") == event_id else event_id


def _saved(new) -> None:
    ui.flash("Edit saved")
    st.session_state["mine_open"] = new.event_id


opened = st.session_state.get("mine_open")
for ev in page.events:
    task = tasks[ev.task_id]
    answer = describe(task, ev.values) if ev.action == "label" else f"{ev.action}: {ev.comment or ''}"
    with st.container(border=True, key=f"mine-{ev.event_id}"):
        row = st.container(horizontal=True, vertical_alignment="center")
        row.markdown(  # the item's text and the answer, escaped: they are data
            ui.safe(":small[:gray[{} · {}]]  \n{}  \n**{}**", reopen.when(ev), ui.KIND_TITLES.get(ev.kind, ev.kind),
                    summary(task), answer) + (" :small[:gray[· edited]]" if ev.supersedes else ""),
            width="stretch",
        )  # fmt: skip
        is_open = opened == ev.event_id
        row.button("Close" if is_open else "Reopen", key=f"reopen:{ev.event_id}", on_click=_toggle,
                   args=(ev.event_id,), icon=":material/close:" if is_open else ":material/edit:")  # fmt: skip
        if is_open:
            reopen.label_editor(project, user, ev, on_saved=_saved)

nav = st.container(horizontal=True)
nav.button("Newer", key="mine_newer", disabled=page_no == 0, icon=":material/chevron_left:",
           on_click=lambda: st.session_state.update(mine_page=page_no - 1))  # fmt: skip
nav.button("Older", key="mine_older", disabled=page.offset + len(page.events) >= page.total,
           icon=":material/chevron_right:", on_click=lambda: st.session_state.update(mine_page=page_no + 1))  # fmt: skip
