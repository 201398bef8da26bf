"""Adjudication: items whose annotators disagree, their labels side by side, the final decision.

The page opens on the first kind with disagreements still waiting. The picker names items by their id
and summary; a span question shows one row per annotator with their spans drawn in the text and the
pairwise span F1 beside it; the table shows each annotator's answer per unit in words with their
evidence (a span question's word x label units behind *Show word units*); the decision form starts from what the majority decides, and for a tie from
the units the annotators agreed on (only the tied ones start empty).
"""

import pandas as pd
import streamlit as st
from prefkit.annotate_app import forms, screen, session, ui
from prefkit.annotate_app.forms import form_for
from prefkit.annotate_app.forms.text import cell, named
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.quality import consensus
from prefkit.curation.quality.agreement import span_f1
from prefkit.schemas.common import PrefkitError

maintainer = ui.require("maintainer").username
project = ui.open_project()
st.title("Adjudication")

asked = st.query_params.get("kind"), st.query_params.get("task")  # a link (the Item page's), a bookmark
ui.from_url("adj_kind", "kind", ui.KIND_TITLES)
if "adj_kind" not in st.session_state:  # first the kind with disagreements still waiting for a decision
    waiting = (
        k for k in ui.KIND_TITLES if any(not d.adjudicated for d in consensus.disagreements(project.store, k))
    )
    st.session_state["adj_kind"] = next(waiting, "preference_match")
kind = st.segmented_control(
    "Task kind",
    list(ui.KIND_TITLES),
    format_func=lambda v: ui.KIND_TITLES.get(v, v),
    key="adj_kind",
    required=True,
)
assert kind is not None  # required=True: always a kind
ui.to_url("kind", kind)
items = consensus.disagreements(project.store, kind)
if not items:
    st.success("No disagreements for this task kind.")
    st.stop()

open_items = [d for d in items if not d.adjudicated]
st.caption(f"{len(open_items)} waiting · {len(items) - len(open_items)} decided")
asked_done = any(d.task_id == asked[1] and d.adjudicated for d in items)
show_done = st.toggle("Show decided items too", key="adj_done", value=asked_done)
pool = items if show_done else open_items
if not pool:
    st.success("Every disagreement has a decision.")
    st.stop()
tasks = {d.task_id: project.store.labels.task(d.task_id) for d in pool}
if asked[1] in tasks and st.session_state.get("adj_asked") != asked[1]:
    st.session_state["adj_task"], st.session_state["adj_asked"] = asked[1], asked[1]
entries = {d.task_id: d for d in pool}
task_id = st.selectbox(
    "Item",
    list(entries),
    format_func=lambda t: f"{named(tasks[t])} · {entries[t].decided_by}",
    key="adj_task",
)
ui.to_url("task", task_id)  # the address names the item: a reload or a shared link opens it
entry = entries[task_id]
task = tasks[task_id]
st.page_link(
    "views/item.py", label="Open the item page", icon=":material/article:", query_params={"task": task_id}
)

st.header("Labels side by side")
questions = getattr(get_kind(kind), "questions", {})  # a declared kind's: its span questions drawn as spans
marking = [q for q in questions.values() if q.type == "span"]
for q in marking:
    st.subheader(q.text())
    turns = sorted({s.get("turn", 0) for v in entry.labels.values() for s in v.get(q.name) or []})
    for who, values in entry.labels.items():
        f1 = [
            ui.safe("{}", other) + (" –" if score is None else f" {score:.2f}")
            for other, theirs in entry.labels.items()
            if other != who
            for score in [span_f1(get_kind(kind), task, q.name, values, theirs)]
        ]
        head = ui.safe("**{}**", who) + " · span F1 (over the words marked) with " + (", ".join(f1) or "–")
        with st.container(border=True):
            st.markdown(
                head + "\n\n" + (form_for(kind).marked_text(task, q, values.get(q.name), turns) or "no spans")
            )
words = bool(marking) and st.toggle("Show word units", key="adj_words", help="One row per word and label")
units = {who: get_kind(kind).item_units(values, task) for who, values in entry.labels.items()}
keys = sorted(
    {
        u
        for per in units.values()
        for u in per
        if words or not marking or questions[u[1].partition(":")[0]].type != "span"
    }
)
if keys:  # (a span question alone, its word units hidden: nothing more to list)
    table = pd.DataFrame(  # a dataframe shows its cells as plain text: no markdown, no links
        [
            {
                "unit": form_for(kind).unit_title(task, u, f),
                **{
                    who: cell(task, entry.labels[who], u, f) if (u, f) in per else "–"
                    for who, per in units.items()
                },
            }
            for u, f in keys
        ]
    )
    table["agree"] = [len({per.get(k) for per in units.values()}) == 1 for k in keys]
    ui.table(
        table.sort_values("agree", kind="stable"),
        column_config={
            "unit": st.column_config.TextColumn(width="large"),
            **{who: st.column_config.TextColumn(width="medium") for who in units},
        },
    )
comments = {ev.annotator: ev.comment for ev in project.store.labels.events(task_id=task_id) if ev.comment}
for who, note in comments.items():
    ui.text(f"{who}: {note}", caption=True)

if task.payload.get("turns"):
    with st.expander("Dialogue"), st.container(height=480):
        ui.transcript(workflow.display_turns(project, task))

st.header("Final decision")
decided = consensus.final_labels(project.store, kind).get(task_id)
start = decided.values if decided else None
if not start:  # a tie: what the annotators agreed on is filled in, no annotator's answer to the rest
    start = consensus.decided_part(kind, entry.labels, task)
    n_tied = len(entry.tied)
    st.caption(
        f"A tie on {n_tied} unit{'s' if n_tied != 1 else ''}: "
        + ("what the annotators agreed on is filled in; " if start else "")
        + "decide the tied ones yourself."
    )
prefix = f"adj:{task_id}"
session.recall(prefix)  # an item left for another and picked again: the decision as it was left
screen.take_problem(prefix)
screen.show_problem(prefix)
form_for(kind).edit(project, task, prefix, start, None, show_comment=False)
note = st.text_area("Note (why this decision)", key=f"{prefix}:note")
session.hold(prefix)


def record() -> None:
    values, missing = forms.read(task, prefix)  # what the form holds at the click
    if values is None:
        return screen.problem(prefix, missing)
    try:
        consensus.adjudicate(
            project.store, task_id, maintainer, values, st.session_state.get(f"{prefix}:note", "")
        )
    except PrefkitError as exc:
        return screen.problem(prefix, f"Not recorded: {exc}")
    screen.forget_form(prefix)
    ui.flash("Decision recorded")


st.button("Record decision", type="primary", key=f"{prefix}:save", on_click=record, shortcut="Ctrl+Enter")
