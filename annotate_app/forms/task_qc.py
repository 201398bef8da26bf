"""Generated task check: the generated message or conversation beside its memory and gold answer.

One control per verdict, in the item's action bar with Submit. Keys: 1 no leakage, 2 leaks; 3 answer
correct, 4 incorrect (both needed, then Submit). On an item of
the assisted arm with a suggestion (``prefkit suggest``) both verdicts are pre-filled under a note
naming the checks that failed; Ctrl+Enter confirms them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st
from prefkit.annotate_app import ui
from prefkit.annotate_app.forms import suggestion
from prefkit.annotate_app.forms.text import excerpt
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import workflow

if TYPE_CHECKING:
    from prefkit.curation.project import Project

LEAKAGE = (("none", "No leakage"), ("leaks", "Leaks the memory"))
ANSWER = (("correct", "Gold answer correct"), ("incorrect", "Gold answer incorrect"))
TITLES = dict(LEAKAGE + ANSWER)

#: The keys of this form, for the help overlay (``?``).
SHORTCUTS = (
    ("1", "Leakage: no leakage"),
    ("2", "Leakage: leaks the memory"),
    ("3", "Answer: gold answer correct"),
    ("4", "Answer: gold answer incorrect"),
    ("Ctrl+Enter", "Submit the item (both verdicts chosen)"),
)


def item(task) -> None:
    p = task.payload
    ui.text(f"{p['track']} · {p['benchmark_id']}", caption=True)
    ui.text(p["question"], caption=True)
    c1, c2 = st.columns(2, gap="large")
    with c1, st.container(border=True):
        st.markdown("**Generated**")
        ui.text(p["generated"])
    with c2, st.container(border=True):
        st.markdown("**Memory**")
        ui.text(p["memory"])
        st.markdown("**Gold answer**")
        ui.text(p["gold_answer"])


def _controls(
    prefix: str, initial: dict[str, Any], where: Any = st, keys: bool = False
) -> dict[str, Any] | None:
    """One control per verdict (a required segmented control: a click on the chosen or suggested value
    keeps it); with ``keys`` their labels name the keys that choose them (:func:`_keys`)."""
    leakage = where.segmented_control(
        "Leakage (keys 1, 2)" if keys else "Leakage",
        [v for v, _ in LEAKAGE],
        format_func=lambda v: TITLES.get(v, v),
        default=initial.get("leakage"),
        key=f"{prefix}:leakage",
        required=True,  # a click on the chosen (or suggested) verdict keeps it
    )
    answer = where.segmented_control(
        "Answer (keys 3, 4)" if keys else "Answer",
        [v for v, _ in ANSWER],
        format_func=lambda v: TITLES.get(v, v),
        default=initial.get("answer"),
        key=f"{prefix}:answer",
        required=True,  # a click on the chosen (or suggested) verdict keeps it
    )
    return {"leakage": leakage, "answer": answer} if leakage and answer else None


def _read(prefix: str) -> tuple[dict | None, str]:
    """Both verdicts from the widgets at the moment of the click, or what is missing."""
    leakage = st.session_state.get(f"{prefix}:leakage")
    answer = st.session_state.get(f"{prefix}:answer")
    if leakage and answer:
        return {"leakage": leakage, "answer": answer}, ""
    missing = [name for name, v in (("leakage", leakage), ("answer", answer)) if not v]
    return None, f"Choose a verdict for {' and '.join(missing)} first."


def _choose(prefix: str, field: str, value: str) -> None:
    st.session_state[f"{prefix}:{field}"] = value


#: The key of the container of the verdicts' keys: the page stylesheet hides it (``display: none``).
KEYS = "prefkit-keys-"


def _keys(prefix: str) -> None:
    """The keys the guidelines name (1 none, 2 leaks; 3 correct, 4 incorrect) as shortcut buttons that
    set the verdicts, in a container the page never shows: the verdicts' own controls are the one
    control per decision on screen (and for a screen reader), the keys are what the controls' labels
    say; the key guard (``keys.py``) presses a hidden button as it presses a shown one."""
    hidden = st.container(key=f"{KEYS}{prefix}")
    choices = [("leakage", v, t) for v, t in LEAKAGE] + [("answer", v, t) for v, t in ANSWER]
    for n, (field, value, title) in enumerate(choices, start=1):
        hidden.button(
            title, shortcut=str(n), key=f"{prefix}:k{n}", on_click=_choose, args=(prefix, field, value)
        )


def render(project: Project, user: str, shown: workflow.ShownItem) -> None:
    prefix = shown.event_id
    item(shown.task)
    helped = suggestion.shown(project, user, shown)  # None on the control arm: nothing to draw
    values = (helped.values or {}) if helped else {}
    if helped:
        failed = (helped.detail or {}).get("failed") or []
        summary = " · ".join(md_escape(TITLES[values[k]]) for k in ("leakage", "answer"))
        summary += " — failed checks: " + (md_escape(", ".join(failed)) if failed else "none")
        st.markdown(suggestion.note(helped, summary))
    st.text_input("Comment (what leaks, what is wrong)", key=f"{prefix}:comment")
    _keys(prefix)
    _controls(prefix, values, where=ui.action_bar(shown), keys=True)  # the decisions, kept in the window
    ui.submit_button(user, shown, prefix, lambda: _read(prefix))


def edit(
    project: Project,
    task,
    prefix: str,
    initial: dict[str, Any],
    comment: str | None,
    show_comment: bool = True,
) -> tuple[dict | None, str | None]:
    item(task)
    values = _controls(prefix, initial)
    note = st.text_input("Comment", value=comment or "", key=f"{prefix}:comment") if show_comment else None
    return values, (note or None)


def unit_title(task, unit: str, field: str) -> str:
    return field


def summary(task) -> str:
    p = task.payload
    return f"{p['track']} · {excerpt(p['generated'], 100)}"


def describe(task, values: dict[str, Any]) -> str:
    return "; ".join(TITLES.get(str(values.get(f)), "–") for f in ("leakage", "answer"))


def cell(task, values: dict[str, Any], unit: str, field: str) -> str:
    return TITLES.get(str(values.get(field)), "–")
