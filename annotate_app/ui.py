"""Rendering helpers shared by the pages: the project, the signed-in user, dialogue bubbles, progress,
and the item panel the Annotate page reruns on its own (a fragment) after every submit.

Render only: every decision is a call into :mod:`prefkit.curation.annotation.workflow` (or another curation module).
Every piece of data shown goes through :mod:`prefkit.annotate_app.safe_text` (``text``, ``safe``).

Speed: a submit is a button callback (it runs before the script, so the click costs one run, not
two), and it reruns only the item fragment, not the page and sidebar. What a run would read again and
again is cached: the project (per process), the guidelines (per file change), the annotator's counts
(per change of their queue: a new label, new items, a release). The sign-in session is read again
on every run (one primary-key read of the session with its account: :func:`still_signed_in`), and
every write on the user's behalf names it (:func:`session_token`) so the store checks it in the
write's own transaction: a sign-out in another tab, an expiry, a revocation or a disabled account
ends this tab at its next click, which records nothing and shows the sign-in page.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import streamlit as st
from prefkit.annotate_app import keys, screen
from prefkit.annotate_app.safe_text import md_escape, safe
from prefkit.curation.annotation import sessions, workflow
from prefkit.curation.annotation.task_kinds import (
    TASK_KIND_REGISTRY,
    ContradictoryLabel,
    LabelError,
    get_kind,
)
from prefkit.curation.project import Project
from prefkit.curation.store import Account
from prefkit.schemas.common import PrefkitError
from prefkit.schemas.environment import Environment
from streamlit.runtime.scriptrunner import get_script_run_ctx


class _KindTitles(Mapping[str, str]):
    """Each registered task kind's title, in menu order, read from the registry when asked (so a kind
    registered after this module was imported is in the menus too)."""

    def __getitem__(self, kind: str) -> str:
        if kind not in TASK_KIND_REGISTRY:
            raise KeyError(kind)
        return get_kind(kind).title

    def __iter__(self):
        return iter(TASK_KIND_REGISTRY)

    def __len__(self) -> int:
        return len(TASK_KIND_REGISTRY)


KIND_TITLES = _KindTitles()
ROLE_AVATARS = {
    "user": ":material/person:",
    "assistant": ":material/smart_toy:",
    "system": ":material/settings:",
}


@st.cache_resource(show_spinner=False)
def _open_project(root: str) -> Project:
    return Project(root)


def open_project() -> Project:
    """The served project: ``$PREFKIT_PROJECT`` (set by ``prefkit annotate serve``) or the cwd."""
    try:
        return _open_project(os.path.abspath(Environment.read().project or "."))
    except PrefkitError as exc:
        st.error(str(exc))
        st.stop()


#: Where a browser session keeps its sign-in token (:mod:`prefkit.annotate_app.session` puts it there).
TOKEN = "_session_token"


def signed_in() -> Account | None:
    return st.session_state.get("user")


def session_token() -> str | None:
    """The signed-in browser session's token: what every write on the user's behalf names."""
    return st.session_state.get(TOKEN)


def still_signed_in(user: Account) -> bool:
    """Whether the signed-in browser session may still act, read fresh on every run: its session is
    open (not signed out in any tab, not expired, not revoked) and its account active. A sign-in
    always keeps its token (``session.start``, ``session.resume``); an account put in the session
    state without one (the test suite's shortcut) has no session to check, only its account."""
    store = open_project().store
    token = session_token()
    if token is None:
        return store.accounts.is_active(user.username)
    return sessions.holds(store, token, user.username)


def require(role: str) -> Account:
    """The signed-in user when allowed on this page; otherwise the page stops here."""
    try:
        return workflow.require_role(signed_in(), role)
    except workflow.AuthError as exc:
        st.error(str(exc))
        st.stop()


def sign_out() -> None:
    """Forget everything of this browser session but its run count (:func:`run_mark`: the page
    scripts wait for a mark above the one they saw, 20 s of held keys on the sign-in page were a
    count started again) and the rerun guard's state (:func:`rerun`)."""
    kept = {k: st.session_state[k] for k in (_RUN_COUNT, _SELF_RUN, _RERUN_ASKED) if k in st.session_state}
    for key in list(st.session_state.keys()):
        del st.session_state[key]
    st.session_state.update(kept)


_RERUN_ASKED, _SELF_RUN = "_rerun_asked", "_self_run"  # the next / this full run is the page's own


def begin_run() -> None:
    """At the top of every full run (the app's entry): note whether the page started this run itself."""
    st.session_state[_SELF_RUN] = st.session_state.pop(_RERUN_ASKED, False)


def rerun() -> NoReturn:
    """Run the whole page again, at most once per action of the person: a run the page started itself
    that asks for another is stopped with one line (else a state that undoes itself, an entry link
    opening a session the page then finds ended, reloads without end). A fragment's own run is a
    click in it. Every page reruns through here (``tests/test_reruns.py``)."""
    ctx = get_script_run_ctx()
    if st.session_state.get(_SELF_RUN) and not (ctx is not None and ctx.fragment_ids_this_run):
        st.error("This page stopped reloading itself: reload it, or open your link again.")
        st.stop()
    st.session_state[_RERUN_ASKED] = True
    st.rerun(scope="app")


def from_url(key: str, param: str, options: Any = None) -> None:
    """Before a maintainer view's widget ``key`` is drawn: its value from the address (``?param=``)
    when the widget has none yet (a shared link, a bookmark, a reload), if it is one of ``options``."""
    value = st.query_params.get(param)
    if key not in st.session_state and value is not None and (options is None or value in options):
        st.session_state[key] = value


def to_url(param: str, value: Any) -> None:
    """After the widget: its value in the address, so the view can be shared and bookmarked."""
    if value is None:
        st.query_params.pop(param, None)
    elif st.query_params.get(param) != str(value):
        st.query_params[param] = str(value)


def table(data: Any, **options: Any) -> None:
    """A table as the app shows every table: the page's width, no index column."""
    st.dataframe(data, hide_index=True, width="stretch", **options)


def flash(message: str) -> None:
    """A confirmation shown at the top of the next run (inline: a toast would cover the controls)."""
    st.session_state["_flash"] = message


def show_flash() -> None:
    message = st.session_state.pop("_flash", None)
    if message:
        st.caption(f":material/check_circle: {message}")


def text(value: Any, *, caption: bool = False) -> None:
    """Untrusted text, displayed exactly as written (never as HTML, markdown or a link)."""
    (st.caption if caption else st.markdown)(md_escape(value))


@st.cache_data(show_spinner=False, max_entries=64)
def _guidelines(root: str, kind: str, mtime: float) -> str:
    return _open_project(root).guidelines(kind)


def guidelines(project: Project, kind: str) -> str:
    """The kind's guidelines (the maintainer's own markdown), read again only when the file changes."""
    path = project.guidelines_dir / f"{kind}.md"
    mtime = path.stat().st_mtime if path.exists() else 0.0
    try:
        return _guidelines(str(project.root), kind, mtime)
    except PrefkitError as exc:  # a guidelines file that cannot be shown: no item is drawn under it
        st.error(str(exc))
        st.stop()


def bubble(turn: dict[str, Any], note: str = "") -> Any:
    """One chat bubble, its heading (turn, role and the trusted ``note``) and its text in one markdown
    element (not two: every element costs the browser a little on each submit); returns its container
    so callers can add controls under the text."""
    box = st.chat_message(turn["role"], avatar=ROLE_AVATARS.get(turn["role"], ":material/chat:"))
    head = safe("turn {} · {}", turn["index"], turn["role"]) + note
    box.markdown(f":small[:gray[{head}]]\n\n" + md_escape(turn["content"]))
    return box


def transcript(turns: list[dict[str, Any]]) -> None:
    """A dialogue nobody edits here, as one markdown element: each turn its role's icon, a small
    heading (turn, role, rewritten) and its text, turns divided by rules. One element instead of two
    per turn (a bubble and its text): the browser redraws every element of an item on each submit."""
    parts = []
    for turn in turns:
        head = safe("turn {} · {}", turn["index"], turn["role"]) + (
            " · rewritten" if turn.get("revised") else ""
        )
        icon = ROLE_AVATARS.get(turn["role"], ":material/chat:")
        parts.append(f"{icon} :small[:gray[{head}]]\n\n" + md_escape(turn["content"]))
    st.markdown("\n\n---\n\n".join(parts))


def dialogue_box(height: int, item_key: str):
    """A scrolling box for a dialogue that opens at its first turn (turn 0: the request), a new box
    per item so the next item never inherits the last one's scroll position."""
    return st.container(height=height, autoscroll=False, key=f"dialogue-{item_key}")


# -- submits: button callbacks (run before the script, so one run per click) ---------------------------
def assist_key(item: workflow.ShownItem) -> str:
    """Where the item's suggestion exposure is kept (``forms/suggestion.py`` reads it once per item);
    it goes with the item's other state when the item is done."""
    return f"{item.event_id}:assist"


def suggestion_shown(item: workflow.ShownItem):
    """The suggestion exposure a form read for ``item``, or None (the form drew no suggestion)."""
    return st.session_state.get(assist_key(item))


def _record(user: str, item: workflow.ShownItem, prefix: str, action: Callable[[], bool], done: str) -> None:
    """Run a click's write (``action`` passes ``signed_in=True`` and the session's token: the session
    and the account are checked in the write's own transaction, no separate read per click). A
    click on a showing other than the one this tab has on screen is refused before the store is
    asked, as the store refuses one that is no longer open (``workflow.StaleSubmit``)."""
    if not screen.on_screen(item):
        screen.notice(
            screen.refused("this key or click was made on an item that is no longer on your screen")
        )
        return
    try:
        written = action()
    except workflow.AccountInactive:  # SessionEnded too
        sign_out()  # signed out, expired, revoked or disabled: nothing is written, the next run signs in
        return
    except workflow.StaleSubmit as exc:  # another tab finished it, or it is open under a new showing
        screen.notice(screen.refused(exc))
        return
    except ContradictoryLabel as exc:  # said at the top of the item and next to each part concerned
        rows = {c.unit: c.message for c in exc.found}
        screen.problem(prefix, screen.Problem(f"Not saved, the answers contradict each other: {exc}", rows))
        return
    except (LabelError, workflow.WorkflowError) as exc:
        screen.problem(prefix, f"Not saved: {exc}")
        return
    if not written and not screen.was_finished_here(item.event_id):  # saved from another tab
        screen.notice(
            screen.refused(
                "this item had already been saved, with the same answer, in "
                "another tab or window; nothing new was recorded"
            )
        )
        return
    screen.finished_here(item.event_id)
    st.session_state["_last_done"] = (done if written else "Already saved", item.task.item_ref)
    screen.forget_form(item.event_id)  # the item is done: its widgets' state would only pile up


def submit_now(
    user: str,
    item: workflow.ShownItem,
    prefix: str,
    values: dict | None,
    missing: str | screen.Problem = "",
) -> None:
    """Record ``values`` (or explain ``missing`` when they are None: at the top of the item, and next
    to each row a :class:`screen.Problem` names) for the item on screen."""
    if values is None:
        screen.problem(prefix, missing)
        return
    comment = st.session_state.get(f"{prefix}:comment")
    assist = suggestion_shown(item)  # the arm and suggestion the item showed (forms/suggestion.py)
    token = session_token()
    _record(
        user,
        item,
        prefix,
        lambda: workflow.submit(
            open_project(), user, item, values, comment, signed_in=True, assist=assist, session=token
        ),
        "Saved",
    )


# -- the action bar: the decision's keys, Submit and Skip, always in the window ----------------------------
#: The key of every item's action bar (``prefkit-bar-<event id>``); the page stylesheet keeps it at the
#: bottom of the window (``position: sticky``) while the item scrolls above it.
BAR = "prefkit-bar-"
SKIP_PANEL = "prefkit-skip-"
_BAR_NOW = "_action_bar"


def action_bar(item: workflow.ShownItem) -> Any:
    """The item's action bar (drawn where first asked for, once per run: call it after the item's
    content): one row, wrapping in a narrow window, that the page keeps at the bottom of the window,
    for the buttons that decide (a form puts them here), Submit, Skip and, on a line of its own when
    open, the skip panel. One container per item, like the button row it replaces."""
    run, event_id, bar = st.session_state.get(_BAR_NOW, (None, None, None))
    if (run, event_id) != (st.session_state.get(_RUN_COUNT), item.event_id):
        bar = st.container(key=f"{BAR}{item.event_id}", horizontal=True, vertical_alignment="center")
        st.session_state[_BAR_NOW] = (st.session_state.get(_RUN_COUNT), item.event_id, bar)
    return bar


def skip_and_flag(user: str, item: workflow.ShownItem, comment: bool = False) -> None:
    """Skip or report, beside Submit in the item's action bar (the panel opens under the bar's buttons);
    with ``comment``, the item's optional comment box is in it too (a form whose label is one key press keeps its comment here: one element fewer per item)."""
    key = item.event_id
    project = open_project()

    def finish(act: Callable[..., bool], menu: str, missing: str, done: str) -> None:
        """Skip or flag with the reason chosen in ``menu``; none chosen: refused, said at the top."""
        why, shown, token = st.session_state.get(f"{key}:{menu}"), suggestion_shown(item), session_token()
        if why is None:  # the reasons start empty: the annotator's own words, never a default
            screen.problem(key, missing)
            return
        _record(
            user,
            item,
            key,
            lambda: act(project, user, item, why, signed_in=True, assist=shown, session=token),
            done,
        )

    label = "Skip or report this item, or add a comment" if comment else "Skip or report this item"
    # beside Submit, in the action bar; the controls are drawn only when asked for (fewer elements)
    bar = action_bar(item)
    if not bar.toggle(label, key=f"{key}:{_ITEM_MARK}"):
        return
    # the panel: a line of its own in the bar (``prefkit-skip-``: the stylesheet gives it the full width)
    with bar.container(border=True, horizontal=True, vertical_alignment="bottom", key=f"{SKIP_PANEL}{key}"):
        if comment:
            st.text_input("Comment (optional, type it before choosing)", key=f"{key}:comment")
        for reason in ("skipr", "flagr"):  # start empty: nothing chosen for the annotator
            st.session_state.setdefault(f"{key}:{reason}", None)
        st.selectbox("Skip reason", workflow.SKIP_REASONS, key=f"{key}:skipr", placeholder="Choose why")
        st.button(
            "Skip",
            key=f"{key}:skip",
            icon=":material/skip_next:",
            on_click=finish,
            args=(
                workflow.skip,
                "skipr",
                "Not skipped: choose a skip reason first (the menu beside Skip).",
                "Skipped",
            ),
        )
        st.selectbox(
            "What is broken",
            workflow.flag_reasons(item.task.kind),
            key=f"{key}:flagr",
            placeholder="Choose what",
        )
        st.button(
            "Flag as broken",
            key=f"{key}:flag",
            icon=":material/flag:",
            on_click=finish,
            args=(
                workflow.flag,
                "flagr",
                "Not flagged: choose what is broken first (the menu beside Flag as broken).",
                "Flagged for the maintainers",
            ),
        )


# -- progress ------------------------------------------------------------------------------------------
#: How often the pool is counted again (a count over the whole pool, ~150 ms at 100,000 items): at most
#: this often per browser session and kind, not on every submit or chunk.
POOL_RECOUNT_S = 120.0
_POOL = "_pool_counted"


def _pool_left(project: Project, user: str, kind: str, assigned: int) -> int:
    """What the pool still has for ``user`` now: the last count, less what their queue took from it
    since (a chunk drawn moves items from the pool to the queue, so the total left never jumps)."""
    counted = st.session_state.setdefault(_POOL, {})
    last = counted.get(kind)
    now = time.monotonic()
    if last is None or now - last[2] > POOL_RECOUNT_S or assigned < last[1]:  # < : items went back
        last = counted[kind] = (workflow.available(project, user, kind), assigned, now)
    pool, assigned_then, _ = last
    return max(0, pool - (assigned - assigned_then))


def progress(project: Project, user: str, kind: str, version: tuple[int, int, int]) -> dict[str, Any]:
    """The annotator's counts of ``kind`` (assigned, done, today, per batch), the pool left for them and
    ``left``: what is still for them to do (their open items and the pool's), the one number the item's
    header shows. Counted once per browser session and day, then brought up to date
    (``workflow.progress_memo``)."""
    memo = workflow.progress_memo(project, user, st.session_state.get("_counts"), version)
    st.session_state["_counts"] = memo
    c = memo.counts[kind]
    pool = _pool_left(project, user, kind, c.assigned)
    return {
        "assigned": c.assigned,
        "done": c.done,
        "today": c.today,
        "batches": c.batches,
        "pool": pool,
        "left": max(0, c.assigned - c.done) + pool,
    }


def progress_line(
    title: str, mine: dict[str, Any], item: workflow.ShownItem, lead: Callable[[Any], str] | None = None
) -> None:
    """Where the annotator is, for this task kind only: what the last click did, the header with the
    one count that matters (*12 left for you*: their open items and what the pool still has for them,
    falling by one per item, never restarting per chunk), the item's batch and reference, then the
    form's ``lead(task)`` (markdown of the item's text, escaped by the form) when it has one. One
    element, not several: every element costs the browser a little on each submit
    (bench/bench_browser.py)."""
    lines = []
    done = st.session_state.pop("_last_done", None)
    if done:  # inline above the item: a toast would cover the controls
        lines.append(safe(":small[:material/check_circle: " + done[0] + " · {}]", done[1]))
    lines.append(f"## {title} · {max(mine['left'], 1)} left for you")  # this one at least
    lines.append(safe(":small[:gray[batch {} · item {}]]", item.task.batch, item.task.item_ref))
    if lead is not None:
        lines.append(lead(item.task))
    st.markdown("\n\n".join(lines))


def last_done() -> None:
    """What the annotator's last click did, inline (a toast would cover controls)."""
    done = st.session_state.pop("_last_done", None)
    if done:
        st.caption(safe(":material/check_circle: " + done[0] + " · {}", done[1]))


# The element every item draws last and keys with its own id (``skip_and_flag``'s toggle): its class
# ``st-key-<event id>-trouble`` tells the page script below that a new item is on screen.
_ITEM_MARK = "trouble"
_ITEM_TOP = (
    "<script>/* prefkit: each item starts at its top */ if (!window.__prefkitItemTop) {"
    " window.__prefkitItemTop = true; const shown = new Set();"
    " const app = () => document.querySelector('[data-testid=stApp]');"  # looked up each time: React may remount it
    " const boxes = '[data-testid=stMain], [data-testid=stAppViewContainer], [data-testid=stAppScrollToBottomContainer]';"
    # A run's end and its new elements can reach the page in either order (or in one commit, with
    # the previous item still there, fading): check on both, and act on a mark never seen before.
    " new MutationObserver(() => {"
    "  if (app()?.getAttribute('data-test-script-state') !== 'notRunning') return;"
    "  const item = [...document.querySelectorAll('[data-testid=stMain] [class*=\"-MARK\"]')]"
    "   .map(m => [...m.classList].find(c => c.startsWith('st-key-'))).find(k => k && !shown.has(k));"
    "  if (!item) return;"
    "  shown.add(item);"
    "  requestAnimationFrame(() => { document.querySelectorAll(boxes).forEach(e => { if (e.scrollTop) e.scrollTo(0, 0); });"
    "   if (window.scrollY) window.scrollTo(0, 0); });"
    " }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-test-script-state']}); }</script>"
).replace("MARK", _ITEM_MARK)


RUN_MARK = "prefkit-run-"
#: The session-state key of this browser session's run count (kept through a sign-out).
_RUN_COUNT = "_run_mark"


_FULL_RUN = "_full_run_mark"


def run_mark(full: bool = False) -> None:
    """A hidden element whose key counts this session's runs (``st-key-prefkit-run-<n>``), drawn by
    every full run (the app's entry) and every run of the item fragment. The page scripts read the
    highest number on the page to know that the run a click started has reached it: Streamlit may
    draw a whole run in one React commit, so its run state never visibly leaves ``notRunning``.
    Streamlit draws no empty container, hence the empty slot in it; the stylesheet hides it.

    It also starts the run's list of the forms it draws (``screen.DRAWN``: the last run's and
    this one's; ``full`` for the app's entry, whose page may run a fragment inside it)."""
    n = st.session_state.get(_RUN_COUNT, 0) + 1
    if full or st.session_state.get(_FULL_RUN) != n - 1:  # a new run (not a fragment inside a full one)
        st.session_state[screen.DRAWN] = (st.session_state.get(screen.DRAWN, ((), ()))[1], ())
    if full:
        st.session_state[_FULL_RUN] = n
    st.session_state[_RUN_COUNT] = n
    with st.container(key=f"{RUN_MARK}{n}"):
        st.empty()


def item_top_script(extra: str = "") -> None:
    """Each item starts at its top: the page and every scrolled box go back to 0 when a new item is on
    screen. The script watches the run state and the page, and scrolls only when a new item came and
    something is scrolled; it is ours alone (no data in it).

    Drawn by the app's entry on the first two full runs of a browser session (the sign-in page, then
    the page after it) and then no more: the observer it starts lives in the tab, so later pages need
    no element for it (every element on a page is drawn again by the browser on each submit). Two, not
    one: Streamlit loads its HTML element's code on first use, and a sign-in quicker than that would
    remove the first element before it ran; the page after sign-in (the guidelines of the kind) stays.
    A reload or a sign-out starts a new session, which draws it again; the script starts its observer
    once per tab."""
    runs = st.session_state.get("_item_top_runs", 0)
    if runs >= 2:
        return
    st.session_state["_item_top_runs"] = runs + 1
    # ``extra`` (annotate_app/page_script.py, trusted code) before the keys (annotate_app/keys.py): its
    # keyboard help, while open, must see a key press before any shortcut does
    st.html(
        _ITEM_TOP + extra + keys.GUARD + screen.SCROLL, unsafe_allow_javascript=True
    )  # keys.py, screen.py
