"""What this browser tab has on screen, and what the annotator must read at the top of the item.

A tab remembers, per task kind, the item it showed last and the items it finished itself. When a
run finds another item open (the one on screen was finished in another tab or window, or handed back
to the pool), the annotator is told so above the new item, in words: nothing they did on the old one
in this tab was recorded (the store refuses a submit from a showing that is not the open one,
:class:`prefkit.curation.store.submits.StaleSubmit`), and the item now on screen is a different one.

Problems with a submit (what is missing, a contradiction, a row to fix) are drawn at the top of the
item too, where the eye is, not under a button below the fold.

Render only; every value shown goes through :mod:`prefkit.annotate_app.safe_text`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import streamlit as st
from prefkit.annotate_app import asset
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


#: ``{form prefix: its state}`` of the forms drawn last (``session.hold``), newest last.
HELD = "_form_held"
#: ``(forms drawn by the last run, forms drawn by this one)``: their prefixes (``ui.run_mark``).
DRAWN = "_forms_drawn"


def forget_form(prefix: str) -> None:
    """The form is done (submitted, skipped, saved): its state goes, and nothing of it is put back."""
    st.session_state.get(HELD, {}).pop(prefix, None)
    for key in [k for k in st.session_state if str(k).startswith(f"{prefix}:")]:
        del st.session_state[key]


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


def on_screen(item: ShownItem) -> bool:
    """Whether ``item`` (the showing a button's callback was drawn for) is the one this tab shows for
    its kind (True before the tab has shown any: nothing to compare with)."""
    now = st.session_state.get(_ON_SCREEN, {}).get(item.task.kind)
    return now is None or now[0] == item.event_id


def show_notice() -> None:
    """The notice left for this run (stale tab, a submit refused), drawn at the top of the item."""
    message = st.session_state.pop(_NOTICE, None)
    if message:
        st.warning(message, icon=":material/sync_problem:")


def refused(exc: Exception | str) -> str:
    """A submit the store refused because the item on screen was not the open one, in words."""
    return md_escape(f"Not recorded: {exc}.") + " Below is your current item; read it before you answer."


# -- problems: at the top of the item, and next to the row to fix --------------------------------------
@dataclass(frozen=True)
class Problem:
    """Why a submit was not saved: ``text`` (plain words: what is wrong, what to do) for the top of
    the item, and ``rows`` (a form's row key → what is wrong there) for next to each offending row.
    Row keys: ``item<i>`` (a checklist item, from 0), ``cand:<key>`` (a candidate memory), ``added<i>``
    (the i-th missing memory), as :meth:`TaskKind.contradictions` names its units."""

    text: str
    rows: dict[str, str] = field(default_factory=dict)


_PROBLEM_NOW = "_problem_now"
_PROBLEM_SEQ = "_problem_seq"


def problem(prefix: str, found: Problem | str) -> None:
    """Leave ``found`` for the next run of the item ``prefix`` (set by a submit's callback)."""
    st.session_state[f"{prefix}:problem"] = found if isinstance(found, Problem) else Problem(found)


def take_problem(prefix: str) -> None:
    """At the start of the item's run: the problem left for it becomes this run's (drawn once)."""
    st.session_state[_PROBLEM_NOW] = (prefix, st.session_state.pop(f"{prefix}:problem", None))


def _now(prefix: str) -> Problem | None:
    at, found = st.session_state.get(_PROBLEM_NOW, (None, None))
    return found if at == prefix else None


def _mark(where: str) -> str:
    """A new key for a drawn problem: the page script scrolls each new one into view once."""
    n = st.session_state.get(_PROBLEM_SEQ, 0) + 1
    st.session_state[_PROBLEM_SEQ] = n
    return f"problem-{where}-{n}"


def show_problem(prefix: str) -> None:
    """This run's problem of item ``prefix``, at the top of the item (nothing drawn when there is none)."""
    found = _now(prefix)
    if found is not None:
        with st.container(key=_mark("top")):
            st.warning(md_escape(found.text), icon=":material/error:")


def row_problem(prefix: str, row: str) -> None:
    """What is wrong with ``row`` of item ``prefix`` in this run's problem, drawn where it is called."""
    found = _now(prefix)
    if found is not None and row in found.rows:
        with st.container(key=_mark("row")):
            st.warning(md_escape(found.rows[row]), icon=":material/error:")


# Scrolls each newly drawn problem into view once: a row's message within the box that scrolls it
# (the candidates pane), then the top message in the page. It looks when the app is idle with a
# problem on the page it has not seen (and a few times in the second after).
SCROLL = "<script>" + asset("screen.js") + "</script>"
