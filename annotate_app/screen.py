"""What this browser tab has on screen, and what the annotator must read at the top of the item.

A tab remembers, per task kind, the item it showed last and the items it finished itself. When a
run finds another item open (the one on screen was finished in another tab or window, or handed back
to the pool), the annotator is told so above the new item, in words: nothing they did on the old one
in this tab was recorded (the store refuses a submit from a showing that is not the open one,
:class:`prefkit.curation.store.queues.StaleSubmit`), and the item now on screen is a different one.

Problems with a submit (what is missing, a contradiction, a row to fix) are drawn at the top of the
item too, where the eye is, not under a button below the fold.

Render only; every value shown goes through :mod:`prefkit.annotate_app.safe_text`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st
from prefkit.annotate_app.safe_text import md_escape, safe

if TYPE_CHECKING:
    from prefkit.curation.annotation.workflow import ShownItem

_ON_SCREEN = "_on_screen"  # {kind: (event id, item ref)} of the item this tab showed last
_FINISHED = "_finished_here"  # event ids this tab recorded (a label, skip or flag), newest last
_NOTICE = "_notice"
_KEEP = 50

STALE = (
    "The item you had on screen ({}) is no longer open for you here: it was finished in another tab "
    "or window, or handed back to the pool. Nothing you did on it in this tab was recorded. Below is "
    "your current item; read it before you answer."
)


def finished_here(event_id: str) -> None:
    """This tab recorded ``event_id``: the next item appearing is its doing, not another tab's."""
    done = st.session_state.setdefault(_FINISHED, [])
    done.append(event_id)
    del done[:-_KEEP]


def was_finished_here(event_id: str) -> bool:
    return event_id in st.session_state.get(_FINISHED, [])


def notice(message: str) -> None:
    """A notice for the top of the next item (markdown written in the code, values escaped)."""
    st.session_state[_NOTICE] = message


def track(kind: str, item: ShownItem | None) -> None:
    """Compare the item of this run with the one this tab showed last for ``kind``; when another
    took its place without this tab finishing it, leave the stale-tab notice for the top of the item."""
    shown = st.session_state.setdefault(_ON_SCREEN, {})
    before = shown.get(kind)
    now = None if item is None else (item.event_id, item.task.item_ref)
    if before is not None and (now is None or now[0] != before[0]) and not was_finished_here(before[0]):
        st.session_state.setdefault(_NOTICE, safe(STALE, before[1]))
    shown[kind] = now


def show_notice() -> None:
    """The notice left for this run (stale tab, a submit refused), drawn at the top of the item."""
    message = st.session_state.pop(_NOTICE, None)
    if message:
        st.warning(message, icon=":material/sync_problem:")


def refused(exc: Exception | str) -> str:
    """A submit the store refused because the item on screen was not the open one, in words."""
    return md_escape(f"Not recorded: {exc}.") + " Below is your current item; read it before you answer."
