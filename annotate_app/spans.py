"""Selecting words as evidence: the dialogue as plain text in which the annotator selects the words
that show a preference (or a memory) with the mouse; each selection becomes a span (turn, character
offsets, the words) and a click on a highlighted span removes it.

A small component (``st.components.v2``, in the page, no iframe) whose script draws every turn with
``textContent`` and ``<mark>`` elements it creates itself: dialogue text never reaches the page as
HTML, so markup, scripts and links in it stay text. Offsets are counted in code points (as Python
indexes a string), not the browser's UTF-16 units, so a turn with emoji gives the same offsets here and
in ``turn[start:end]``; a selection is widened to whole grapheme clusters (an accented letter or an
emoji with its modifiers is one character to a reader; the library refuses a span that splits one).
A double-click selects the word under the pointer. A selection across two turns, or in a turn that
may not be evidence (an assistant turn for a preference), is ignored with a note.

Shown only while the annotator's *Select words* switch is on: the Annotate page draws nothing for it
otherwise. The switch stays as set from item to item, and across a reload (it is in the address,
``?words=on``, as the task kind is); the words selected are part of the item's draft
(:mod:`prefkit.annotate_app.session`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

# Colours from the theme's text colour (an opacity, not a fixed grey): 4.5:1 in the light and the dark
# theme alike; a highlight sets its own dark text on its yellow.
_CSS = """
.prefkit-spans { font-size: .95rem; line-height: 1.5; }
.prefkit-spans .pk-hint { opacity: .8; font-size: .85rem; margin-bottom: .5rem; }
.prefkit-spans .pk-turn { padding: .4rem 0; border-bottom: 1px solid rgba(128,128,128,.25); }
.prefkit-spans .pk-head { opacity: .8; font-size: .8rem; }
.prefkit-spans .pk-text { white-space: pre-wrap; overflow-wrap: anywhere; }
.prefkit-spans .pk-off .pk-text { opacity: .75; }
.prefkit-spans .pk-on .pk-text { cursor: text; }
.prefkit-spans mark { background: #ffe08a; color: #1a1a1a; border-radius: .2rem; cursor: pointer; padding: 0 .05rem; }
.prefkit-spans mark[data-label]::after { content: " " attr(data-label); font-size: .7rem; opacity: .75; }
.prefkit-spans .pk-note { font-weight: 600; font-size: .85rem; min-height: 1.2em; }
"""

_JS = """
export default function(component) {
  const { data, setTriggerValue, parentElement } = component;
  let root = parentElement.querySelector('.prefkit-spans');
  if (!root) { root = document.createElement('div'); root.className = 'prefkit-spans'; parentElement.append(root); }
  // Every run of the page calls this again; with the same data the dialogue stays as drawn, so a run
  // that lands mid-selection (between the two clicks of a double-click, during a drag) cannot undo it.
  const drawn = JSON.stringify(data);
  if (root.__drawn === drawn) return;
  root.__drawn = drawn;
  root.replaceChildren();
  const hint = document.createElement('div'); hint.className = 'pk-hint'; hint.textContent = data.hint; root.append(hint);
  const note = document.createElement('div'); note.className = 'pk-note'; note.setAttribute('role', 'status'); root.append(note);
  const cp = (s) => Array.from(s).length;  // code points, as Python counts
  for (const turn of data.turns) {
    const box = document.createElement('div');
    box.className = 'pk-turn ' + (turn.selectable ? 'pk-on' : 'pk-off');
    const head = document.createElement('div'); head.className = 'pk-head'; head.textContent = turn.head;
    const text = document.createElement('div'); text.className = 'pk-text'; text.dataset.turn = String(turn.index);
    const chars = Array.from(turn.content);
    const mine = data.spans.filter(s => s.turn === turn.index).sort((a, b) => a.start - b.start);
    let at = 0;
    for (const s of mine) {
      if (s.start < at) continue;  // overlapping spans: the first one is drawn
      if (s.start > at) text.append(document.createTextNode(chars.slice(at, s.start).join('')));
      const mark = document.createElement('mark');
      mark.textContent = chars.slice(s.start, s.end).join('');
      mark.title = 'Click to remove this evidence';
      if (s.label) { mark.dataset.label = s.label; mark.title = s.label + ': click to unmark'; }
      mark.addEventListener('click', (e) => { e.preventDefault();
        setTriggerValue('removed', {turn: s.turn, start: s.start, end: s.end}); });
      text.append(mark); at = s.end;
    }
    if (at < chars.length) text.append(document.createTextNode(chars.slice(at).join('')));
    box.append(head, text); root.append(box);
  }
  const offset = (text, node, off) => {
    const r = document.createRange(); r.setStart(text, 0); r.setEnd(node, off); return cp(r.toString());
  };
  // Span ends on grapheme cluster boundaries (a letter with its accents, an emoji with its modifiers
  // is one): the library refuses a span that splits one. Offsets here are code points.
  const bounds = (content) => {
    const out = new Set([0]);
    let at = 0;
    for (const g of new Intl.Segmenter(undefined, {granularity: 'grapheme'}).segment(content)) {
      at += cp(g.segment); out.add(at);
    }
    return out;
  };
  const pick = (turn, start, end) => {
    const chars = Array.from(turn.content);
    while (start < end && /\\s/.test(chars[start])) start++;  // a double click also takes the space after
    while (end > start && /\\s/.test(chars[end - 1])) end--;
    const ok = bounds(turn.content);
    while (start > 0 && !ok.has(start)) start--;  // widen to whole characters, never split one
    while (end < chars.length && !ok.has(end)) end++;
    if (end <= start) return false;
    note.textContent = ''; root.__picked = performance.now();
    setTriggerValue('picked', {turn: turn.index, start, end, text: chars.slice(start, end).join('')});
    return true;
  };
  const turnOf = (el) => {
    if (!el || !root.contains(el)) { note.textContent = data.one_turn; return null; }
    const turn = data.turns.find(t => String(t.index) === el.dataset.turn);
    if (!turn || !turn.selectable) { note.textContent = data.not_here; return null; }
    return turn;
  };
  const host = (n) => n && (n.nodeType === 1 ? n : n.parentElement).closest('.pk-text');
  root.onmouseup = () => {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed || sel.rangeCount === 0) return;
    const range = sel.getRangeAt(0);
    const a = host(range.startContainer), b = host(range.endContainer);
    if (a !== b) { note.textContent = data.one_turn; return; }
    const turn = turnOf(a);
    if (!turn) return;
    const start = offset(a, range.startContainer, range.startOffset);
    const end = offset(a, range.endContainer, range.endOffset);
    sel.removeAllRanges();
    pick(turn, start, end);
  };
  // A double-click selects the word under the pointer, even when the browser left no selection for
  // the mouseup above (a run redrew the dialogue between the clicks, the word touches a highlight).
  root.ondblclick = (e) => {
    if (performance.now() - (root.__picked || -1e9) < 600) return;  // the mouseup took it already
    const caret = document.caretRangeFromPoint && document.caretRangeFromPoint(e.clientX, e.clientY);
    const a = caret && host(caret.startContainer);
    if (!a || e.target.closest('mark')) return;
    const turn = turnOf(a);
    if (!turn) return;
    const at = offset(a, caret.startContainer, caret.startOffset);
    let start = 0;
    for (const w of new Intl.Segmenter(undefined, {granularity: 'word'}).segment(turn.content)) {
      const end = start + cp(w.segment);
      if (w.isWordLike && at >= start && at <= end) { window.getSelection().removeAllRanges(); pick(turn, start, end); return; }
      start = end;
    }
  };
}
"""

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
