"""Preference expressed: the dialogue as chat bubbles, the preference and its checklist items.

Per item: expressed / not expressed, and the evidence user turn(s), picked by clicking the turns.
Keys: E / N decide the active item (and move to the next), Ctrl+Enter submits.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from annotate_app import ui
from annotate_app.safe_text import md_escape
from curation import workflow
from schemas.common import PrefkitError

CHOICES = ("Expressed", "Not expressed")


def initial_state(prefix: str, n_items: int, initial: dict[str, Any] | None) -> None:
    """Seed widget state once per item (from an earlier label when editing)."""
    if st.session_state.get(f"{prefix}:seeded"):
        return
    st.session_state[f"{prefix}:seeded"] = True
    st.session_state[f"{prefix}:active"] = 0
    for it in (initial or {}).get("items", []):
        st.session_state[f"{prefix}:exp:{it['item']}"] = CHOICES[0] if it["expressed"] else CHOICES[1]
        st.session_state[f"{prefix}:ev:{it['item']}"] = list(it.get("evidence", []))


def _decide(prefix: str, n_items: int, choice: str) -> None:
    active = st.session_state.get(f"{prefix}:active", 0)
    st.session_state[f"{prefix}:exp:{active}"] = choice
    st.session_state[f"{prefix}:active"] = min(active + 1, n_items - 1)


def _toggle_evidence(prefix: str, turn: int) -> None:
    active = st.session_state.get(f"{prefix}:active", 0)
    key = f"{prefix}:ev:{active}"
    chosen = list(st.session_state.get(key, []))
    chosen = [t for t in chosen if t != turn] if turn in chosen else sorted([*chosen, turn])
    st.session_state[key] = chosen
    if chosen and not st.session_state.get(f"{prefix}:exp:{active}"):
        st.session_state[f"{prefix}:exp:{active}"] = CHOICES[0]


def values(prefix: str, n_items: int) -> tuple[dict[str, Any] | None, int]:
    """The label from widget state, or None with the number of undecided items."""
    items, missing = [], 0
    for i in range(n_items):
        choice = st.session_state.get(f"{prefix}:exp:{i}")
        if choice is None:
            missing += 1
            continue
        evidence = sorted(st.session_state.get(f"{prefix}:ev:{i}", []))
        items.append({"item": i, "expressed": choice == CHOICES[0], "evidence": evidence})
    return ({"items": items} if not missing else None), missing


def dialogue(proj, user: str, task, prefix: str, editable: bool) -> None:
    active = st.session_state.get(f"{prefix}:active", 0)
    for turn in workflow.display_turns(proj, task):
        box = ui.bubble(turn, " · rewritten" if turn["revised"] else "")
        if turn["role"] != "user" or not editable:
            continue
        picked = turn["index"] in st.session_state.get(f"{prefix}:ev:{active}", [])
        with box:
            c1, c2 = st.columns([3, 2])
            c1.button(
                f"{'✓ evidence' if picked else 'Use as evidence'} for item {active + 1}",
                key=f"{prefix}:pick:{turn['index']}",
                type="primary" if picked else "tertiary",
                on_click=_toggle_evidence,
                args=(prefix, turn["index"]),
            )
            with c2.popover("Rewrite turn", icon=":material/edit:"):
                _rewrite(proj, user, task, turn, prefix)


def _rewrite(proj, user: str, task, turn: dict[str, Any], prefix: str) -> None:
    new = st.text_area("New text", value=turn["content"], key=f"{prefix}:rw:{turn['index']}")
    reason = st.text_input("Why (optional)", key=f"{prefix}:rwr:{turn['index']}")
    if st.button("Save rewrite", key=f"{prefix}:rws:{turn['index']}"):
        try:
            workflow.rewrite_turn(proj, user, task, turn["index"], new, reason)
        except PrefkitError as exc:
            st.error(str(exc))
            return
        ui.flash("Turn rewritten; the session will be re-verified")
        st.rerun()


def checklist(task, prefix: str, shortcuts: bool = True, comment: bool = True) -> None:
    p = task.payload
    n = len(p["checklist"])
    st.markdown("**Preference**")
    with st.container(border=True):
        ui.text(p["preference"])
        ui.text(f"context: {p.get('context_factor', '')}", caption=True)
    user_turns = [t["index"] for t in p["turns"] if t["role"] == "user"]
    st.radio(
        "Active item (E / N keys, evidence clicks)",
        list(range(n)),
        format_func=lambda i: f"Item {i + 1}",
        horizontal=True,
        key=f"{prefix}:active",
    )
    for i, question in enumerate(p["checklist"]):
        with st.container(border=True):
            st.markdown(f"**{i + 1}.** {md_escape(question)}")
            st.segmented_control("Decision", CHOICES, key=f"{prefix}:exp:{i}", label_visibility="collapsed")
            st.pills("Evidence turns", user_turns, selection_mode="multi", key=f"{prefix}:ev:{i}",
                     format_func=lambda t: f"turn {t}")  # fmt: skip
    c1, c2 = st.columns(2)
    c1.button(
        "Expressed",
        shortcut="E" if shortcuts else None,
        key=f"{prefix}:kE",
        on_click=_decide,
        args=(prefix, n, CHOICES[0]),
    )
    c2.button(
        "Not expressed",
        shortcut="N" if shortcuts else None,
        key=f"{prefix}:kN",
        on_click=_decide,
        args=(prefix, n, CHOICES[1]),
    )
    if comment:
        st.text_area("Comment (optional)", key=f"{prefix}:comment", height=68)


def render(proj, user: str, item: workflow.ShownItem) -> None:
    prefix, n = item.event_id, len(item.task.payload["checklist"])
    initial_state(prefix, n, None)
    left, right = st.columns([3, 2], gap="large")
    with right:
        checklist(item.task, prefix)
        vals, missing = values(prefix, n)
        ui.submit_button(
            proj, user, item, prefix, vals, f"Decide every checklist item first ({missing} left)."
        )
    with left, st.container(height=640):
        dialogue(proj, user, item.task, prefix, editable=True)


def edit(
    proj, task, prefix: str, initial: dict[str, Any], comment: str | None, show_comment: bool = True
) -> tuple[dict | None, str | None]:
    """The form prefilled with an earlier label: ``(new values or None when incomplete, comment)``."""
    n = len(task.payload["checklist"])
    if not st.session_state.get(f"{prefix}:seeded") and comment:
        st.session_state[f"{prefix}:comment"] = comment
    initial_state(prefix, n, initial)
    checklist(task, prefix, shortcuts=False, comment=show_comment)
    return values(prefix, n)[0], st.session_state.get(f"{prefix}:comment") or None
