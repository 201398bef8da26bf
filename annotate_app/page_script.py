"""What the app does in the browser tab itself, once per tab (``page_script.css`` / ``.js``): a layout
that fits the window with a sticky action bar (the panes stack below :data:`STACK_PX`), the sidebar
folded away on a narrow screen, accessible names and scroll regions, the theme switch
(:func:`theme_switch`), password-manager names on the sign-in form and the keyboard help (``?``).
``docs/annotation.md`` says what each does and why.

Drawn in the item-top script's ``st.html`` element, by a session's first two runs only (see
``ui.item_top_script``). Nothing in it comes from data: the shortcut list is the forms' own
``SHORTCUTS``, put into the page as JSON and shown with ``textContent`` (never parsed as HTML).
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st
from prefkit.annotate_app import asset, ui
from prefkit.annotate_app.forms import form_for
from prefkit.schemas.common import PrefkitError

NARROW_PX = 1000
#: Below this width the dialogue and the form stack (one above the other) and lose their own scroll
#: boxes: the page is the one scroll region, the action bar stays at the window's bottom.
STACK_PX = 900
#: From this width a long item's fields and its questions are two panes side by side (``forms/declared.py``).
PANES_PX = 1200

#: The stylesheet and the listeners, in page_script.css and page_script.js beside this module.
_CSS = (
    asset("page_script.css")
    .replace("NARROW", str(NARROW_PX))
    .replace("STACK", str(STACK_PX - 1))
    .replace("PANES", str(PANES_PX))
)
_JS = asset("page_script.js")


#: The sidebar's theme switch (its widget key), its choices (Streamlit's own names for them) and the
#: cookie that tells the server this browser's choice.
THEME_KEY = "prefkit-theme"
THEMES = ("System", "Light", "Dark")
THEME_COOKIE = "prefkit_theme"


def theme_switch(where: Any) -> None:
    """The theme switch: *System* follows the browser's ``prefers-color-scheme``; *Light* or *Dark*
    pins it for this browser. The click is handled in the page (:data:`_JS`): the choice is stored
    in this browser and the page reloads in it, so no run of the app is spent on it."""
    chosen = st.context.cookies.get(THEME_COOKIE)
    where.segmented_control(
        "Theme", THEMES, key=THEME_KEY, required=True, default=chosen if chosen in THEMES else THEMES[0]
    )


def sections() -> list[tuple[str, list[tuple[str, str]]]]:
    """Every shortcut of the app, grouped: the Annotate page, each task kind's form (its
    ``SHORTCUTS``), going back to an earlier item, and this help."""
    out: list[tuple[str, list[tuple[str, str]]]] = [
        (
            "Everywhere",
            [
                ("?", "Show or hide this list"),
                ("Esc", "Close this list"),
                ("Tab / Shift+Tab", "Move to the next or previous control"),
                (
                    "Space or Enter",
                    "Press the button in focus: an evidence turn, Skip, Flag as broken, Previous item",
                ),
                (
                    "← / →",
                    "In a row of choices in focus: choose the next or previous one (the task "
                    "kind in the sidebar, the active checklist item, an answer)",
                ),
            ],
        ),
        ("Before the first item of a task kind", [("Enter", "Start annotating (after the guidelines)")]),
    ]
    for kind, title in ui.KIND_TITLES.items():
        try:
            keys = list(getattr(form_for(kind), "SHORTCUTS", ()))
        except PrefkitError:  # a kind whose form cannot be loaded has no keys to list
            keys = []
        if keys:
            out.append((title, keys))
    out.append(
        (
            "Skip or report (every task kind)",
            [
                (
                    "Tab, then Space",
                    "Open Skip or report this item, choose the reason, then Skip or Flag as broken",
                )
            ],
        )
    )
    out.append(
        (
            "Going back (every task kind)",
            [
                ("P", "Previous item: reopen the label you gave last (again: one further back)"),
                ("Esc", "Back to the current item, when you went back"),
            ],
        )
    )
    return out


def script() -> str:
    """The ``<script>`` that installs the stylesheet, the sidebar fold and the help (trusted text)."""
    data = {
        "themeKey": THEME_KEY,
        "themes": THEMES,
        "themeCookie": THEME_COOKIE,
        "css": _CSS,
        "narrow": NARROW_PX,
        "sections": sections(),
        "footer": "Keys do nothing while you type in a text box. Press ? or Esc to close this list.",
    }
    # JSON is a JS literal; "<" escaped so nothing in it can end the script element.
    literal = json.dumps(data).replace("<", "\\u003c")
    return (
        "<script>/* prefkit: page layout and keyboard help */"
        + _JS.replace("__DATA__", literal)
        + "</script>"
    )


def draw() -> None:
    """The item-top script (``ui.item_top_script``) with this one in the same element, on a session's
    first two runs. One element, not two: the elements a page draws before its own shift its
    elements' places when they stop being drawn, and Streamlit keeps the old ones on screen until the
    run ends (a sign-in form would be there twice for a moment)."""
    ui.item_top_script(extra=script())
