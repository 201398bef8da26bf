"""What the app does in the browser tab itself, once per tab: a layout that fits the window, the
sidebar folded away on a narrow screen, and the keyboard help (``?``).

- **Layout.** The dialogue and candidate panes (containers keyed ``dialogue-*`` / ``candidates-*``)
  take the window's height (viewport units), not a fixed box; below 1000 px columns wrap instead of
  squeezing (each at least 16rem), long words break, the top margin is smaller. Streamlit's own
  heights stay the fallback where the stylesheet does not apply (AppTest, a browser without ``:has``).
- **Action bar.** Every item's action bar (``ui.action_bar``: the buttons that decide, Submit, Skip)
  stays at the window's bottom (``position: sticky``) on the theme's background, so nothing that
  decides is below the fold. Below :data:`STACK_PX` the dialogue and the form stack and lose their
  own scroll boxes: the page is the one scroll region. Task QC's hidden key buttons stay hidden.
- **Accessibility.** On every change of the page (at most once a frame): a shortcut hint becomes the
  button's ``aria-keyshortcuts`` and leaves its name; the sidebar's page links lose their malformed
  list roles; a box that scrolls is focusable and named (a keyboard user can scroll it). Captions and
  key hints get text colours that meet 4.5:1 in either theme.
- **Theme.** The app follows ``prefers-color-scheme``; the sidebar's switch (:func:`theme_switch`)
  keeps *Light* or *Dark* for this browser where Streamlit keeps its own choice (``localStorage``,
  for every page of the app) and in a cookie the server reads, then reloads the page in it.
- **Chosen value.** The selected option of a segmented control or pills (Streamlit marks it
  ``aria-checked="true"``) is white on dark blue (contrast 6.7:1, not a light tint) with a ✓ before
  its text (drawn only: the option's accessible name stays its value, ``aria-checked`` tells a screen
  reader): a pre-filled suggestion is plainly chosen, and a click on it keeps it (the forms'
  controls are ``required``).
- **Sidebar.** When the app's first page with a sidebar opens in a window under 1000 px wide, the
  sidebar is folded once (Streamlit's own button), as its ``auto`` state does on phones; the
  annotator can open it again and it stays open.
- **Sign-in form.** Its inputs get ``name="username"`` / ``name="password"`` beside the
  ``autocomplete`` tokens the page sets, which password managers look for.
- **Keyboard help.** ``?`` (outside a text box) opens a list of every shortcut of the app, grouped
  by page and task kind; ``?``, ``Esc`` or a click outside closes it.

Drawn in the item-top script's ``st.html`` element, by a session's first two runs only (see
``ui.item_top_script``), so the Annotate page has no element for it; the
stylesheet and the listeners it installs live in the tab. Nothing in it comes from data: the
shortcut list is the forms' own ``SHORTCUTS``, put into the page as JSON and shown with
``textContent`` (never parsed as HTML).
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st
from prefkit.annotate_app import ui
from prefkit.annotate_app.forms import form_for
from prefkit.schemas.common import PrefkitError

NARROW_PX = 1000
#: Below this width the dialogue and the form stack (one above the other) and lose their own scroll
#: boxes: the page is the one scroll region, the action bar stays at the window's bottom.
STACK_PX = 900

_CSS = """
:root { --prefkit-pane: max(14rem, calc(100dvh - 15.5rem)); --prefkit-candidates: max(12rem, calc(100dvh - 21rem)); }
[data-testid=stMainBlockContainer] { padding-top: 4rem !important; }
[data-testid=stMarkdownContainer] { overflow-wrap: anywhere; }
[class*="st-key-prefkit-run-"], [data-testid=stLayoutWrapper]:has(> [class*="st-key-prefkit-run-"]) { display: none !important; }
[data-testid=stLayoutWrapper]:has(> [class*="st-key-dialogue-"]) {
  height: var(--prefkit-pane) !important; flex: 0 0 var(--prefkit-pane) !important; }
[data-testid=stLayoutWrapper]:has(> [class*="st-key-candidates-"]) {
  height: var(--prefkit-candidates) !important; flex: 0 0 var(--prefkit-candidates) !important; }
[class*="st-key-dialogue-"], [class*="st-key-candidates-"] { height: 100% !important; max-height: 100% !important; }
@media (max-width: NARROWpx) {
  [data-testid=stMainBlockContainer] { padding-left: 1rem !important; padding-right: 1rem !important; }
  [data-testid=stHorizontalBlock] { flex-wrap: wrap !important; }
  [data-testid=stColumn] { min-width: min(100%, 16rem) !important; }
}
@media (max-width: STACKpx) {  /* dialogue above the form, and the page the one scroll region */
  [data-testid=stHorizontalBlock]:has([class*="st-key-dialogue-"]) { flex-direction: column !important; }
  [data-testid=stHorizontalBlock]:has([class*="st-key-dialogue-"]) > [data-testid=stColumn] {
    width: 100% !important; flex: 1 1 auto !important; }
  [data-testid=stLayoutWrapper]:has(> [class*="st-key-dialogue-"]),
  [data-testid=stLayoutWrapper]:has(> [class*="st-key-candidates-"]) { height: auto !important; flex: 0 0 auto !important; }
  [class*="st-key-dialogue-"], [class*="st-key-candidates-"] { height: auto !important; max-height: none !important;
    overflow: visible !important; }
}
[data-testid=stLayoutWrapper]:has(> [class*="st-key-prefkit-bar-"]), [class*="st-key-prefkit-bar-"] {
  position: sticky !important; bottom: 0; z-index: 99; }
[class*="st-key-prefkit-bar-"] { flex-wrap: wrap !important; }
[data-testid=stLayoutWrapper]:has(> [class*="st-key-prefkit-skip-"]), [class*="st-key-prefkit-skip-"] {
  flex: 1 1 100% !important; width: 100% !important; }
[class*="st-key-prefkit-bar-"] { background: var(--prefkit-bg, #fff); padding: .5rem 0 .6rem;
  border-top: 1px solid rgba(128, 128, 128, .4); box-shadow: 0 -.5rem .75rem -.75rem rgba(0, 0, 0, .35); }
[class*="st-key-prefkit-keys-"], [data-testid=stLayoutWrapper]:has(> [class*="st-key-prefkit-keys-"]),
[data-testid=stElementContainer]:has(> [class*="st-key-prefkit-keys-"]) { display: none !important; }
[data-testid=stMain] [data-testid=stMarkdownContainer] h2 { font-size: 1.35rem; padding: .5rem 0 .25rem; }
[data-testid=stCaptionContainer], [data-testid=stCaptionContainer] p { color: inherit !important; }
[data-testid=stCaptionContainer] { opacity: .8; }
button kbd { color: inherit !important; opacity: 1 !important; }
[data-testid=stButtonGroup] button[aria-checked=true], [data-testid=stButtonGroup] button[aria-pressed=true] {
  background-color: #1d4ed8 !important; border-color: #1d4ed8 !important; color: #ffffff !important; font-weight: 600; }
[data-testid=stButtonGroup] button[aria-checked=true] *, [data-testid=stButtonGroup] button[aria-pressed=true] * {
  color: #ffffff !important; }
[data-testid=stButtonGroup] button[aria-checked=true] [data-testid=stMarkdownContainer] p::before,
[data-testid=stButtonGroup] button[aria-pressed=true] [data-testid=stMarkdownContainer] p::before {
  content: "\\2713\\00a0" / ""; }  /* seen, not read out: aria-checked says it */
#prefkit-help { position: fixed; inset: 0; z-index: 1000100; background: rgba(0, 0, 0, .45);
  display: flex; align-items: center; justify-content: center; }
#prefkit-help .prefkit-help-box { background: var(--st-background-color, #fff); color: inherit; max-width: min(44rem, 94vw);
  max-height: 88dvh; overflow: auto; padding: 1.25rem 1.5rem; border-radius: .5rem; box-shadow: 0 .5rem 2rem rgba(0,0,0,.3);
  background-color: white; color: #31333f; font-size: .95rem; }
#prefkit-help h2 { font-size: 1.3rem; margin: 0 0 .5rem; }
#prefkit-help h3 { font-size: 1rem; margin: .9rem 0 .3rem; }
#prefkit-help table { border-collapse: collapse; width: 100%; }
#prefkit-help td { padding: .15rem .5rem .15rem 0; vertical-align: top; }
#prefkit-help kbd { font-family: monospace; border: 1px solid #bbb; border-bottom-width: 2px; border-radius: .25rem;
  padding: 0 .35rem; white-space: nowrap; background: #f6f6f6; }
""".replace("NARROW", str(NARROW_PX)).replace("STACK", str(STACK_PX - 1))

_JS = """
(() => { if (window.__prefkitPage) return; window.__prefkitPage = true;
const DATA = __DATA__;
const style = document.createElement('style'); style.id = 'prefkit-layout'; style.textContent = DATA.css;
document.head.append(style);
// Fold the sidebar once when it first shows in a narrow window (Streamlit's own button).
const fold = new MutationObserver(() => {
  const bar = document.querySelector('[data-testid=stSidebar]');
  if (!bar || bar.getBoundingClientRect().width < 50) return;
  if (window.innerWidth < DATA.narrow) {
    const button = document.querySelector('[data-testid=stSidebarCollapseButton] button');
    if (!button) return;
    button.click();
  }
  fold.disconnect();
});
fold.observe(document.body, {childList: true, subtree: true});
// Password managers: the sign-in inputs get the names they look for (Streamlit gives inputs none).
const named = new MutationObserver(() => {
  for (const [auto, name] of [['username', 'username'], ['current-password', 'password']]) {
    const input = document.querySelector(`input[autocomplete="${auto}"]`);
    if (input && !input.name) input.name = name;
  }
});
named.observe(document.body, {childList: true, subtree: true});
setTimeout(() => named.disconnect(), 600000);  // the sign-in page is the session's first: enough
// Accessibility Streamlit leaves out, put right on every change of the page (at most once a frame):
// a shortcut hint is the button's aria-keyshortcuts, not part of its name ("Submit", not "Submit
// Shortcut Ctrl + Enter"); the sidebar's page links are not a malformed list; a box that scrolls can
// be scrolled from the keyboard (focusable, named); the action bar takes the theme's background.
const shortcut = t => t.split('+').map(k => k.trim()).map(k => k === 'Ctrl' ? 'Control' : k).join('+');
const BOX_NAMES = [['st-key-dialogue-', 'Dialogue'], ['st-key-candidates-', 'Candidate memories']];
let tidyQueued = false;
const tidy = () => {
  tidyQueued = false;
  for (const k of document.querySelectorAll('button kbd[aria-label^="Shortcut "]:not([aria-hidden])')) {
    k.setAttribute('aria-hidden', 'true');
    k.closest('button').setAttribute('aria-keyshortcuts', shortcut(k.getAttribute('aria-label').slice(9)));
  }
  for (const el of document.querySelectorAll('[data-testid=stSidebarNavItems]:not([role]), [data-testid=stSidebarNavItems] li:not([role])'))
    el.setAttribute('role', 'none');
  for (const box of document.querySelectorAll('[data-testid=stMain] [overflow=auto]:not([tabindex]):not([data-testid=stLayoutWrapper])')) {
    const named = BOX_NAMES.find(([k]) => [...box.classList].some(c => c.startsWith(k)));
    box.tabIndex = 0; box.setAttribute('role', 'region');
    box.setAttribute('aria-label', named ? named[1] : 'Scrolling box');
  }
  const app = document.querySelector('[data-testid=stApp]');
  if (app) document.documentElement.style.setProperty('--prefkit-bg', getComputedStyle(app).backgroundColor);
};
new MutationObserver(() => { if (!tidyQueued) { tidyQueued = true; requestAnimationFrame(tidy); } })
  .observe(document.body, {childList: true, subtree: true});
// The theme switch (the sidebar's "Theme"): the choice is this browser's, kept where Streamlit keeps
// its own theme choice (localStorage, read before the first paint: no flash of the other theme) for
// every page of the app, and in a cookie the server reads to show it selected; then the page reloads.
window.addEventListener('click', e => {
  const option = e.target.closest && e.target.closest('.st-key-' + DATA.themeKey + ' button');
  if (!option) return;
  const choice = DATA.themes.find(t => option.innerText.includes(t));
  if (!choice) return;
  e.preventDefault(); e.stopImmediatePropagation();
  const paths = new Set([location.pathname, '/']);
  for (const a of document.querySelectorAll('[data-testid=stSidebarNav] a[href]')) paths.add(new URL(a.href).pathname);
  for (const p of paths) localStorage.setItem(`stActiveTheme-${p}-v2`, JSON.stringify(choice));
  document.cookie = `${DATA.themeCookie}=${choice}; path=/; max-age=31536000; samesite=lax`;
  location.reload();
}, true);
// "?" lists every shortcut; "?", Esc or a click outside closes the list.
const typing = t => t && t.closest && t.closest('input, textarea, select, [contenteditable=""], [contenteditable=true]');
function close() { const o = document.getElementById('prefkit-help'); if (o) { o.remove(); return true; } return false; }
function open() {
  const o = document.createElement('div'); o.id = 'prefkit-help';
  o.setAttribute('role', 'dialog'); o.setAttribute('aria-modal', 'true'); o.setAttribute('aria-label', 'Keyboard shortcuts');
  const box = document.createElement('div'); box.className = 'prefkit-help-box'; box.tabIndex = -1;
  const h = document.createElement('h2'); h.textContent = 'Keyboard shortcuts'; box.append(h);
  for (const [title, keys] of DATA.sections) {
    const h3 = document.createElement('h3'); h3.textContent = title; box.append(h3);
    const table = document.createElement('table');
    for (const [key, what] of keys) {
      const tr = table.insertRow(); const k = tr.insertCell(); const w = tr.insertCell();
      const kbd = document.createElement('kbd'); kbd.textContent = key; k.append(kbd); w.textContent = what;
    }
    box.append(table);
  }
  const p = document.createElement('p'); p.textContent = DATA.footer; box.append(p);
  o.append(box); o.addEventListener('click', e => { if (e.target === o) close(); });
  document.body.append(o); box.focus();
}
window.addEventListener('keydown', e => {
  const shown = !!document.getElementById('prefkit-help');
  if (e.key === '?' && !e.ctrlKey && !e.metaKey && !e.altKey && !typing(e.target)) {
    e.preventDefault(); e.stopImmediatePropagation(); if (!close()) open();
  } else if (shown && e.key === 'Escape') { e.preventDefault(); e.stopImmediatePropagation(); close(); }
  else if (shown) { e.stopImmediatePropagation(); }  // no shortcut acts behind the list
}, true);
})();
"""


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
