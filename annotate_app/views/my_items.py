"""My items: every item of one's own — open, done, skipped, flagged — found by words in its text, its
id or reference, or one's comment, and filtered by task kind, batch, status and day; open ones first
(in queue order), then the newest answer first. A done, skipped or flagged item reopens in place in
the editor (a change is a new event that replaces the old one: labels are append-only); an open one
is a click away on the Annotate page. Only one's own items: the list is
:func:`prefkit.curation.annotation.my_items.my_items` for the signed-in user.

A list of rows, not a table: the item's text wraps at any window width instead of being cut off.
Render only; every value shown is escaped (``ui.safe``)."""

import datetime as dt

import streamlit as st
from prefkit.annotate_app import reopen, ui
from prefkit.annotate_app.forms.text import describe, summary
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import my_items
from prefkit.curation.annotation.workflow import WorkflowError

user = ui.require("annotator").username
project = ui.open_project()
st.title("My items")
if st.session_state.pop("mine_annotate", False):  # an open item's button: its kind's queue
    st.switch_page("views/annotate.py")

STATUS_WORDS = {"open": "Open", "done": "Done", "skipped": "Skipped", "flagged": "Flagged"}
BADGES = {
    s: f":{c}-badge[{s}]"
    for s, c in (("open", "blue"), ("done", "green"), ("skipped", "gray"), ("flagged", "orange"))
}

search = st.text_input(
    "Search text or id", key="mine_search", placeholder="words of the item, its id or reference, your comment"
)
f1, f2, f3, f4 = st.columns([3, 2, 4, 3])
kind = f1.selectbox(
    "Task kind",
    [None, *ui.KIND_TITLES],
    key="mine_kind",
    format_func=lambda k: "All task kinds" if k is None else ui.KIND_TITLES[k],
)
batch = f2.selectbox(
    "Batch",
    [None, *my_items.my_batches(project, user)],
    key="mine_batch",
    format_func=lambda b: "All batches" if b is None else b,
)
statuses = f3.pills(
    "Status (none picked: every status)",
    my_items.ITEM_STATUSES,
    selection_mode="multi",
    key="mine_status",
    format_func=lambda s: STATUS_WORDS[s],
)
days = f4.date_input(  # a range: empty (every day), one day picked so far, or both ends
    "Answered on (UTC)", value=[], key="mine_days", max_value=dt.date.today() + dt.timedelta(days=1)
)
since = until = None
if isinstance(days, tuple | list) and days:
    since, until = days[0].isoformat(), days[-1].isoformat()

page_no = st.session_state.get("mine_page", 0)
filters = (search, kind, batch, tuple(statuses or ()), since, until)
if st.session_state.get("mine_filters") != filters:  # new filters start at their first page
    st.session_state["mine_filters"], st.session_state["mine_page"], page_no = filters, 0, 0
try:
    page = my_items.my_items(
        project,
        user,
        kind=kind,
        batch=batch,
        statuses=tuple(statuses or my_items.ITEM_STATUSES),
        search=search,
        since=since,
        until=until,
        page=page_no,
    )
except WorkflowError as exc:  # a search too long: one line, nothing else
    st.warning(str(exc))
    st.stop()
if page.total == 0:
    unfiltered = filters == ("", None, None, (), None, None)
    st.info("Nothing assigned to you yet." if unfiltered else "None of your items matches these filters.")
    st.stop()
if not page.items and page_no > 0:  # the last page emptied (filters or edits): back to the first
    st.session_state["mine_page"] = 0
    ui.rerun()

st.caption(
    f"{page.offset + 1}–{page.offset + len(page.items)} of {page.total} · open items first, then the newest "
    "answer · reopen one to change it: the change is recorded as a new label that replaces the old one"
)


def _toggle(event_id: str) -> None:
    st.session_state["mine_open"] = None if st.session_state.get("mine_open") == event_id else event_id


def _saved(new) -> None:
    ui.flash("Edit saved")
    st.session_state["mine_open"] = new.event_id


def _annotate(kind: str) -> None:
    st.session_state["kind"] = kind  # the Annotate page opens this kind's queue
    st.session_state["mine_annotate"] = True


def _answer(item) -> str:
    ev = item.event
    if ev is None:
        return "on your screen now" if item.shown else "waiting in your queue"
    if ev.action == "label":
        return describe(item.task, ev.values)
    return f"{'skipped' if ev.action == 'skip' else 'flagged'}: {ev.comment or ''}"


opened = st.session_state.get("mine_open")
for item in page.items:
    task, ev = item.task, item.event
    when = reopen.when(ev) if ev is not None else "not answered yet"
    key = ev.event_id if ev is not None else f"open-{task.task_id}"
    with st.container(border=True, key=f"mine-{key}"):
        row = st.container(horizontal=True, vertical_alignment="center")
        row.markdown(  # the item's text and the answer, escaped: they are data
            BADGES[item.status]
            + ui.safe(
                " :small[:gray[{} · batch {} · {} · {}]]  \n{}  \n**{}**",
                ui.KIND_TITLES.get(task.kind, task.kind),
                task.batch,
                task.item_ref,
                when,
                summary(task),
                _answer(item),
            )
            + (" :small[:gray[· edited]]" if ev is not None and ev.supersedes else ""),
            width="stretch",
        )
        if ev is None:
            row.button(
                "Annotate",
                key=f"annotate:{task.task_id}",
                on_click=_annotate,
                args=(task.kind,),
                icon=":material/edit_note:",
                help="Open this kind's queue on the Annotate page",
            )
            continue
        is_open = opened == ev.event_id
        row.button(
            "Close" if is_open else "Reopen",
            key=f"reopen:{ev.event_id}",
            on_click=_toggle,
            args=(ev.event_id,),
            icon=":material/close:" if is_open else ":material/edit:",
        )
        if is_open:
            reopen.label_editor(project, user, ev, on_saved=_saved)

# a refused edit of a label no longer in the list (changed meanwhile in another tab): still said
for key in [k for k in st.session_state if str(k).startswith("edit") and str(k).endswith(":problem")]:
    st.error(md_escape(st.session_state.pop(key).text), icon=":material/error:")
nav = st.container(horizontal=True)
nav.button(
    "Previous page",
    key="mine_prev",
    disabled=page_no == 0,
    icon=":material/chevron_left:",
    on_click=lambda: st.session_state.update(mine_page=page_no - 1),
)
nav.button(
    "Next page",
    key="mine_next",
    disabled=page.offset + len(page.items) >= page.total,
    icon=":material/chevron_right:",
    on_click=lambda: st.session_state.update(mine_page=page_no + 1),
)
