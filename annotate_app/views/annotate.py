"""The annotator's queue: one item at a time, guidelines beside it, progress above it.

The item, its form and the progress line are one fragment: a submit reruns only them (the sidebar
and the rest of the page stay as they are), and the next item is rendered in the same run.

Only task kinds with something for the annotator (items open in their queue, or in the pool for
them) are offered; the others are named, so nobody reads guidelines for a queue that is empty.
"""

import streamlit as st
from prefkit.annotate_app import errors, reopen, screen, session, ui
from prefkit.annotate_app.forms import form_for
from prefkit.curation.annotation import workflow

user = ui.require("annotator").username
project = ui.open_project()

work = workflow.kinds_with_work(project, user)
offered = list(work)
idle = [ui.KIND_TITLES[k] for k in ui.KIND_TITLES if k not in offered]
if not offered:
    st.title("Nothing to annotate")
    st.success(
        "Nothing is waiting for you in any task kind: your queues are done and the pool has nothing "
        "more for you. Thank you! Your items are under *My items*."
    )
    st.stop()
if "kind" not in st.session_state and session.kind_from_url(offered):  # a reload: the kind it showed
    st.session_state["kind"] = session.kind_from_url(offered)
if st.session_state.get("kind") not in offered:  # first visit, or that kind has nothing left
    st.session_state["kind"] = next((k for k in offered if work[k]), offered[0])  # one already started
kind = st.sidebar.segmented_control(
    "Task kind", offered, format_func=lambda v: ui.KIND_TITLES.get(v, v), key="kind", required=True
)
assert kind is not None  # required=True: always a kind
if idle:
    st.sidebar.caption("Nothing waiting for you in: " + ", ".join(idle))
guidelines = ui.guidelines(project, kind)
# Beside the item on demand: every element on the page is drawn again by the browser on each submit
# (a fragment's run still refreshes the whole page's elements), so hidden guidelines cost nothing.
if st.sidebar.toggle("Show the guidelines here", key="guidelines_beside"):
    with st.sidebar.container(border=True):
        st.markdown(guidelines)

# a reload on the kind the address named, already started: its guidelines were read (asked before the
# address follows a kind chosen now, which is no reload)
if session.intro_read(kind) and work.get(kind):
    st.session_state[f"intro:{kind}"] = True
session.remember_kind(kind)  # in the URL at once (on the guidelines too): a reload opens this kind again
if not st.session_state.get(f"intro:{kind}"):
    st.title(ui.KIND_TITLES[kind])
    st.info(
        "Read the guidelines once before your first item; they stay in the sidebar.",
        icon=":material/menu_book:",
    )
    with st.container(border=True):
        st.markdown(guidelines)
    if st.button("Start annotating", type="primary", shortcut="Enter", key=f"start:{kind}"):
        st.session_state[f"intro:{kind}"] = True
        ui.rerun()
    st.stop()


@st.fragment
@errors.guarded  # a rerun of the fragment alone: an unexpected error is one line with an id, too
def item_panel(kind: str) -> None:
    ui.run_mark()  # a run of the fragment alone is counted too (the keys wait for it)
    view = workflow.annotator_view(project, user, kind, ui.session_token()) if ui.signed_in() else None
    if view is None or not view.active:  # signed out (here or in another tab), expired, revoked, disabled
        ui.sign_out()
        ui.rerun()
    if reopen.previous_panel(project, user, kind):  # the annotator went back with P
        return
    item = view.item
    screen.track(kind, item)  # another tab finished the item this one showed: say so
    mine = ui.progress(project, user, kind, view.version)
    if item is None:
        ui.last_done()
        screen.show_notice()
        st.title(ui.KIND_TITLES[kind])
        st.success(
            "Nothing left in your queue for this task kind. Thank you! Pick another kind in the sidebar."
        )
        reopen.previous_button(kind)
        return
    form = form_for(kind)
    session.reopen(item.event_id, lambda: view.draft)  # a reload: the half-done form as it was left
    lead = None if getattr(form, "PANES", False) else getattr(form, "lead", None)  # paned: the form's own
    ui.progress_line(ui.KIND_TITLES[kind], mine, item, lead)
    screen.show_notice()
    screen.take_problem(item.event_id)  # why the last submit was not saved: here and by each row
    screen.show_problem(item.event_id)
    form.render(project, user, item)
    ui.skip_and_flag(user, item, comment=getattr(form, "COMMENT_IN_PANEL", False))
    session.keep(item.event_id, lambda state: workflow.save_draft(project, user, item, state))
    if mine["done"]:  # something to go back to
        reopen.previous_button(kind, where=ui.action_bar(item))


item_panel(kind)
