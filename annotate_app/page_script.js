
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
