"""Annotation app in a real browser: key press -> next item rendered, and the CPU each submit costs.

Drives Debian chromium (Playwright, the flags the browser tests use) against ``prefkit annotate serve``
on ``preference_match`` projects built like ``bench_app.py`` builds them:

- 1,000 items, 1 annotator
- 100,000 items / 300,000 events, 1 annotator who already holds 15,000 labels
- 10,000 items / 30,000 events, 8 and then 16 annotators at once (one browser, one context each)
- a declared kind's long item: 300 memory-QA items with a 96-turn history (tests/memoryqa.py), 1 annotator
- Streamlit's floor (``floor_app.py``: one header and one button in a fragment, same server options,
  same harness) at 1, 8 and 16: what any Streamlit page pays on the machine, prefkit or not

on SQLite and, with ``--backends sqlite,postgresql``, on a fresh PostgreSQL database per project
(``--pg-url`` or ``$PREFKIT_TEST_PG_URL``, a URL allowed to create databases), side by side.

Latency is measured inside the page: from the ``keydown`` of "1" to the moment the next item's header
is in the page and the script run has finished (a MutationObserver, ``performance.now()``), so the
Python driver's own scheduling does not count. Each annotator presses the next key as soon as the
next item is there and the key guard takes keys for it (no reading time: the most load a team can put
on one server). Keys pressed less than ``keys.BURST_MS`` (250 ms) apart are one burst, which belongs to
the item it began on, so a key that quick after the last one would be dropped on the new item: the
driver waits out the rest of those 250 ms from its previous key first (before the key press, so not
in the latency). CPU per submit
comes from ``/proc``: the Streamlit process (server), PostgreSQL's processes (database, local server
only), every Chromium process (browser) and the Playwright driver (harness). Every row also shows the
library-level numbers of the same project: ``bench_app.library_submits``, the calls behind one
submit, without Streamlit. With ``LABEL_STUDIO_URL`` set, the same step in Label Studio's own UI.

With ``--assisted-rounds N`` the 1,000-item row is also run with a model's suggestion on every item
(``prefkit suggest``'s records, every item on the assisted arm), confirmed with Enter: N rounds, each
one plain run (key "1") then one assisted run (Enter) on two projects served side by side, so the two
are measured under the same load.

With ``--think-ms N`` the team rows are also run with annotators who read each item (N ms, 0.5-1.5x
at random) before pressing the key: extra rows; latency is still measured from the key press.

Usage: python bench/bench_browser.py [--submits 200] [--quick] [--backends sqlite,postgresql] [--think-ms 2000]
       python bench/bench_browser.py --only 100k --only declared --submits 100
       python bench/bench_browser.py --only-assisted --assisted-rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_app import build, library_submits  # noqa: E402
from prefkit.curation.project import Project  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = "--no-sandbox --disable-gpu --disable-background-networking --disable-component-update --disable-sync --no-first-run".split()
PASSWORD = "bench-passw0rd"
TITLE = "Preference matching"
CLK_TCK = os.sysconf("SC_CLK_TCK")

# In-page clock: keydown -> next header in the page with the run finished. Pushes ms to window.__lat
# and wakes the driver's wait (a promise, not a poll every frame: the harness should cost little of
# the CPU it measures). textContent, not innerText: reading it forces no layout.
OBSERVER = """() => {
  const header = () => { for (const e of document.querySelectorAll('h2')) { const t = e.closest('[data-testid=stMarkdownContainer]').textContent;
      if (e.textContent.startsWith('TITLE · ')) return t; } return ''; };
  const app = document.querySelector('[data-testid=stApp]');
  const idle = () => app.getAttribute('data-test-script-state') === 'notRunning';
  window.__lat = []; window.__exc = 0; window.__t0 = null; window.__wake = null; window.__header = header;
  const check = () => {
    if (window.__t0 === null || !idle()) return;
    const h = header();
    if (!h || h === window.__before) return;
    window.__lat.push(performance.now() - window.__t0); window.__t0 = null;
    if (document.querySelector('[data-testid=stException]')) window.__exc++;
    if (window.__wake) { const wake = window.__wake; window.__wake = null; wake(); }
  };
  new MutationObserver(check).observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
}"""
WAIT = "n => window.__lat.length > n || new Promise(resolve => { window.__wake = resolve; })"
# The clock starts at the keydown, seen first: installed before the page's own scripts, whose key guard
# (annotate_app/keys.py) takes a shortcut's keydown for its button alone (stopImmediatePropagation).
KEYDOWN = """window.addEventListener('keydown', () => {
  if (window.__header) { window.__t0 = performance.now(); window.__before = window.__header(); } }, true);"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads), from /proc."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mib(pid: int) -> float:
    return int(_stat(pid)[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def tree_cpu(root: int, skip: int) -> dict[str, float]:
    """CPU seconds of ``root``'s live descendants (not ``skip`` and its own): Chromium's processes
    (its browser, renderers, GPU and utility processes) and the rest (Playwright's node driver)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                children.setdefault(int(_stat(int(d.name))[1]), []).append(int(d.name))
            except OSError:
                continue  # ended meanwhile
    out = {"browser": 0.0, "harness": 0.0}
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            if pid == skip:
                continue
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
                out["browser" if "chromium" in exe else "harness"] += cpu_s(pid)
            except OSError:
                continue
            todo.append(pid)
    return out


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def make_project(root: Path, items: int, events: int, database: str | None) -> Project:
    """``bench_app.build`` plus real (argon2) passwords for its 20 annotators."""
    from argon2 import PasswordHasher

    project = build(root, items, events, database)
    with project.store.write() as conn:
        conn.execute(project.store.t["users"].update().values(password_hash=PasswordHasher().hash(PASSWORD)))
    return project


class Server:
    """``prefkit annotate serve`` on a free port; its pid is the Streamlit process (it execs).
    With ``app``: that Streamlit script, served with the same options (the floor)."""

    def __init__(self, project: Project | None, app: Path | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if app is None:
            env = {**os.environ, "PREFKIT_PROJECT": str(project.root)}
            cmd = [
                str(Path(sys.executable).parent / "prefkit"),
                "annotate",
                "serve",
                "--port",
                str(self.port),
            ]
        else:
            from prefkit.cli.annotate_cmds import streamlit_argv

            env, cmd = dict(os.environ), streamlit_argv(self.port, "127.0.0.1")
            cmd[cmd.index("run") + 1] = str(app)
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


async def open_annotator(browser, url: str, user: str | None, title: str = TITLE):
    """A new browser context signed in as ``user`` on its first item of the kind called ``title``
    (``None``: the floor app)."""
    ctx = await browser.new_context(viewport={"width": 1440, "height": 1000})
    await ctx.add_init_script(KEYDOWN)
    page = await ctx.new_page()
    page.set_default_timeout(120_000)
    await page.goto(url)
    if user is None:
        await page.get_by_text(re.compile(f"^{TITLE} · \\d+ left for you")).first.wait_for()
        await page.evaluate(OBSERVER.replace("TITLE", TITLE))
        return page
    await page.get_by_label("User name").fill(user)
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_text(f"signed in as {user}").wait_for()
    if title == TITLE:  # the only kind with work otherwise: chosen already
        await page.get_by_role("radio", name=title, exact=True).click()
    await page.get_by_role("button", name="Start annotating").click()
    await page.get_by_text(re.compile(f"^{re.escape(title)} · \\d+ left for you")).first.wait_for()
    await page.wait_for_function(
        "() => document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning'"
    )
    await page.evaluate(OBSERVER.replace("TITLE", title))
    return page


#: The key guard takes a key for the item on screen (its last key was a burst's length ago).
READY = "() => !window.__prefkitKeysReady || window.__prefkitKeysReady()"


async def label(page, n: int, errors: list[str], think_ms: int = 0, key: str = "1") -> list[float]:
    """``n`` submits with ``key`` ("1"; "Enter" confirms a suggestion); each waits for the next item before the next key press (and,
    with ``think_ms``, reads it first: a pause drawn uniformly from 0.5 to 1.5 times ``think_ms``)."""
    rng = random.Random(id(page))
    for i in range(n):
        if think_ms:
            await asyncio.sleep(think_ms * rng.uniform(0.5, 1.5) / 1000)
        await page.wait_for_function(READY)  # not a burst across items (annotate_app/keys.py)
        await page.keyboard.press(key)
        try:
            await asyncio.wait_for(page.evaluate(WAIT, i), timeout=60)
        except TimeoutError:  # never showing the next item is an error, not a hang
            errors.append(f"submit {i}: no next item within 60 s")
            await page.evaluate("() => { window.__lat.push(NaN); window.__t0 = null; }")
    if exceptions := await page.evaluate("() => window.__exc"):
        errors.append(f"{exceptions} submit(s) showed an exception")
    return [x for x in await page.evaluate("() => window.__lat") if x == x]


async def run_scenario(
    url: str,
    users: list[str],
    submits: int,
    pid: int,
    db_cpu,
    think_ms: int = 0,
    key: str = "1",
    title: str = TITLE,
) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pages = [await open_annotator(browser, url, u, title) for u in users]
        errors: list[str] = []
        cpu0, tree0, db0, wall0 = cpu_s(pid), tree_cpu(os.getpid(), pid), db_cpu(), time.perf_counter()
        results = await asyncio.gather(*(label(p, submits, errors, think_ms, key) for p in pages))
        cpu1, tree1, db1, wall1 = cpu_s(pid), tree_cpu(os.getpid(), pid), db_cpu(), time.perf_counter()
        await browser.close()
    lat = [x for r in results for x in r]
    per = max(len(lat), 1)
    return {
        "n": len(lat),
        "p50": statistics.median(lat),
        "p95": pct(lat, 95),
        "max": max(lat),
        "errors": errors,
        "cpu_ms": (cpu1 - cpu0) * 1000 / per,
        "db_ms": None if db0 is None or db1 is None else (db1 - db0) * 1000 / per,
        "browser_ms": (tree1["browser"] - tree0["browser"]) * 1000 / per,
        "harness_ms": (tree1["harness"] - tree0["harness"]) * 1000 / per,
        "submits_per_s": len(lat) / (wall1 - wall0),
    }


class Backend:
    """Where a scenario's project lives: its own SQLite file, or a fresh PostgreSQL database."""

    def __init__(self, name: str, pg_url: str | None):
        self.name, self.pg_url, self.db_name = name, pg_url, None
        self.db_cpu = lambda: None
        if name == "postgresql":
            from bench_postgres import PgServerCpu

            self.db_cpu = PgServerCpu(pg_url).seconds

    def database(self) -> str | None:
        if self.name == "sqlite":
            return None
        from bench_postgres import _admin
        from sqlalchemy.engine import make_url

        self.db_name = "prefkit_bench_" + uuid.uuid4().hex[:8]
        _admin(self.pg_url, f'CREATE DATABASE "{self.db_name}"')
        return make_url(self.pg_url).set(database=self.db_name).render_as_string(hide_password=False)

    def drop(self) -> None:
        if self.db_name:
            from bench_postgres import _admin

            _admin(self.pg_url, f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')
            self.db_name = None


def fmt_ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} ms"


def scenario(
    backend: Backend,
    items: int,
    events: int,
    annotators: list[int],
    submits: int,
    tmp: Path,
    think_ms: int = 0,
) -> None:
    """Rows for ``annotators`` at once (no reading time), then, with ``think_ms``, the same team
    reading each item first (rows ``8, reading``)."""
    t0 = time.perf_counter()
    project = make_project(tmp / uuid.uuid4().hex[:8], items, events, backend.database())
    print(
        f"[{backend.name}] built {items:,} items, {events:,} events in {time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    project.close()
    try:
        server = Server(project)
        try:
            rows = []
            runs = [(n, 0) for n in annotators] + [(n, think_ms) for n in annotators if think_ms]
            for n, think in runs:
                users = [f"ann{i:02d}" for i in range(n)]
                run = run_scenario(server.url, users, submits, server.proc.pid, backend.db_cpu, think)
                rows.append((f"{n}, reading {think} ms" if think else n, asyncio.run(run)))
            rss = rss_mib(server.proc.pid)
        finally:
            server.stop()
        # The same project without Streamlit: the calls behind one submit (an annotator the browser
        # runs did not use, so a queue of the same shape).
        project = Project(project.root)
        lib, _ = library_submits(project, "ann19", submits)
        project.close()
        for n, r in rows:
            print(
                f"| {backend.name} | {items:,} items / {events:,} events | {n} | {r['p50']:.0f} ms | {r['p95']:.0f} ms | "
                f"{r['max']:.0f} ms | {fmt_ms(r['cpu_ms'])} | {fmt_ms(r['db_ms'])} | {fmt_ms(r['browser_ms'])} | "
                f"{fmt_ms(r['harness_ms'])} | {r['submits_per_s']:.1f} | {r['n']} | {len(r['errors'])} | "
                f"{statistics.median(lib):.1f} ms | {pct(lib, 95):.1f} ms |",
                flush=True,
            )
            for e in r["errors"][:5]:
                print(f"    error: {e}", flush=True)
        print(f"    server memory after the runs: {rss:.0f} MiB RSS", file=sys.stderr, flush=True)
    finally:
        backend.drop()


def with_suggestions(project: Project) -> None:
    """A suggestion for every ``preference_match`` task, every item on the assisted arm (control share 0)."""
    from prefkit.curation.store import Suggestion, SuggestionRun

    store = project.store
    run = SuggestionRun("sugg-bench", "preference_match", "bench-judge", "offline", True, "bench", 0, {})
    values = ("fully", "partially", "not_covered")
    store.suggestions.add(
        run,
        [
            Suggestion(
                Suggestion.make_id(run.run_id, t.task_id),
                run.run_id,
                t.task_id,
                t.kind,
                {"coverage": values[i % 3]},
                {},
            )
            for i, t in enumerate(store.labels.tasks(kind="preference_match"))
        ],
    )
    cfg = project.root / "prefkit.toml"
    cfg.write_text(cfg.read_text().replace("assist_control_share = 0.2", "assist_control_share = 0.0"))


def assisted(rounds: int, submits: int, tmp: Path) -> None:
    """The 1,000-item row without and with suggestions, alternated ``rounds`` times (same load)."""
    plain = make_project(tmp / "plain", 1_000, 0, None)
    helped = make_project(tmp / "assisted", 1_000, 0, None)
    with_suggestions(helped)
    plain.close()
    helped.close()
    servers = {"plain (key 1)": (Server(plain), "1"), "assisted (Enter confirms)": (Server(helped), "Enter")}
    try:
        for i in range(rounds):
            for name, (server, key) in servers.items():
                run = run_scenario(
                    server.url, [f"ann{i:02d}"], submits, server.proc.pid, lambda: None, key=key
                )
                r = asyncio.run(run)
                print(
                    f"| sqlite | 1,000 items, {name}, round {i + 1} | 1 | {r['p50']:.0f} ms | {r['p95']:.0f} ms | "
                    f"{r['max']:.0f} ms | {fmt_ms(r['cpu_ms'])} | – | {fmt_ms(r['browser_ms'])} | "
                    f"{fmt_ms(r['harness_ms'])} | {r['submits_per_s']:.1f} | {r['n']} | {len(r['errors'])} | – | – |",
                    flush=True,
                )
                for e in r["errors"][:5]:
                    print(f"    error: {e}", flush=True)
    finally:
        for server, _key in servers.values():
            server.stop()


def floor(runs: list[tuple[int, int]]) -> None:
    """The same harness against ``floor_app.py`` (Streamlit alone, same options): what any page pays."""
    server = Server(None, Path(__file__).with_name("floor_app.py"))
    try:
        for n, submits in runs:  # (annotators at once, submits each)
            r = asyncio.run(run_scenario(server.url, [None] * n, submits, server.proc.pid, lambda: None))
            print(
                f"| – | Streamlit floor (one header, one button) | {n} | {r['p50']:.0f} ms | {r['p95']:.0f} ms | "
                f"{r['max']:.0f} ms | {fmt_ms(r['cpu_ms'])} | – | {fmt_ms(r['browser_ms'])} | "
                f"{fmt_ms(r['harness_ms'])} | {r['submits_per_s']:.1f} | {r['n']} | {len(r['errors'])} | – | – |",
                flush=True,
            )
    finally:
        server.stop()


def label_studio_ui(steps: int) -> None:
    """The same step in Label Studio's labeling UI: press "1" (fully) and Ctrl+Enter (submit), until
    the next task is on screen, over a 1,000-task preference_match project."""
    url = os.environ.get("LABEL_STUDIO_URL")
    if not (url and os.environ.get("LABEL_STUDIO_ADMIN_PASSWORD")):
        print("Label Studio UI: skipped (no LABEL_STUDIO_URL; source the env file .ci/labelstudio.sh prints)")
        return
    from bench_labelstudio import _pairs
    from playwright.sync_api import sync_playwright
    from prefkit.annotate_app.labelstudio import bridge
    from prefkit.schemas.curation import Provenance

    with tempfile.TemporaryDirectory() as tmp:
        project = Project.init(Path(tmp) / "ls", name="bench-ls-ui")
        project.store.content.add_preference_pairs(_pairs(0, 1000), Provenance(source="bench"))
        report = bridge.push(project, "preference_match", url)
        project.close()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.set_default_timeout(120_000)
        page.route(
            "**/*",
            lambda r: r.continue_() if r.request.url.startswith((url, "data:", "blob:")) else r.abort(),
        )
        page.goto(f"{url}/user/login/")
        page.fill("input[name=email]", os.environ["LABEL_STUDIO_ADMIN_EMAIL"])
        page.fill("input[name=password]", os.environ["LABEL_STUDIO_ADMIN_PASSWORD"])
        page.click("button[type=submit]")
        page.wait_for_url(lambda u: "/user/login" not in u)
        page.goto(f"{url}/projects/{report.ls_project_id}/data?labeling=1")
        editor = page.locator(".lsf-main-view")
        editor.get_by_text("Does the reply follow preference number").first.wait_for()
        times = []
        for _ in range(steps):
            before = editor.get_by_text("Does the reply follow preference number").first.inner_text()
            t0 = time.perf_counter()
            page.keyboard.press("1")
            page.keyboard.press("Control+Enter")
            page.wait_for_function(
                "b => { const e = [...document.querySelectorAll('.lsf-main-view *')].find(x => x.childElementCount === 0"
                " && x.innerText && x.innerText.includes('Does the reply follow preference number'));"
                " return e && e.innerText !== b; }",
                arg=before,
            )
            times.append((time.perf_counter() - t0) * 1000)
        browser.close()
    print(
        f"| Label Studio UI (its own server) | 1,000 tasks | 1 | {statistics.median(times):.0f} ms | "
        f"{pct(times, 95):.0f} ms | {max(times):.0f} ms | – | – | – | – | – | {len(times)} | 0 | – | – |"
    )


#: The declared case: a memory-QA item (tests/memoryqa.py) with a 96-turn history (8 sessions x 12 turns
#: of ~60 words), its verdict alone asked, so one key labels an item; 300 items.
LONG = {"name": "long_chat", "title": "Is the answer right, given the history?", "items": 300}


def declared(submits: int, tmp: Path) -> None:
    """The declared case's row: one annotator, key "1" (``correct``) per item."""
    import json

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import memoryqa
    from argon2 import PasswordHasher
    from prefkit.curation.annotation import work
    from prefkit.curation.annotation.declared import use_project_kinds

    root = tmp / "declared"
    project = Project.init(root, name="bench-declared")
    toml = memoryqa.TOML.split("[[questions]]")[0].replace(memoryqa.NAME, LONG["name"])
    toml = toml.replace("Does the answer remember the user?", LONG["title"])
    verdict = next(q for q in memoryqa.TOML.split("[[questions]]") if 'name = "verdict"' in q)
    (root / "kinds").mkdir(exist_ok=True)
    (root / "kinds" / f"{LONG['name']}.toml").write_text(toml + "[[questions]]" + verdict, encoding="utf-8")
    use_project_kinds(root, project.store)
    items = root / "items.jsonl"
    lines = (
        json.dumps(memoryqa.item(n, sessions=8, turns=12, words=60)) + "\n" for n in range(LONG["items"])
    )
    items.write_text("".join(lines), encoding="utf-8")
    work.create(project, "long", LONG["name"], items=items)
    project.store.accounts.add_user("ann00", "annotator", PASSWORD)
    with project.store.write() as conn:
        conn.execute(project.store.t["users"].update().values(password_hash=PasswordHasher().hash(PASSWORD)))
    project.close()
    server = Server(project)
    try:
        r = asyncio.run(
            run_scenario(server.url, ["ann00"], submits, server.proc.pid, lambda: None, title=LONG["title"])
        )
    finally:
        server.stop()
    print(
        f"| sqlite | declared, {LONG['items']} items of 96 turns | 1 | {r['p50']:.0f} ms | {r['p95']:.0f} ms | "
        f"{r['max']:.0f} ms | {fmt_ms(r['cpu_ms'])} | – | {fmt_ms(r['browser_ms'])} | {fmt_ms(r['harness_ms'])} | "
        f"{r['submits_per_s']:.1f} | {r['n']} | {len(r['errors'])} | – | – |",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--submits", type=int, default=200, help="submits per annotator (a quarter of it at 8 and 16)"
    )
    ap.add_argument("--quick", action="store_true", help="only the 1,000-item project (a smoke run)")
    ap.add_argument("--backends", default="sqlite", help="comma-separated: sqlite, postgresql")
    ap.add_argument(
        "--pg-url",
        default=os.environ.get("PREFKIT_TEST_PG_URL"),
        help="PostgreSQL URL that may create databases (default: $PREFKIT_TEST_PG_URL)",
    )
    ap.add_argument(
        "--think-ms",
        type=int,
        default=0,
        help="also run the 8 and 16 annotators reading each item about this long before the key "
        "(0.5-1.5x, uniform; extra rows, the zero-reading rows stay as they are)",
    )
    ap.add_argument("--no-floor", action="store_true", help="skip Streamlit's floor (floor_app.py)")
    ap.add_argument(
        "--assisted-rounds",
        type=int,
        default=0,
        help="also run the 1,000-item row plain and with suggestions (Enter), alternated N times",
    )
    ap.add_argument("--only-assisted", action="store_true", help="only the --assisted-rounds rows")
    ap.add_argument(
        "--only",
        choices=["100k", "declared"],
        action="append",
        help="only these rows (repeatable): the 100,000-item one, the declared 96-turn one",
    )
    args = ap.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in ("sqlite", "postgresql"):
            ap.error(f"unknown backend {b!r} (sqlite, postgresql)")
        if b == "postgresql" and not args.pg_url:
            ap.error("postgresql needs --pg-url or $PREFKIT_TEST_PG_URL")
    load = os.getloadavg()
    print(
        f"nproc={os.cpu_count()}  load average {load[0]:.2f} {load[1]:.2f} (other work on the machine counts)"
    )
    print(
        "| backend | project | annotators at once | p50 | p95 | max | server CPU per submit | database CPU "
        "per submit | browser CPU per submit | harness CPU per submit | submits/s | submits | errors | "
        "library p50 | library p95 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    team = max(20, args.submits // 4)
    if args.only_assisted:
        with tempfile.TemporaryDirectory() as tmp:
            assisted(max(1, args.assisted_rounds), args.submits, Path(tmp))
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return
    if args.only:
        with tempfile.TemporaryDirectory() as tmp:
            if "100k" in args.only:
                scenario(Backend("sqlite", None), 100_000, 300_000, [1], args.submits, Path(tmp))
            if "declared" in args.only:
                declared(args.submits, Path(tmp))
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        if args.assisted_rounds:
            assisted(args.assisted_rounds, args.submits, Path(tmp) / "assist")
        for name in backends:
            backend = Backend(name, args.pg_url)
            scenario(backend, 1_000, 0, [1], args.submits, Path(tmp))
            if not args.quick:
                scenario(backend, 100_000, 300_000, [1], args.submits, Path(tmp))
                if name == "sqlite":
                    declared(args.submits, Path(tmp))
                scenario(backend, 10_000, 30_000, [8, 16], team, Path(tmp), args.think_ms)
        if not args.no_floor:
            floor([(1, args.submits)] + ([] if args.quick else [(8, team), (16, team)]))
    label_studio_ui(min(args.submits, 50))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
