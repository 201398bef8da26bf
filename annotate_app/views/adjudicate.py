"""Adjudication: items whose annotators disagree, their labels side by side, the final decision."""

import pandas as pd
import streamlit as st
from prefkit.annotate_app import ui
from prefkit.annotate_app.forms import form_for
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.quality import consensus
from prefkit.schemas.common import PrefkitError

maintainer = ui.require("maintainer").username
project = ui.open_project()
st.title("Adjudication")

kind = st.segmented_control("Task kind", list(ui.KIND_TITLES), format_func=lambda v: ui.KIND_TITLES.get(v, v), key="adj_kind",
                            default="preference_match", required=True)  # fmt: skip
assert kind is not None  # required=True: always a kind
items = consensus.disagreements(project.store, kind)
if not items:
    st.success("No disagreements for this task kind.")
    st.stop()

open_items = [d for d in items if not d["adjudicated"]]
st.caption(f"{len(open_items)} waiting · {len(items) - len(open_items)} decided")
show_done = st.toggle("Show decided items too", key="adj_done")
pool = items if show_done else open_items
if not pool:
    st.success("Every disagreement has a decision.")
    st.stop()
task_id = st.selectbox(
    "Item",
    [d["task_id"] for d in pool],
    format_func=lambda t: next(f"{d['item_ref']} · {d['decided_by']}" for d in pool if d["task_id"] == t),
    key="adj_task",
)
entry = next(d for d in pool if d["task_id"] == task_id)
task = project.store.labels.task(task_id)

st.subheader("Labels side by side")
units = {who: get_kind(kind).units(values) for who, values in entry["labels"].items()}
keys = sorted({u for per in units.values() for u in per})
table = pd.DataFrame(  # a dataframe shows its cells as plain text: no markdown, no links
    [{"unit": form_for(kind).unit_title(task, u, f), **{who: per.get((u, f)) for who, per in units.items()}}
     for u, f in keys]
)  # fmt: skip
table["agree"] = table[list(units)].nunique(axis=1, dropna=False) == 1
st.dataframe(table.sort_values("agree"), hide_index=True, width="stretch")
comments = {ev.annotator: ev.comment for ev in project.store.labels.events(task_id=task_id) if ev.comment}
for who, note in comments.items():
    ui.text(f"{who}: {note}", caption=True)

if task.payload.get("turns"):
    with st.expander("Dialogue"), st.container(height=480):
        ui.transcript(workflow.display_turns(project, task))

st.subheader("Final decision")
decided = consensus.final_labels(project.store, kind).get(task_id, {})
start = decided.get("values") or {}  # a tie starts empty: no annotator's answer is the default
if not start:
    st.caption("A tie: the form starts empty. Decide every unit yourself.")
prefix = f"adj:{task_id}"
values, _ = form_for(kind).edit(project, task, prefix, start, None, show_comment=False)
note = st.text_area("Note (why this decision)", key=f"{prefix}:note")
if st.button("Record decision", type="primary", key=f"{prefix}:save", disabled=values is None):
    try:
        consensus.adjudicate(project.store, task_id, maintainer, values, note)
    except PrefkitError as exc:
        st.error(ui.safe("Not recorded: {}", exc))
    else:
        ui.flash("Decision recorded")
        st.rerun()
