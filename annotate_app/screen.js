/* prefkit: a new problem is scrolled into view */
if (!window.__prefkitProblems) { window.__prefkitProblems = true;
  const app = () => document.querySelector('[data-testid=stApp]');  // looked up each time: React may remount it
  const scroller = el => { for (let b = el.parentElement; b && b !== document.body; b = b.parentElement) {
    const o = getComputedStyle(b).overflowY;
    if ((o === 'auto' || o === 'scroll') && b.scrollHeight > b.clientHeight + 2) return b; } return null; };
  // Each new problem is brought into view for a moment after its run (the run's last elements can
  // still move it), then left alone: the annotator's own scrolling is never fought.
  const first = new Map();
  const fresh = k => { if (!first.has(k)) first.set(k, performance.now()); return performance.now() - first.get(k) < 1500; };
  const look = () => {
    const marks = [...document.querySelectorAll('[class*="st-key-problem-"]')].map(m => [m,
      [...m.classList].find(c => c.startsWith('st-key-problem-'))]).filter(([, k]) => k && fresh(k));
    const row = marks.find(([, k]) => k.startsWith('st-key-problem-row-'));
    const box = row ? scroller(row[0]) : null;  // the pane the row is in, not the page
    if (box && box !== document.querySelector('[data-testid=stMain]')) {
      box.scrollTop += row[0].getBoundingClientRect().top - box.getBoundingClientRect().top - 24;
    }
    const top = marks.find(([, k]) => k.startsWith('st-key-problem-top-'));
    if (top) top[0].scrollIntoView({block: 'nearest'});
  };
  // A new problem reaches the page with its run's end, before it, or in the same React commit (the
  // run state then never visibly changes): look when the app is idle and shows a mark not seen yet.
  const known = new Set();
  new MutationObserver(() => {
    if (app()?.getAttribute('data-test-script-state') !== 'notRunning') return;
    const unseen = [...document.querySelectorAll('[class*="st-key-problem-"]')].flatMap(m => [...m.classList])
      .filter(c => c.startsWith('st-key-problem-') && !known.has(c));
    if (!unseen.length) return;
    unseen.forEach(k => known.add(k));
    requestAnimationFrame(look); [150, 500, 1000].forEach(ms => setTimeout(look, ms));
  }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-test-script-state']});
}