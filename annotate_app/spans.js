
const KEYS = 'Tab here, then the arrows move between words, Shift+arrow takes more, Enter marks or unmarks';
export default function(component) {
  const { data, setTriggerValue, parentElement } = component;
  let root = parentElement.querySelector('.prefkit-spans');
  if (!root) { root = document.createElement('div'); root.className = 'prefkit-spans'; parentElement.append(root); }
  // Every run of the page calls this again; with the same data the dialogue stays as drawn, so a run
  // that lands mid-selection (between the two clicks of a double-click, during a drag) cannot undo it.
  const drawn = JSON.stringify(data);
  if (root.__drawn === drawn) return;
  root.__drawn = drawn;
  const refocus = root.contains(document.activeElement) && root.__kbd;  // a key that marked words keeps its place
  root.replaceChildren();
  const hint = document.createElement('div'); hint.className = 'pk-hint'; hint.textContent = data.hint; root.append(hint);
  const note = document.createElement('div'); note.className = 'pk-note'; note.setAttribute('role', 'status'); root.append(note);
  const cp = (s) => Array.from(s).length;  // code points, as Python counts
  for (const turn of data.turns) {
    const box = document.createElement('div');
    box.className = 'pk-turn ' + (turn.selectable ? 'pk-on' : 'pk-off');
    const head = document.createElement('div'); head.className = 'pk-head'; head.textContent = turn.head;
    const text = document.createElement('div'); text.className = 'pk-text'; text.dir = 'auto'; text.dataset.turn = String(turn.index);
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
    box.append(head, text);
    if (turn.session) {  // a session's header: above its first turn, never a turn itself
      const s = document.createElement('div'); s.className = 'pk-session'; s.textContent = turn.session; root.append(s);
    }
    root.append(box);
    if (turn.selectable) {
      text.tabIndex = 0; text.setAttribute('role', 'group'); text.setAttribute('aria-label', `${turn.head}: ${KEYS}`);
      text.addEventListener('keydown', (e) => keyed(e, turn, text));
      if (refocus && refocus.turn === turn.index) text.focus({preventScroll: true});
    }
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
    while (start < end && /\s/.test(chars[start])) start++;  // a double click also takes the space after
    while (end > start && /\s/.test(chars[end - 1])) end--;
    const ok = bounds(turn.content);
    while (start > 0 && !ok.has(start)) start--;  // widen to whole characters, never split one
    while (end < chars.length && !ok.has(end)) end++;
    if (end <= start) return false;
    note.textContent = ''; root.__picked = performance.now();
    setTriggerValue('picked', {turn: turn.index, start, end, text: chars.slice(start, end).join('')});
    return true;
  };
  // From the keyboard: the arrows move between a turn's words, Shift+arrow takes the next ones too, and
  // Enter marks them (or unmarks the marked words there); the words in reach are drawn as a highlight.
  const spot = (text, at) => {  // code point ``at`` of the turn as a DOM position
    const walk = document.createTreeWalker(text, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const chars = Array.from(n.textContent);
      if (at <= chars.length) return [n, chars.slice(0, at).join('').length];
      at -= chars.length;
    }
    return [text, text.childNodes.length];
  };
  const keyed = (e, turn, text) => {
    const ws = [];
    let at = 0;
    for (const w of new Intl.Segmenter(undefined, {granularity: 'word'}).segment(turn.content)) {
      if (w.isWordLike) ws.push([at, at + cp(w.segment)]);
      at += cp(w.segment);
    }
    const k = root.__kbd && root.__kbd.turn === turn.index ? root.__kbd : {turn: turn.index, i: -1, j: -1};
    const step = {ArrowRight: 1, ArrowLeft: -1}[e.key];
    if (step && ws.length) {
      const last = ws.length - 1, move = (n) => Math.min(last, Math.max(0, n));
      if (e.shiftKey && k.i >= 0) k.j = Math.max(k.i, move(k.j + step));
      else k.i = k.j = move((step > 0 ? k.j : k.i) + step);
      root.__kbd = k;
      const [a] = ws[k.i], b = ws[k.j][1], r = document.createRange();
      r.setStart(...spot(text, a)); r.setEnd(...spot(text, b));
      if (window.CSS && CSS.highlights) CSS.highlights.set('pk-cursor', new Highlight(r));
      note.textContent = Array.from(turn.content).slice(a, b).join('');
    } else if (e.key === 'Enter' && !e.ctrlKey && !e.metaKey && k.i >= 0 && ws.length) {
      const a = ws[k.i][0], b = ws[k.j][1];
      const hit = data.spans.find(s => s.turn === turn.index && s.start < b && s.end > a);
      if (hit) setTriggerValue('removed', {turn: hit.turn, start: hit.start, end: hit.end}); else pick(turn, a, b);
    } else if (e.key === 'Escape' && k.i >= 0) {  // the words in reach go, and nothing else
      root.__kbd = null; note.textContent = '';
      if (window.CSS && CSS.highlights) CSS.highlights.delete('pk-cursor');
    } else return;
    e.preventDefault(); e.stopPropagation();
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
