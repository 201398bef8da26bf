"""Selecting words as evidence (*Select words*): the dialogue as plain text in which the annotator
selects the words that show a preference (or a memory); each selection becomes a span (turn,
code-point offsets, the words) and a click on a highlighted span removes it. ``docs/annotation.md``
(*Evidence as words*) says how spans are kept and checked.

A small component (``st.components.v2``, no iframe) whose script draws every turn with ``textContent``
and ``<mark>`` elements it makes itself: dialogue text never reaches the page as HTML. From the
keyboard a turn takes the focus (Tab), the arrows move between its words, Shift+arrow takes more, and
Enter marks them (or unmarks marked ones). A selection across two turns, or in a turn that may not be
evidence (an assistant turn for a preference), is ignored with a note. Drawn only while the switch is
on; the words selected are part of the item's draft (:mod:`prefkit.annotate_app.session`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st
from prefkit.annotate_app import asset

# Colours from the theme's text colour (an opacity, not a fixed grey): 4.5:1 in the light and the dark
# theme alike; a highlight sets its own dark text on its yellow.
_CSS = asset("spans.css")

_JS = asset("spans.js")

_picker = st.components.v2.component("prefkit_span_picker", css=_CSS, js=_JS, isolate_styles=False)


def picker(
    key: str,
    turns: list[dict[str, Any]],
    spans: list[dict[str, Any]],
    hint: str,
    on_pick: Callable[[dict[str, Any]], None],
    on_remove: Callable[[dict[str, Any]], None],
    selectable: Callable[[dict[str, Any]], bool] = lambda t: True,
) -> None:
    """The dialogue with ``spans`` highlighted; a selection calls ``on_pick(span)``, a click on a
    highlight ``on_remove(span)`` (both as callbacks, before the run that shows the result)."""

    def picked() -> None:
        value = (st.session_state.get(key) or {}).get("picked")
        if value:
            on_pick(value)

    def removed() -> None:
        value = (st.session_state.get(key) or {}).get("removed")
        if value:
            on_remove(value)

    data = {
        "hint": hint,
        "one_turn": "Select words within one turn.",
        "not_here": "Words in this turn cannot be evidence here.",
        "spans": spans,
        "turns": [
            {
                "index": t["index"],
                "content": t["content"],
                "head": t.get("head")
                or f"turn {t['index']} · {t['role']}" + (" · rewritten" if t.get("revised") else ""),
                "selectable": bool(selectable(t)) and not t.get("revised"),
                "session": t.get("session") or "",
            }
            for t in turns
        ],
    }
    _picker(key=key, data=data, on_picked_change=picked, on_removed_change=removed)


_SWITCH = "spans_on"
_KEPT = "_spans_on_kept"  # the switch as last drawn, kept while other pages are open
_IN_URL = "words"


def _remember() -> None:
    """The switch as set goes into the address: a reload (a new browser session) opens it so.
    Nothing is sent while the address already says it."""
    if st.session_state.get(_SWITCH):
        st.query_params[_IN_URL] = "on"
    else:
        st.query_params.pop(_IN_URL, None)


def toggle() -> bool:
    """The annotator's *Select words* switch: it stays as set from item to item and across a reload."""
    if _SWITCH not in st.session_state:  # a new browser session (the address says), or back from
        # another page: Streamlit drops a widget's state on a page without it, and the address's too
        st.session_state[_SWITCH] = st.session_state.get(_KEPT, st.query_params.get(_IN_URL) == "on")
    on = st.toggle(
        "Select words",
        key=_SWITCH,
        help="Select the words that show it in the dialogue, with the mouse (drag, or double-click a word)",
    )
    st.session_state[_KEPT] = on
    if on != (st.query_params.get(_IN_URL) == "on"):  # changed, or the address lost it (another page)
        _remember()
    return on
