/* prefkit: a shortcut key does what its hint says, whatever has focus, in order */
if (!window.__prefkitKeys) { window.__prefkitKeys = true;
  /*CONSTANTS*/
  const NOT_TEXT = ['radio', 'checkbox', 'button', 'submit', 'reset', 'range', 'color', 'file', 'image'];
  const typing = el => el.isContentEditable || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT'
    || (el.tagName === 'INPUT' && !NOT_TEXT.includes((el.type || '').toLowerCase()));
  const combo = tokens => tokens.map(t => t.trim().toLowerCase()).filter(Boolean)
    .map(t => (t === '\u2318' || t === 'cmd' || t === 'command' || t === 'mod') ? 'ctrl' : t)
    .map(t => t === '\u2325' ? 'alt' : t).sort().join('+');
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
    n.textContent = why.startsWith('click') ? 'A click made before this item appeared was ignored: read it, then click again.'
      : 'Keys pressed before this item appeared were ignored: read it, then press again.';
    clearTimeout(n.__hide); n.__hide = setTimeout(() => n.remove(), 6000);
  };
  // A click that always starts a run (a button, pill, radio or checkbox outside a form; not a radio already chosen).
  const inputOf = c => c.tagName === 'INPUT' ? c : c.tagName === 'LABEL' ? (c.control || c.querySelector('input')) : null;
  const starts = c => { if (!c || !c.isConnected || c.disabled || !c.closest(RUNS)) return false;
    if (c.closest('[data-testid=stForm]') && !c.closest('[data-testid=stFormSubmitButton]')) return false;
    if (c.getAttribute('role') === 'radio' && c.getAttribute('aria-checked') === 'true') return false;  // a chosen segment may stay
    const input = inputOf(c); return !(input && input.type === 'radio' && input.checked); };
  // A held click's control, found again when its turn comes: by its widget key and place there.
  const CONTROLS = 'button, label';
  const place = c => { const k = keyOf(c), h = k && document.querySelector('.' + CSS.escape(k));
    return {key: k, index: h ? [...h.querySelectorAll(CONTROLS)].indexOf(c) : -1, text: c.innerText, el: c}; };
  const found = p => { const h = p.key && document.querySelector('.' + CSS.escape(p.key));
    const c = h && p.index >= 0 ? h.querySelectorAll(CONTROLS)[p.index] : p.el;
    return c && c.isConnected && c.innerText === p.text ? c : null; };
  const queue = [];
  let waiting = false, certain = false, sentAt = 0, since = 0, timer = null, settling = false;
  const wait = sure => { waiting = true; certain = sure; sentAt = runNow(); since = performance.now();
    clearTimeout(timer); timer = setTimeout(expire, sure ? CAP : WAIT); };
  // A run under way is waited for (up to CAP); otherwise a click that need not start one frees the queue.
  const expire = () => { if (!waiting) return;
    if (!idle() && performance.now() - since < CAP) { timer = setTimeout(expire, 250); return; }
    note('no run came', Math.round(performance.now() - since)); free(); };
  const free = () => { waiting = false; certain = false; clearTimeout(timer); drain(); };
  const drain = () => { while (!waiting && queue.length && idle()) fire(queue.shift()); };
  const arrived = () => waiting && idle() && runNow() > sentAt;
  window.__prefkitSettled = () => !queue.length && !(waiting && certain);
  const fire = target => {
    look();
    if (target.screen !== screen) { dropped((target.click ? 'click' : target.name) + ': gone by its turn'); return; }
    if (target.click) {  // a held mouse click, on the control it was made on
      const c = found(target.click);
      if (!starts(c)) { note('click moot', target.click.text); return; }  // gone, or already so
      note('click', target.click.text);
      replaying = true; try { c.click(); } finally { replaying = false; }
      wait(true); return;
    }
    const button = target.key ? document.querySelector('.' + CSS.escape(target.key) + ' button') : target.button;
    if (!button || !button.isConnected || button.disabled) return;  // its item has gone: dropped
    // A text field hands what was typed to Streamlit when it loses focus, with every widget's value
    // as the page knows it: only now, after the runs before, are those values the server's.
    if (target.field && target.field.isConnected && document.activeElement === target.field) target.field.blur();
    button.click();
    wait(true);  // a button's click always starts a run
  };
  new MutationObserver(() => {
    look();
    if (settling || !(arrived() || (!waiting && queue.length && idle()))) return;
    settling = true;
    // The run's elements are on the page; their widgets take in the run's values a moment later
    // (after the browser paints): a click sent before then would send a widget's old value back.
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => {
      settling = false; if (arrived()) free(); else drain(); }, 0)));
  }).observe(document.body, {subtree: true, childList: true, attributes: true,
              attributeFilter: ['data-test-script-state']});
  // A click that changes a widget sends its own run: a shortcut pressed right after it waits for it,
  // and a click that starts a run made while another's is on its way waits its turn too.
  // A pill's press handler clicks it again when its click did not arrive (80 ms on): that echo of a
  // held click is held too. Our own replay is a click of the page's own, too, and goes through.
  let echoes = [], replaying = false;
  window.addEventListener('click', e => {
    if (!e.target.closest) return;
    const control = e.target.closest('button, label, input');
    // A pick in a select box's menu (drawn apart from the box, which keeps the focus) sends a run when
    // it changes the value outside a form: a key pressed right after waits for that run.
    const option = !control && e.isTrusted && e.target.closest('[role=option]');
    if (option) { const box = document.activeElement;
      if (option.getAttribute('aria-selected') !== 'true' && box && box.closest
          && box.closest('[data-testid=stSelectbox], [data-testid=stMultiSelect]') && !box.closest('[data-testid=stForm]')) {
        note('pick', option.innerText); wait(true); }
      return; }
    if (!e.isTrusted) {
      if (!replaying && echoes.some(x => x.control === control && performance.now() - x.at < 1000)) {
        e.preventDefault(); e.stopImmediatePropagation(); note('echo held', control.innerText);
      }
      return;
    }
    if (!control || (control.tagName === 'BUTTON' && control.hasAttribute('aria-haspopup'))) return;
    const input = inputOf(control);
    if (input && (typing(input) || (input.type === 'radio' && input.checked))) return;  // no run
    const sure = starts(control);
    if ((waiting && certain) || queue.length) {  // a run is on its way
      if (!sure) return;  // starts no run of its own: nothing to keep in order
      e.preventDefault();
      e.stopImmediatePropagation();  // the page sees it on its turn
      look(); note('held', control.innerText);
      echoes = [...echoes.filter(x => performance.now() - x.at < 1000), {control, at: performance.now()}];
      queue.push({click: place(control.tagName === 'INPUT' && control.closest('label') || control), screen});
      drain();
      return;
    }
    wait(sure);
  }, true);
  window.addEventListener('keydown', e => {
    const focus = document.activeElement;
    const focused = focus && focus !== document.body && focus !== document.documentElement;
    const inText = focused && typing(focus);
    // Esc in an open menu (a select box's) or on the word picker's keyboard selection closes that alone:
    // the control has it, and no Esc shortcut of the page (Streamlit's binding lets Esc through) after it.
    if (e.key === 'Escape' && focused && (focus.closest('[aria-expanded=true]') || focus.closest('.prefkit-spans')?.__kbd)) {
      inside = e; return; }
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
    queue.push({key, button, field: inText ? focus : null, screen, name: e.key});
    drain();
  }, true);
  let inside = null;
  document.documentElement.addEventListener('keydown', e => { if (e === inside) e.stopImmediatePropagation(); });
}
