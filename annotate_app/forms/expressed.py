"""Preference expressed: the dialogue as chat bubbles, the preference and its checklist items.

Per item: expressed / not expressed, and the evidence user turn(s), picked by clicking the turns.
Keys: E / N decide the active item (and move to the next), Ctrl+Enter submits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st
from prefkit.annotate_app import forms, screen, spans, ui
from prefkit.annotate_app.forms import suggestion
from prefkit.annotate_app.forms.text import excerpt
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import workflow
from prefkit.schemas.common import PrefkitError

if TYPE_CHECKING:
    from prefkit.curation.project import Project

CHOICES = ("Expressed", "Not expressed")
QUESTION = "Did the user express this preference in the dialogue (in words or by how they react)?"

#: The keys of this form, for the help overlay (``?``).
SHORTCUTS = (
    ("E", "Expressed: decide the active checklist item, then go to the next undecided one"),
    ("N", "Not expressed: the same, the other way"),
    ("Ctrl+Enter", "Submit the item (every checklist item decided)"),
    (
        "Tab, then Space",
        "Evidence: the buttons under each user turn, one per checklist item (Evidence for item 2)",
    ),
    ("Tab, then ← / →", "Choose the active checklist item (the one E and N decide)"),
)


def initial_state(prefix: str, n_items: int, initial: dict[str, Any] | None) -> None:
    """Seed widget state once per item (from an earlier label when editing); undecided is ``None``,
    on every run: a radio without state would show its first choice, a decision nobody made."""
    for i in range(n_items):
        st.session_state.setdefault(f"{prefix}:exp:{i}", None)
    if st.session_state.get(f"{prefix}:seeded"):
        return
    st.session_state[f"{prefix}:seeded"] = True
    st.session_state[f"{prefix}:active"] = 0
    for it in (initial or {}).get("items", []):
        st.session_state[f"{prefix}:exp:{it['item']}"] = CHOICES[0] if it["expressed"] else CHOICES[1]
        st.session_state[f"{prefix}:ev:{it['item']}"] = list(it.get("evidence", []))
        st.session_state[f"{prefix}:sp:{it['item']}"] = list(it.get("spans") or [])


def _decide(prefix: str, n_items: int, choice: str) -> None:
    """E / N: decide the active item and make the next undecided one active."""
    active = st.session_state.get(f"{prefix}:active", 0)
    st.session_state[f"{prefix}:exp:{active}"] = choice
    later = [i for i in range(active + 1, n_items) if st.session_state.get(f"{prefix}:exp:{i}") is None]
    st.session_state[f"{prefix}:active"] = later[0] if later else min(active + 1, n_items - 1)


def _answered(prefix: str, n_items: int, item: int) -> None:
    """An answer clicked with the mouse: the next undecided item becomes the active one, so the E / N
    key that follows decides that item and never changes the answer just clicked."""
    if st.session_state.get(f"{prefix}:active", 0) != item:
        return  # another item is active: the keys go on deciding that one
    later = [i for i in range(item + 1, n_items) if st.session_state.get(f"{prefix}:exp:{i}") is None]
    earlier = [i for i in range(item) if st.session_state.get(f"{prefix}:exp:{i}") is None]
    st.session_state[f"{prefix}:active"] = (later or earlier or [item])[0]


def _toggle_evidence(prefix: str, turn: int, item: int) -> None:
    """Add or remove a turn from ``item``'s evidence (the item named on the button clicked, never
    whichever is active by then); the decision stays the annotator's own."""
    key = f"{prefix}:ev:{item}"
    chosen = list(st.session_state.get(key, []))
    st.session_state[key] = [t for t in chosen if t != turn] if turn in chosen else sorted([*chosen, turn])


def undecided(prefix: str, n_items: int) -> list[int]:
    return [i for i in range(n_items) if st.session_state.get(f"{prefix}:exp:{i}") is None]


def missing_message(questions: list[str], left: list[int]) -> str:
    """Names the undecided items: ``Decide item 2 first: “Does the reply …?”``."""
    named = "; ".join(f"item {i + 1} “{questions[i]}”" for i in left)
    return f"Decide {named} first: Expressed or Not expressed."


def values(prefix: str, n_items: int) -> tuple[dict[str, Any] | None, int]:
    """The label from widget state, or None with the number of undecided items."""
    left = undecided(prefix, n_items)
    if left:
        return None, len(left)
    items = []
    for i in range(n_items):
        it: dict[str, Any] = {
            "item": i,
            "expressed": st.session_state[f"{prefix}:exp:{i}"] == CHOICES[0],
            "evidence": sorted(st.session_state.get(f"{prefix}:ev:{i}", [])),
        }
        if words := _spans(prefix, i):
            it["spans"] = words
        items.append(it)
    return {"items": items}, 0


def _spans(prefix: str, i: int) -> list[dict[str, Any]]:
    """The item's word-level evidence, in its evidence turns only (a turn taken off the evidence
    takes its words with it)."""
    turns = set(st.session_state.get(f"{prefix}:ev:{i}", []))
    return [s for s in st.session_state.get(f"{prefix}:sp:{i}", []) if s["turn"] in turns]


def _pick(prefix: str, span: dict[str, Any]) -> None:
    """Selected words become evidence of the active item (their turn too)."""
    active = st.session_state.get(f"{prefix}:active", 0)
    have = [s for s in st.session_state.get(f"{prefix}:sp:{active}", []) if s != span]
    st.session_state[f"{prefix}:sp:{active}"] = sorted([*have, span], key=lambda s: (s["turn"], s["start"]))
    evidence = list(st.session_state.get(f"{prefix}:ev:{active}", []))
    if span["turn"] not in evidence:
        st.session_state[f"{prefix}:ev:{active}"] = sorted([*evidence, span["turn"]])


def _unpick(prefix: str, span: dict[str, Any]) -> None:
    active = st.session_state.get(f"{prefix}:active", 0)
    where = (span["turn"], span["start"], span["end"])
    st.session_state[f"{prefix}:sp:{active}"] = [
        s
        for s in st.session_state.get(f"{prefix}:sp:{active}", [])
        if (s["turn"], s["start"], s["end"]) != where
    ]


def dialogue(project: Project, user: str, task, prefix: str, editable: bool) -> None:
    """The turns; under each user turn one button per checklist item, marked when the turn is that
    item's evidence: a click always goes to the item its button names (deciding an item with a key
    moves the active item, never a button's target under the pointer)."""
    n = len(task.payload["checklist"])
    for turn in workflow.display_turns(project, task):
        box = ui.bubble(turn, " · rewritten" if turn["revised"] else "")
        if turn["role"] != "user" or not editable:
            continue
        with box:  # one row, not columns: fewer elements per user turn
            row = st.container(horizontal=True)
            for i in range(n):
                picked = turn["index"] in st.session_state.get(f"{prefix}:ev:{i}", [])
                row.button(
                    f"{'✓ ' if picked else ''}Evidence for item {i + 1}",
                    key=f"{prefix}:pick:{turn['index']}:{i}",
                    type="primary" if picked else "tertiary",
                    on_click=_toggle_evidence,
                    args=(prefix, turn["index"], i),
                )
            with row.popover("Rewrite turn", icon=":material/edit:"):
                _rewrite(project, user, task, turn, prefix)


def _rewrite(project: Project, user: str, task, turn: dict[str, Any], prefix: str) -> None:
    new = st.text_area("New text", value=turn["content"], key=f"{prefix}:rw:{turn['index']}")
    reason = st.text_input("Why (optional)", key=f"{prefix}:rwr:{turn['index']}")
    if st.button("Save rewrite", key=f"{prefix}:rws:{turn['index']}"):
        try:
            workflow.rewrite_turn(project, user, task, turn["index"], new, reason)
        except PrefkitError as exc:
            st.error(str(exc))
            return
        ui.flash("Turn rewritten; the session will be re-verified")
        ui.rerun()


def _status(prefix: str, i: int) -> str:
    choice = st.session_state.get(f"{prefix}:exp:{i}")
    evidence = st.session_state.get(f"{prefix}:ev:{i}", [])
    turns = ", ".join(f"turn {t}" for t in evidence) if evidence else "none picked"
    decided = (
        ":orange-badge[Undecided]"
        if choice is None
        else (":green-badge[Expressed]" if choice == CHOICES[0] else ":gray-badge[Not expressed]")
    )
    words = "".join(ui.safe(" · “{}”", excerpt(s["text"], 50)) for s in _spans(prefix, i))
    return f"{decided} · evidence: {turns}{words}"


def checklist(task, prefix: str, comment: bool = True) -> None:
    p = task.payload
    n = len(p["checklist"])
    st.markdown("**The preference** (every checklist item below was written from it)")
    with st.container(border=True):  # the text and its context in one element
        st.markdown(
            md_escape(p["preference"])
            + ui.safe("\n\n:small[:gray[context: {}]]", p.get("context_factor", ""))
        )
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
            st.markdown(  # heading, state and the checklist item in one element
                f"**Item {i + 1}** · "
                + _status(prefix, i)
                + "\n\n:small[:gray[Checklist item (what a reply that honours the preference does):]]\n\n"
                + md_escape(question)
            )
            screen.row_problem(prefix, f"item{i}")  # why a submit stopped, at this item
            st.radio(
                QUESTION,
                CHOICES,
                key=f"{prefix}:exp:{i}",
                horizontal=True,
                on_change=_answered,
                args=(prefix, n, i),
            )
            st.pills(
                "Evidence turns",
                user_turns,
                selection_mode="multi",
                key=f"{prefix}:ev:{i}",
                format_func=lambda t: f"turn {t}",
            )
    if comment:
        st.text_area("Comment (optional)", key=f"{prefix}:comment", height=68)


def decide_buttons(prefix: str, n: int, row) -> None:
    """``E`` / ``N``: decide the active checklist item (named on the button) and move to the next
    undecided one; in the item's action bar, so the decision is in the window however long the item."""
    active = st.session_state.get(f"{prefix}:active", 0) + 1
    for choice, key in ((CHOICES[0], "E"), (CHOICES[1], "N")):
        row.button(
            f"Item {active}: {choice}",
            shortcut=key,
            key=f"{prefix}:k{key}",
            on_click=_decide,
            args=(prefix, n, choice),
        )


def render(project: Project, user: str, item: workflow.ShownItem) -> None:
    prefix, questions = item.event_id, item.task.payload["checklist"]
    n = len(questions)
    helped = suggestion.shown(project, user, item)  # None on the control arm: nothing to draw
    initial_state(prefix, n, helped.values if helped else None)  # a suggestion seeds the decisions
    left, right = st.columns([3, 2], gap="large")
    with right:
        if helped:
            st.markdown(suggestion.note(helped, _suggested((helped.values or {}).get("items", []))))
        checklist(item.task, prefix)
    with left:
        selecting = spans.toggle()
        with ui.dialogue_box(640, prefix):
            if not selecting:
                dialogue(project, user, item.task, prefix, editable=True)
            else:  # the words that express the active item, selected with the mouse
                active = st.session_state.get(f"{prefix}:active", 0)
                spans.picker(
                    f"{prefix}:picker",
                    workflow.display_turns(project, item.task),
                    _spans(prefix, active),
                    f"Select the words that express item {active + 1} in a user turn; click a highlight to remove it.",
                    lambda span: _pick(prefix, span),
                    lambda span: _unpick(prefix, span),
                    selectable=lambda t: t["role"] == "user",
                )
    decide_buttons(prefix, n, ui.action_bar(item))  # under both columns, kept in the window
    forms.submit_button(user, item, prefix)


def read(task, prefix: str) -> tuple[dict | None, screen.Problem]:
    """The label on the form, or the undecided checklist items (named at the top and by each item)."""
    questions = task.payload["checklist"]
    left = undecided(prefix, len(questions))
    rows = {f"item{i}": "Undecided: choose Expressed or Not expressed." for i in left}
    return values(prefix, len(questions))[0], screen.Problem(missing_message(questions, left), rows)


def _suggested(items: list[dict[str, Any]]) -> str:
    """What a suggestion decided, as markdown: the expressed items (1-based) and their evidence turns."""
    said = [it for it in items if it["expressed"]]
    if not said:
        return "no item expressed"
    return "expressed " + ", ".join(
        f"{it['item'] + 1}"
        + (f" (turns {', '.join(map(str, it['evidence']))})" if it.get("evidence") else "")
        for it in said
    )


def edit(
    project: Project,
    task,
    prefix: str,
    initial: dict[str, Any],
    comment: str | None,
    show_comment: bool = True,
) -> None:
    """The form prefilled with an earlier label (what is chosen on it: :func:`read`)."""
    n = len(task.payload["checklist"])
    if not st.session_state.get(f"{prefix}:seeded") and comment:
        st.session_state[f"{prefix}:comment"] = comment
    initial_state(prefix, n, initial)
    checklist(task, prefix, comment=show_comment)


def unit_title(task, unit: str, field: str) -> str:
    """An agreement unit as the annotator saw it: ``item0`` → ``1. <the checklist item>``."""
    i = int(unit.removeprefix("item"))
    questions = task.payload["checklist"]
    return f"{i + 1}. {questions[i]}" if i < len(questions) else unit


def summary(task) -> str:
    return excerpt(task.payload["preference"], 110)


def _item_words(it: dict[str, Any]) -> str:
    """One checklist item's decision with its evidence: ``Expressed · turns 2, 4 · “on my phone” (turn 2)``."""
    words = CHOICES[0] if it["expressed"] else CHOICES[1]
    if it.get("evidence"):
        words += " · turn" + ("s " if len(it["evidence"]) > 1 else " ") + ", ".join(map(str, it["evidence"]))
    for span in it.get("spans") or []:
        words += f" · “{excerpt(span['text'], 60)}” (turn {span['turn']})"
    return words


def describe(task, values: dict[str, Any]) -> str:
    return "; ".join(f"{it['item'] + 1}: {_item_words(it)}" for it in values.get("items", []))


def cell(task, values: dict[str, Any], unit: str, field: str) -> str:
    i = int(unit.removeprefix("item"))
    it = next((x for x in values.get("items", []) if x["item"] == i), None)
    return "–" if it is None else _item_words(it)
