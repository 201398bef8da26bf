"""One item, for maintainers: its text and dialogue, every annotator's live label, skip or flag (their
answer in words, comment and time), and the way to its adjudication. Opened from the dashboard's
flagged items or the adjudication page; the address (``item?task=<task id>``) can be shared."""

import pandas as pd
import streamlit as st
from prefkit.annotate_app import console, ui
from prefkit.annotate_app.forms import form_for
from prefkit.annotate_app.forms.text import describe, summary
from prefkit.curation.annotation import workflow
from prefkit.curation.quality import consensus
from prefkit.curation.store import StoreError

me = ui.require("maintainer").username
project = ui.open_project()
store = project.store
task_id = st.query_params.get("task") or st.session_state.get("item_task")
try:
    task = store.labels.task(task_id) if task_id else None
except StoreError:
    task = None
if task is None:
    st.title("Item")
    st.info("Open an item from the dashboard's flagged items or from the adjudication page.")
    st.stop()
st.session_state["item_task"] = task.task_id
st.query_params["task"] = task.task_id  # the address names the item: a reload or a shared link opens it

st.title(ui.KIND_TITLES.get(task.kind, task.kind))
st.markdown(
    ui.safe(
        "{}  \n:small[:gray[item {} · batch {} · task {}]]",
        summary(task),
        task.item_ref,
        task.batch,
        task.task_id,
    )
    + (" · :orange-badge[gold]" if task.is_gold else "")
)

live = sorted(
    (ev for ev in store.labels.effective_events(task.kind) if ev.task_id == task.task_id),
    key=lambda ev: ev.created_at,
)
if not live:
    st.caption("Nobody has labelled, skipped or flagged this item yet.")
else:
    st.dataframe(  # plain-text cells: comments and answers never render as markdown
        pd.DataFrame(
            [
                {
                    "annotator": ev.annotator,
                    "action": ev.action,
                    "answer": describe(task, ev.values) if ev.action == "label" else "",
                    "comment": ev.comment or "",
                    "when": ev.created_at[:16].replace("T", " "),
                    "seconds": "–" if ev.time_spent_s is None else f"{ev.time_spent_s:.1f}",
                }
                for ev in live
            ]
        ),
        hide_index=True,
        width="stretch",
        column_config={"answer": st.column_config.TextColumn(width="large")},
    )
final = consensus.final_labels(store, task.kind).get(task.task_id)
st.caption(f"Decided by: {final.decided_by if final else 'undecided'}")
with st.expander("Gold item" + (" (this is one)" if task.is_gold else ": mark this item as gold")):
    console.gold_form(project, me, task)
if sum(ev.action == "label" for ev in live) >= 2:
    st.page_link(
        "views/adjudicate.py",
        label="Adjudicate this item",
        icon=":material/balance:",
        query_params={"kind": task.kind, "task": task.task_id},
    )

if task.payload.get("turns"):
    st.header("Dialogue")
    with st.container(height=520, key=f"dialogue-item-{task.task_id}"):
        ui.transcript(workflow.display_turns(project, task))
elif hasattr(form_for(task.kind), "lead"):  # a pair of texts: the form's own lead (escaped there)
    with st.container(border=True):
        st.markdown(form_for(task.kind).lead(task))
elif hasattr(form_for(task.kind), "item"):
    form_for(task.kind).item(task)
