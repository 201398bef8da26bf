"""Keyboard shortcuts that do what their hint says, whatever has focus, in the order they were pressed.

:data:`GUARD` is the page script (``keys.js``) that makes it so, once per tab: a shortcut goes to its
button alone, clicks reach the server one run at a time, and a key acts only on the screen it was
pressed on (a stale one is dropped, with a notice). The why and the details are in
``docs/annotation.md`` (*Keys do what their hint says*, *A slow server*, *A key acts only on what was
on screen*). Tests and the bench wait for ``window.__prefkitSettled()`` beside the run state.
"""

from __future__ import annotations

import json

from prefkit.annotate_app import asset

#: Keys pressed less than this many milliseconds apart are one burst (a person reading the item
#: before answering presses keys further apart; a burst belongs to the screen it began on).
BURST_MS = 250

#: The longest a click that always starts a run is waited for (a lost connection, a server gone);
#: Streamlit reconnects and reruns, which the run mark counts, long before.
CAP_MS = 20_000

#: How long the keys wait after a click that need not start a run (while the page is idle).
WAIT_MS = 2_500

#: The elements whose clicks always start a run (outside a form, a choice is sent with its submit):
#: buttons, choices, and the remove button of a value placed in a multiselect (a ranking's).
RUNS = (
    "[data-testid=stButton], [data-testid=stFormSubmitButton], [data-testid=stButtonGroup], "
    "[data-testid=stRadio], [data-testid=stCheckbox], [data-testid=stMultiSelect] [data-tag] button"
)

#: The values the script takes from here go where it says ``/*CONSTANTS*/``.
_CONSTANTS = f"const BURST = {BURST_MS}, CAP = {CAP_MS}, WAIT = {WAIT_MS}, RUNS = {json.dumps(RUNS)};"
GUARD = "<script>" + asset("keys.js").replace("/*CONSTANTS*/", _CONSTANTS) + "</script>"
