"""Work (maintainers only): per task kind and batch, the tasks, their overlap (fixed or adaptive),
progress and stale items; and what ``prefkit tasks`` and ``prefkit batches`` do: create tasks for a
kind and batch with an overlap, hand stale items back to the pool, mark and unmark gold items, open
and close batches.

Each change is one call into :mod:`prefkit.curation.annotation.work` (what the commands call), an
audited event, and refused in the library's words.
"""

import pandas as pd
import streamlit as st
from prefkit.annotate_app import console, ui
from prefkit.curation.annotation import work, workflow

me = ui.require("maintainer").username
project = ui.open_project()
store = project.store
st.title("Work")


def _title(kind: str) -> str:
    return ui.KIND_TITLES.get(kind, kind)


rows = work.rows(project)
if not rows:
    st.info("No tasks yet: create some below (or `prefkit tasks create`).")
else:
    ui.table(
        pd.DataFrame(
            [
                {
                    "task kind": _title(r.kind),
                    "batch": r.batch,
                    "status": r.status,
                    "tasks": r.tasks,
                    "gold": r.gold,
                    "overlap": r.overlap,
                    "assigned": r.assigned,
                    "complete": r.complete,
                    "progress": f"{r.complete / r.tasks:.0%}" if r.tasks else "–",
                    "stale items": r.stale,
                }
                for r in rows
            ]
        )
    )
    hours = workflow.stale_after_hours(project)
    st.caption(
        "Overlap: annotators per item (min..max: adaptive, with the range items are at now). "
        + work.COMPLETE
        + " Stale: items held by queues idle for "
        + (
            f"{hours:g} hours ([annotation] stale_after_hours)."
            if hours > 0
            else "– never ([annotation] stale_after_hours = 0)."
        )
    )


def _create_form() -> None:
    with st.form("work_create", border=False):
        c1, c2, c3, c4 = st.columns(4)
        kind = c1.selectbox("Task kind", list(ui.KIND_TITLES), format_func=_title, key="work_create_kind")
        batch = c2.text_input("Batch", value="default", key="work_create_batch")
        overlap = c3.text_input(
            "Overlap (3, or 2..4 adaptive)",
            key="work_create_overlap",
            placeholder=str(
                project.config.annotation.overlap
                if isinstance(project.config.annotation.overlap, int)
                else "config"
            ),
        )
        gold_rate = c4.number_input(
            "Gold rate (0 to under 1)",
            value=None,
            min_value=0.0,
            max_value=0.99,
            step=0.05,
            key="work_create_gold",
        )
        st.caption(
            "Builds tasks from what the project holds; items that already have a task stay as they are."
        )
        if st.form_submit_button("Create tasks", type="primary"):
            console.act(
                lambda: work.create(
                    project, me, kind, overlap=overlap or None, batch=batch, gold_rate=gold_rate
                ),
                lambda n: f"Created {n} {_title(kind)} task(s) in batch {batch.strip()}",
            )


def _stale_form() -> None:
    idle_for = st.number_input(
        "Idle for at least (hours)",
        min_value=0.0,
        step=1.0,
        key="work_stale_hours",
        value=float(workflow.stale_after_hours(project)),
    )
    idle = work.stale_queues(project, hours=idle_for)
    if not idle:
        st.caption("No queue has been idle that long.")
    else:
        ui.table(
            pd.DataFrame(
                [
                    {
                        "annotator": q.annotator,
                        "task kind": _title(q.kind),
                        "open items": q.open_items,
                        "last shown": console.when(q.last_seen),
                        "batches": ", ".join(b for b, _ in q.by_batch),
                    }
                    for q in idle
                ]
            )
        )
    c1, c2 = st.columns(2)
    only_who = c1.selectbox(
        "Only this annotator",
        sorted({q.annotator for q in idle}),
        index=None,
        placeholder="every idle queue",
        key="work_stale_who",
    )
    st.caption("Labels already given stay; the items can go to other annotators.")
    if c2.button("Hand back", key="work_stale_release", disabled=not idle):
        console.act(
            lambda: work.hand_back(project, me, hours=idle_for, annotator=only_who),
            lambda released: f"Handed back {len(released)} item(s)",
        )


def _gold_form() -> None:
    c1, c2 = st.columns([1, 3])
    gold_kind = c1.selectbox("Task kind", list(ui.KIND_TITLES), format_func=_title, key="work_gold_kind")
    tasks = {t.task_id: t for t in store.labels.tasks(kind=gold_kind)}
    if not tasks:
        st.caption("No tasks of this kind.")
        return
    task_id = c2.selectbox(
        "Item (reference · batch · text)",
        list(tasks),
        key="work_gold_task",
        format_func=lambda t: console.item_line(tasks[t]),
    )
    with st.container(border=True):
        console.gold_form(project, me, tasks[task_id])
    st.page_link(
        "views/item.py", label="Open this item", icon=":material/article:", query_params={"task": task_id}
    )


def _batches_form() -> None:
    known_batches = store.labels.batches()
    if not known_batches:
        st.caption("No batches yet.")
    else:
        c1, c2, c3 = st.columns([2, 1, 1], vertical_alignment="bottom")
        chosen = c1.selectbox("Batch", [b.batch_id for b in known_batches], key="work_batch")
        if c2.button("Open batch", key="work_batch_open"):
            console.act(
                lambda: work.set_batch_status(project, me, chosen, "open"),
                lambda _: f"Batch {chosen} is open",
            )
        if c3.button("Close batch", key="work_batch_close"):
            console.act(
                lambda: work.set_batch_status(project, me, chosen, "closed"),
                lambda _: f"Batch {chosen} is closed",
            )
        st.caption("A closed batch's tasks leave every queue; labels already made stay.")


FORMS = {
    "Create tasks": _create_form,
    "Stale items": _stale_form,
    "Gold items": _gold_form,
    "Batches": _batches_form,
}
console.forms(FORMS, "work_action")

console.audit_table(store, ("tasks", "gold", "batch"))
