"""Keyboard shortcuts that do what their hint says, whatever has focus, in the order they were pressed.

Streamlit binds a button's ``shortcut`` on the document and leaves a key alone while an ``<input>``
has focus (a radio button is one), and the control with focus handles the key first. So after a
mouse click the keys went astray: Ctrl+Enter on a clicked segmented-control pill or evidence pill
pressed that pill again (deselecting the choice: the key undid the click) as well as Submit, and
``E`` / ``N`` did nothing after a click on a radio button. And two clicks that reach the server
while it is still busy are run together, their callbacks in the order of the widgets on the page,
not of the clicks: ``A`` then Ctrl+Enter submitted before accepting (and was refused), ``E`` then
``N`` could decide the items in the wrong order.

:data:`GUARD` is the page script that fixes both, once per tab:

- A key press that is the shortcut of a button on the page (read from the hint Streamlit draws in
  the button, ``aria-label="Shortcut Ctrl + Enter"``) goes to that button alone: the focused control
  never sees it and loses focus (a text field when the key's turn comes: it then hands over what was
  typed, with every widget's value as the page knows it, so not before the runs ahead of it). Typing in a text
  field stays typing (only a combination with Ctrl, Cmd or Alt is a shortcut there), and every key that
  is no button's shortcut is left alone (Tab, Space, arrows: moving and choosing by keyboard).
- Clicks reach the server one run at a time: while a run is under way (or a click has just been
  sent), the next shortcut waits for the run to end, that is until the page is idle and shows a
  higher run mark (``ui.run_mark``) than when the click was sent. The button is found again when its turn comes
  (by its widget key, which names the item): when the item it was pressed on has gone meanwhile, the
  key press is dropped, never applied to the next item, which the annotator has not seen yet.
- A click that always starts a run (a button, pill, radio answer or checkbox outside a form: what
  :data:`RUNS` names; not the choice already made) is waited for however late the server's answer comes (up to
  :data:`CAP_MS`), and a mouse click on one of them made while another click's run is on its way is
  held and replayed in its turn, on the same control (found again by its widget key and place), or
  dropped with the notice when its screen has gone. Streamlit sends every widget's value with each
  click, as the page knows it: a click sent before the run ahead of it reached the page sends the
  values that run's callbacks replaced (a key's decision, the active item) and undoes them on the
  server. A slow server (a run heard seconds late) thus changes only how long the screen takes, never
  what is recorded. Other clicks (a tab, a download, the sidebar) start no run or need none: keys
  wait at most :data:`WAIT_MS` after them, longer while the page shows a run under way.
- A key acts only on what was on screen when it was pressed. The guard knows the *screen* (the widget
  keys of the page's shortcut buttons, read when the app is idle: an item's keys name its showing, so
  a new item is a new screen) and when it was drawn. Keys pressed less than :data:`BURST_MS` apart
  are one burst, and a burst belongs to the screen its first key was pressed on: a key of a burst
  that began on another screen (Enter, Enter from the guidelines into the first item; a stale tab's
  ``E E E E Ctrl+Enter`` whose first key brought the next item), or queued on a screen that has gone
  by its turn, is dropped, and the annotator is told so (*Keys pressed before this item appeared were
  ignored*, a status line at the top of the window). A suggestion is thus confirmed only by a key
  pressed on the item that shows it. On the server every button's key and callback name the showing
  they were drawn for, and a click on a showing other than the one on screen or open is refused
  (``ui._record``, ``workflow.StaleSubmit``). The guard keeps a short log of the screens it saw and
  the keys it dropped (``window.__prefkitKeyLog``, ``window.__prefkitDropped``) for tests and bug
  reports.

The script holds no data. A run that never starts (a click that changes nothing) frees the queue
after a moment. Tests and the bench wait for ``window.__prefkitSettled()`` (nothing the annotator did
is still on its way) beside the run state.
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

#: The elements whose clicks always start a run (outside a form, a choice is sent with its submit).
RUNS = (
    "[data-testid=stButton], [data-testid=stFormSubmitButton], [data-testid=stButtonGroup], "
    "[data-testid=stRadio], [data-testid=stCheckbox]"
)

#: The values the script takes from here go where it says ``/*CONSTANTS*/``.
_CONSTANTS = f"const BURST = {BURST_MS}, CAP = {CAP_MS}, WAIT = {WAIT_MS}, RUNS = {json.dumps(RUNS)};"
GUARD = "<script>" + asset("keys.js").replace("/*CONSTANTS*/", _CONSTANTS) + "</script>"
