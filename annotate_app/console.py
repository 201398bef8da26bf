"""Shared pieces of the maintainer's console pages (People, Work, Release): running one library call
as a maintainer's action, and the page's share of the audit log.

Render only. Every action is one call into the library function its ``prefkit`` command makes
(:mod:`prefkit.curation.annotation.people`, :mod:`~prefkit.curation.annotation.work`,
:mod:`prefkit.exports.release`); a refusal is the library's own sentence, shown on one line, and
nothing is written; a success is flashed at the top of the next run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st
from prefkit.annotate_app import ui
from prefkit.annotate_app.forms.text import excerpt, summary
from prefkit.curation.annotation import work
from prefkit.curation.quality import consensus
from prefkit.curation.store import ProjectStore
from prefkit.schemas.common import PrefkitError


def act(action: Callable[[], Any], done: Callable[[Any], str], refused: str = "Not done") -> Any:
    """Run a maintainer's ``action``: on success flash ``done(result)`` and rerun (the tables show
    the change); a refusal (:class:`PrefkitError`) is one line in words here, and the page goes on."""
    try:
        result = action()
    except PrefkitError as exc:
        st.error(ui.safe(refused + ": {}", str(exc).splitlines()[0]))
        return None
    ui.flash(done(result))
    ui.rerun()


def forms(choices: dict[str, Callable[[], None]], key: str) -> None:
    """The page's change forms as one keyed choice (not tabs: it stays where the maintainer left it
    from run to run, and in the URL's ``change``); draws the chosen one (the first by default)."""
    ui.from_url(key, "change", choices)
    st.session_state.setdefault(key, next(iter(choices)))
    action = st.segmented_control("Change", list(choices), required=True, key=key)
    ui.to_url("change", action)
    choices[action or next(iter(choices))]()


def when(iso: str | None) -> str:
    """A stored UTC time as the tables show it (to the minute), or a dash."""
    return iso[:16].replace("T", " ") if iso else "–"


def audit_table(store: ProjectStore, families: tuple[str, ...], limit: int = 10) -> None:
    """The newest audited actions of ``families`` (``user``, ``tasks``, ...), as ``prefkit audit list``
    shows them, under a heading."""
    rows = sorted(
        (e for f in families for e in store.audit.events(action=f, limit=limit)), key=lambda e: -e.seq
    )[:limit]
    st.subheader("Recent changes")
    if not rows:
        st.caption("Nothing changed here yet (`prefkit audit list` shows every change).")
        return
    ui.table(
        pd.DataFrame(
            [
                {
                    "when": when(e.created_at),
                    "who": e.actor,
                    "what": e.action,
                    "on": e.target,
                    "details": ", ".join(f"{k}={v}" for k, v in e.detail.items() if v is not None),
                }
                for e in rows
            ]
        ),
        column_config={"details": st.column_config.TextColumn(width="large")},
    )
    st.caption("Every change, from these pages and from commands: `prefkit audit list`.")


def item_line(task) -> str:
    """An item as a picker names it: its reference, batch and text, so items whose text repeats
    (one preference across sessions) are told apart; a gold item starts with a star."""
    return (
        ("★ gold · " if task.is_gold else "")
        + f"{task.item_ref} · batch {task.batch} · "
        + excerpt(summary(task), 80)
    )


def gold_form(project, me: str, task) -> None:
    """Mark ``task`` as a gold item with its known answer, or unmark it: under the item it is about
    (its id, batch and text shown above the answer), the answer starting as the known one or the
    decided label (``work.mark_gold`` checks it against this task, as a label of its kind)."""
    store = project.store
    known = store.labels.gold_answers(task.kind).get(task.task_id)
    decided = consensus.final_labels(store, task.kind).get(task.task_id)
    start = known[1] if known else (decided.values if decided and decided.values else None)
    st.markdown(
        ui.safe(
            "**Gold answer for** task {} · item {} · batch {}  \n:small[{}]",
            task.task_id,
            task.item_ref,
            task.batch,
            excerpt(summary(task), 200),
        )
    )
    if task.is_gold:
        st.caption("A gold item; its known answer is below.")
    elif start:
        st.caption("Not a gold item. The decided label is filled in below.")
    else:
        st.caption(
            "Not a gold item, and no label decides it yet: type the answer (JSON, as a label of its kind)."
        )
    key = f"gold_answer:{task.task_id}"  # one per item: switching items never carries an answer over
    st.session_state.setdefault(key, json.dumps(start, ensure_ascii=False) if start else "")
    answer = st.text_area("Known answer (JSON, in the task kind's shape)", key=key)
    b1, b2 = st.columns(2)
    if b1.button("Mark as gold", key=f"gold_mark:{task.task_id}", type="primary"):
        act(
            lambda: work.mark_gold(project, me, task.task_id, work.parse_answer(answer)),
            lambda _: f"Marked {task.item_ref} as gold",
            refused="Not marked",
        )
    if b2.button("Unmark gold", key=f"gold_unmark:{task.task_id}", disabled=not task.is_gold):
        act(
            lambda: work.unmark_gold(project, me, task.task_id),
            lambda _: f"{task.item_ref} is no longer a gold item",
        )
