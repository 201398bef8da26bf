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
after a moment.
"""

from __future__ import annotations

#: Keys pressed less than this many milliseconds apart are one burst (a person reading the item
#: before answering presses keys further apart; a burst belongs to the screen it began on).
BURST_MS = 250

GUARD = """<script>/* prefkit: a shortcut key does what its hint says, whatever has focus, in order */
if (!window.__prefkitKeys) { window.__prefkitKeys = true;
  const NOT_TEXT = ['radio', 'checkbox', 'button', 'submit', 'reset', 'range', 'color', 'file', 'image'];
  const typing = el => el.isContentEditable || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT'
    || (el.tagName === 'INPUT' && !NOT_TEXT.includes((el.type || '').toLowerCase()));
  const combo = tokens => tokens.map(t => t.trim().toLowerCase()).filter(Boolean)
    .map(t => (t === '\\u2318' || t === 'cmd' || t === 'command' || t === 'mod') ? 'ctrl' : t)
    .map(t => t === '\\u2325' ? 'alt' : t).sort().join('+');
  const pressed = e => {
    const key = e.key === ' ' ? 'space' : e.key.toLowerCase();
    const mods = [(e.ctrlKey || e.metaKey) && 'ctrl', e.altKey && 'alt', e.shiftKey && 'shift'];
    return combo([...mods.filter(Boolean), key]);
  };
  const app = () => document.querySelector('[data-testid=stApp]');  // looked up each time: React may remount it
  const idle = () => app()?.getAttribute('data-test-script-state') === 'notRunning';
  // The run mark (``ui.run_mark``): a hidden element whose key counts the session's runs. A click's
  // run has reached the page when a higher number is on it and the app is idle: Streamlit may draw a
  // whole run in one React commit, so its run state need not visibly leave ``notRunning``.
  const RUN = 'st-key-prefkit-run-';
  const runNow = () => { let n = 0; for (const m of document.querySelectorAll('[class*="' + RUN + '"]'))
    for (const c of m.classList) if (c.startsWith(RUN)) n = Math.max(n, Number(c.slice(RUN.length)) || 0);
    return n; };
  // The screen: the widget keys of the shortcut buttons on the page, read when the app is idle (an
  // item's buttons are keyed by its showing). A burst of keys belongs to the screen it began on.
  const keyOf = el => { const h = el && el.closest('[class*="st-key-"]');
    return (h && [...h.classList].find(c => c.startsWith('st-key-'))) || ''; };
  const screenNow = () => [...document.querySelectorAll('[aria-label^="Shortcut "]')]
    .map(h => keyOf(h.closest('button'))).sort().join(' ');
  let screen = screenNow(), drawnAt = performance.now(), lastKey = -1e9, burstOn = screen;
  const look = () => { if (!idle()) return; const s = screenNow();
    if (s !== screen) { screen = s; drawnAt = performance.now(); note('screen', s); } };
  // What the guard saw (the last few screens and dropped keys), for tests and bug reports.
  const log = window.__prefkitKeyLog = [];
  const note = (what, detail) => { log.push([Math.round(performance.now()), what, detail]); log.splice(0, log.length - 40); };
  window.__prefkitDropped = 0;
  // Whether a key pressed now starts a new burst (tests and the bench wait for it between items).
  window.__prefkitKeysReady = () => performance.now() - lastKey >= BURST;
  const dropped = why => {  // said at the top of the window for a few seconds
    window.__prefkitDropped += 1; note('dropped', why);
    let n = document.getElementById('prefkit-dropped');
    if (!n) { n = document.createElement('div'); n.id = 'prefkit-dropped';
      n.setAttribute('role', 'status'); n.setAttribute('aria-live', 'polite');
      n.style.cssText = 'position:fixed;top:3.6rem;left:50%;transform:translateX(-50%);z-index:1000090;'
        + 'background:#fff3cd;color:#4a3000;border:1px solid #b38600;border-radius:.4rem;padding:.35rem .9rem;'
        + 'font-size:.9rem;box-shadow:0 .2rem .8rem rgba(0,0,0,.15);pointer-events:none';
      document.body.append(n); }
    n.textContent = 'Keys pressed before this item appeared were ignored: read it, then press again.';
    clearTimeout(n.__hide); n.__hide = setTimeout(() => n.remove(), 6000);
  };
  const queue = [];
  let waiting = false, sentAt = 0, timer = null, settling = false;
  const wait = ms => { waiting = true; sentAt = runNow(); clearTimeout(timer); timer = setTimeout(free, ms); };
  const free = () => { waiting = false; clearTimeout(timer); drain(); };
  const drain = () => { while (!waiting && queue.length && idle()) fire(queue.shift()); };
  const arrived = () => waiting && idle() && runNow() > sentAt;
  const fire = target => {
    look();
    if (target.screen !== screen) { dropped('gone by its turn'); return; }  // pressed on a screen that has gone
    const button = target.key ? document.querySelector('.' + CSS.escape(target.key) + ' button') : target.button;
    if (!button || !button.isConnected || button.disabled) return;  // its item has gone: dropped
    // A text field hands what was typed to Streamlit when it loses focus, with every widget's value
    // as the page knows it: only now, after the runs before, are those values the server's.
    if (target.field && target.field.isConnected && document.activeElement === target.field) target.field.blur();
    button.click();
    wait(3000);  // a click that starts no run frees the queue after this
  };
  new MutationObserver(() => {
    look();
    if (settling || !arrived()) return;
    settling = true;
    // The run's elements are on the page; their widgets take in the run's values a moment later
    // (after the browser paints): a click sent before then would send a widget's old value back.
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => {
      settling = false; if (arrived()) free(); }, 0)));
  }).observe(document.body, {subtree: true, childList: true, attributes: true,
              attributeFilter: ['data-test-script-state']});
  // A click that changes a widget sends its own run: a shortcut pressed right after it waits for it.
  window.addEventListener('click', e => {
    if (!e.isTrusted || waiting || !e.target.closest) return;
    const control = e.target.closest('button, label, input');
    if (!control || (control.tagName === 'BUTTON' && control.hasAttribute('aria-haspopup'))) return;
    const input = control.tagName === 'INPUT' ? control : control.tagName === 'LABEL'
      ? (control.control || control.querySelector('input')) : null;
    if (input && (typing(input) || (input.type === 'radio' && input.checked))) return;  // no run
    wait(2500);
  }, true);
  window.addEventListener('keydown', e => {
    const focus = document.activeElement;
    const focused = focus && focus !== document.body && focus !== document.documentElement;
    const inText = focused && typing(focus);
    if (e.isComposing || (inText && !(e.ctrlKey || e.metaKey || e.altKey))) return;  // typing
    if (['Control', 'Meta', 'Alt', 'Shift'].includes(e.key)) return;
    const want = pressed(e);
    const button = [...document.querySelectorAll('[aria-label^="Shortcut "]')]
      .filter(h => combo(h.getAttribute('aria-label').slice(9).split('+')) === want)
      .map(h => h.closest('button')).find(b => b && !b.disabled);
    if (!button) return;
    e.preventDefault();
    e.stopImmediatePropagation();  // neither the focused control nor Streamlit's own binding sees it
    look();
    const at = e.timeStamp || performance.now();
    if (at - lastKey >= BURST) burstOn = screen;  // a new burst: it belongs to the screen shown now
    lastKey = at;
    if (burstOn !== screen || at < drawnAt) { dropped(e.key + ': burst began before this screen'); return; }  // the burst began before this screen
    if (focused && !inText && focus.blur) focus.blur();  // a text field loses focus on its turn
    const holder = button.closest('[class*="st-key-"]');
    const key = holder && [...holder.classList].find(c => c.startsWith('st-key-'));
    note('key', e.key);
    queue.push({key, button, field: inText ? focus : null, screen});
    drain();
  }, true);
}</script>""".replace("BURST", str(BURST_MS))
