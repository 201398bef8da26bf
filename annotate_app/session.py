"""A reload keeps the annotator where they were: signed in (the session cookie, read once per browser
session and checked again on every run), on the same task kind (``?kind=``) and item, with the
half-done form as they left it (a draft in the store, ``workflow.save_draft``). The cookie is written
and forgotten by a small script drawn on the run after the change (the server cannot set a cookie on a
websocket); the token is never in the URL. ``docs/annotation.md`` (*At the door*, *After a reload*)
says why each is kept where it is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import streamlit as st
from prefkit.annotate_app import screen, ui
from prefkit.curation.annotation import sessions, workflow
from prefkit.schemas.common import canonical_json

if TYPE_CHECKING:
    from prefkit.curation.store import Account

_TOKEN = ui.TOKEN
_COOKIE = "_session_cookie"  # (value or "" to forget it, runs left to draw the script)
_TRIED = "_session_tried"
RESUMED = "_session_resumed"


# -- signed in ---------------------------------------------------------------------------------------
def start(account: Account, client: str | None, hours: float | None = None) -> None:
    """After a successful sign-in (or a crowd participant's arrival): a new session, for ``hours``
    (default ``[annotation.sign_in] session_hours``), its token in this browser session and, from
    the next run, in the browser's cookie."""
    project = ui.open_project()
    hours = hours or project.config.annotation.sign_in.session_hours
    token = sessions.issue(project.store, account.username, hours, client)
    st.session_state["user"] = account
    st.session_state[_TOKEN] = token
    st.session_state[_COOKIE] = (token, 2)


def resume() -> Account | None:
    """The account the browser's cookie signs in (once per browser session), or None."""
    if st.session_state.get(_TRIED):
        return None
    st.session_state[_TRIED] = True
    project = ui.open_project()
    if project is None:  # no script run (bare mode): st.stop() returned instead of stopping
        return None
    store = project.store
    token = st.context.cookies.get(sessions.cookie_name(store))
    account = sessions.resume(store, token)
    if account is None:
        if token:
            st.session_state[_COOKIE] = ("", 2)  # expired, revoked or not ours: forget it
        return None
    st.session_state["user"] = account
    st.session_state[_TOKEN] = token
    st.session_state[RESUMED] = True
    return account


def end() -> None:
    """*Sign out*: the session is revoked (the token no longer signs anyone in, wherever it is kept)
    and the browser forgets it."""
    sessions.close(ui.open_project().store, st.session_state.get(_TOKEN))
    ui.sign_out()
    forget()


def forget() -> None:
    """After the browser session was cleared (sign-out, a disabled account): the cookie goes too."""
    st.session_state[_TRIED] = True  # the cookie still sent by this session is not tried again
    st.session_state[_COOKIE] = ("", 2)


def cookie_script() -> None:
    """Write or forget the cookie, on the two runs after a sign-in or sign-out (two: a run that
    follows at once could remove the element before the browser ran it). Nothing drawn otherwise."""
    pending = st.session_state.get(_COOKIE)
    if not pending:
        return
    value, runs = pending
    st.session_state[_COOKIE] = (value, runs - 1) if runs > 1 else None
    project = ui.open_project()
    name = sessions.cookie_name(project.store)
    age = int(project.config.annotation.sign_in.session_hours * 3600) if value else 0
    # The name and the token are ours (hex, base64url and dots): nothing from data goes into the script.
    st.html(
        "<script>/* prefkit: the sign-in cookie */ document.cookie = "
        + json.dumps(f"{name}={value}; Path=/; Max-Age={age}; SameSite=Strict")
        + " + (location.protocol === 'https:' ? '; Secure' : '');</script>",
        unsafe_allow_javascript=True,
    )


# -- same kind ---------------------------------------------------------------------------------------
def kind_from_url(offered: list[str]) -> str | None:
    """The task kind the URL names, when it is one of ``offered``."""
    kind = st.query_params.get("kind")
    return kind if kind in offered else None


def remember_kind(kind: str) -> None:
    """Put the kind in the URL (a reload opens it again); nothing sent when it is there already."""
    if st.query_params.get("kind") != kind:
        st.query_params["kind"] = kind


def intro_read(kind: str) -> bool:
    """A browser session resumed from the cookie on the kind the URL names: the guidelines were read
    before the reload, so the item comes first."""
    return bool(st.session_state.get(RESUMED)) and st.query_params.get("kind") == kind


# -- half-done form ------------------------------------------------------------------------------------
_KEPT = "_kept"  # {form prefix: [the JSON it opened with, the JSON last kept as its draft]}


_SPAN = {"turn", "start", "end", "text"}


def _plain(value: Any) -> bool:
    """Whether ``value`` is form state a draft keeps: text, numbers, None, lists of them, and the words
    selected as evidence (span dicts; checked again when the draft is read back: ``workflow``)."""
    if value is None or isinstance(value, str | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):  # only a span: a component's own state (the picker's) never is one
        return set(value) - {"label"} == _SPAN and all(
            _plain(v) and not isinstance(v, bool) for v in value.values()
        )
    return isinstance(value, list | tuple) and all(_plain(v) for v in value) and len(value) < 1000


def form_state(prefix: str) -> dict[str, Any]:
    """The values of the item's widgets and form state (keys ``<event id>:*``): text, choices,
    numbers, lists of them, the selected words (spans), and ``seeded`` (buttons and switches, which
    are ``True``/``False``, are never part of a draft; the *Select words* switch is kept in the
    address: ``spans.toggle``)."""
    out = {}
    for key, value in st.session_state.items():
        name = str(key)
        if not name.startswith(prefix + ":"):
            continue
        name = name[len(prefix) + 1 :]
        if (isinstance(value, bool) and name == "seeded") or (not isinstance(value, bool) and _plain(value)):
            out[name] = value
    return out


_HELD = screen.HELD
_HOLD = 12


def recall(prefix: str) -> None:
    """Before a form is drawn: the state it had when last drawn, put back where Streamlit forgot it.

    Streamlit forgets a widget's value when a run does not draw the widget (the annotator went to
    *My items*, the guidelines or another task kind, and came back), while the form's own state
    (``seeded``) stays: the widget then came back at its default, a choice nobody made (the first
    option of a radio: *Expressed*). Every form's state is held here after each run and put back.
    A form the last run did not draw gets all of it back (the browser forgot its widgets' values
    too, and shows what the server sends only for a value set in the run); a form drawn last run
    only what is missing (the browser's values are the annotator's newest). A run counts as drawing
    the form from here on: one cut short by the next click (a quick person) still drew it, and the
    values that click sends are newer than the ones held."""
    before, now = st.session_state.get(screen.DRAWN, ((), ()))
    st.session_state[screen.DRAWN] = (before, (*now, prefix))
    for name, value in st.session_state.get(_HELD, {}).get(prefix, {}).items():
        if prefix not in before or f"{prefix}:{name}" not in st.session_state:
            st.session_state[f"{prefix}:{name}"] = value


def hold(prefix: str) -> None:
    """After a form is drawn: its state as it stands, for :func:`recall` (a few forms at most)."""
    held = st.session_state.setdefault(_HELD, {})
    held.pop(prefix, None)
    held[prefix] = form_state(prefix)
    for old in list(held)[:-_HOLD]:
        del held[old]


def reopen(prefix: str, draft: Callable[[], dict[str, Any] | None]) -> None:
    """Before a form is drawn (an item on Annotate, the editor of a label): the first time this browser
    session draws it, its draft (``draft()``: what the store kept of it) is put back; the form's own
    seeding then leaves it as it is. Later, what Streamlit forgot while it was not drawn (:func:`recall`)."""
    seen = st.session_state.setdefault(_KEPT, {})
    if prefix not in seen:
        kept = draft()
        for name, value in (kept or {}).items():
            st.session_state[f"{prefix}:{name}"] = value
        seen[prefix] = [None, canonical_json(kept) if kept else None]
        for old in list(seen)[:-_HOLD]:
            del seen[old]
    recall(prefix)


def keep(prefix: str, save: Callable[[dict[str, Any]], None]) -> bool:
    """After the form is drawn: its state is kept as its draft (``save(state)``) when it changed since
    it opened or was last kept; the state a form opens with is not (no write on a submit's next
    item). True while it holds a draft: changes not recorded yet."""
    hold(prefix)
    mine = st.session_state.setdefault(_KEPT, {}).setdefault(prefix, [None, None])
    text = canonical_json(form_state(prefix))
    if mine[0] is None:
        mine[0] = text
    elif text != (mine[1] or mine[0]):
        try:
            save(json.loads(text))
        except workflow.WorkflowError as exc:  # too large, or finished (or changed) in another tab
            st.warning(f"Not kept as a draft: {exc}", icon=":material/warning:")
        else:
            mine[1] = text
    return mine[1] is not None


def done(prefix: str) -> None:
    """The form was recorded (or its changes discarded): its state and draft go; it opens fresh."""
    st.session_state.get(_KEPT, {}).pop(prefix, None)
    screen.forget_form(prefix)
