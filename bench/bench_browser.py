"""Annotation app in a real browser: key press -> next item rendered, and server CPU per submit.

Drives Debian chromium (Playwright, the flags the browser tests use) against ``prefkit annotate serve``
on ``preference_match`` projects built like ``bench_app.py`` builds them:

- 1,000 items, 1 annotator (also: server CPU per submit, from /proc of the Streamlit process)
- 100,000 items / 300,000 events, 1 annotator who already holds 15,000 labels
- 10,000 items / 30,000 events, 8 and then 16 annotators at once (one browser, one context each)

Latency is measured inside the page: from the ``keydown`` of "1" to the moment the next item's header
is on screen and the script run has finished (a MutationObserver, ``performance.now()``), so the
Python driver's own scheduling does not count. Then the library-level numbers (``bench_app.py``)
and, when ``LABEL_STUDIO_URL`` is set, the same step in Label Studio's own labeling UI.

Usage: python bench/bench_browser.py [--submits 200] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_app import build  # noqa: E402

from curation.project import Project  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]  # fmt: skip
PASSWORD = "bench-passw0rd"
TITLE = "Preference matching"
CLK_TCK = os.sysconf("SC_CLK_TCK")

# In-page clock: keydown -> next header on screen with the run finished. Pushes ms to window.__lat.
OBSERVER = """() => {
  const header = () => [...document.querySelectorAll('h4')].map(e => e.innerText).find(t => t.includes('TITLE · item')) || '';
  const idle = () => document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning';
  window.__lat = []; window.__t0 = null;
  document.addEventListener('keydown', () => { window.__t0 = performance.now(); window.__before = header(); }, true);
  const check = () => { if (window.__t0 !== null && header() !== window.__before && header() && idle()) {
      window.__lat.push(performance.now() - window.__t0); window.__t0 = null; } };
  new MutationObserver(check).observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
}""".replace("TITLE", TITLE)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def make_project(root: Path, items: int, events: int) -> Project:
    """``bench_app.build`` plus real (argon2) passwords for its 20 annotators."""
    from argon2 import PasswordHasher

    project = build(root, items, events)
    with project.store.write() as conn:
        conn.execute(project.store.t["users"].update().values(password_hash=PasswordHasher().hash(PASSWORD)))
    return project


class Server:
    """``prefkit annotate serve`` on a free port; its pid is the Streamlit process (it execs)."""

    def __init__(self, project: Project):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PREFKIT_PROJECT": str(project.root)}
        cmd = [str(Path(sys.executable).parent / "prefkit"), "annotate", "serve", "--port", str(self.port)]
        project.close()
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


async def open_annotator(browser, url: str, user: str):
    ctx = await browser.new_context(viewport={"width": 1440, "height": 1000})
    page = await ctx.new_page()
    page.set_default_timeout(120_000)
    outside: list[str] = []
    page.on(
        "request",
        lambda r: None if r.url.startswith(("http://127.0.0.1", "data:", "blob:")) else outside.append(r.url),
    )
    await page.goto(url)
    await page.get_by_label("User name").fill(user)
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_text(f"signed in as {user}").wait_for()
    await page.get_by_role("radio", name=TITLE, exact=True).click()
    await page.get_by_role("button", name="Start annotating").click()
    await page.get_by_text(f"{TITLE} · item").first.wait_for()
    await settle(page)
    await page.evaluate(OBSERVER)
    return page


async def settle(page) -> None:
    await page.wait_for_function(
        "() => document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning'"
    )


async def label(page, n: int, errors: list[str]) -> list[float]:
    """``n`` submits with the "1" key; each waits for the next item before the next key press."""
    for i in range(n):
        await page.keyboard.press("1")
        try:
            await page.wait_for_function(f"() => window.__lat.length > {i}", timeout=60_000)
        except Exception as exc:  # a submit that never shows the next item is an error, not a hang
            errors.append(f"submit {i}: {type(exc).__name__}")
            await page.evaluate("() => { window.__lat.push(NaN); window.__t0 = null; }")
        await settle(page)
        if await page.locator("[data-testid=stException]").count():
            errors.append(f"submit {i}: exception on the page")
    return [x for x in await page.evaluate("() => window.__lat") if x == x]


async def run_scenario(url: str, users: list[str], submits: int, pid: int) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pages = [await open_annotator(browser, url, u) for u in users]
        errors: list[str] = []
        cpu0, wall0 = cpu_s(pid), time.perf_counter()
        results = await asyncio.gather(*(label(p, submits, errors) for p in pages))
        cpu1, wall1 = cpu_s(pid), time.perf_counter()
        await browser.close()
    lat = [x for r in results for x in r]
    done = len(lat)
    return {
        "n": done,
        "p50": statistics.median(lat),
        "p95": pct(lat, 95),
        "max": max(lat),
        "errors": errors,
        "cpu_ms": (cpu1 - cpu0) * 1000 / max(done, 1),
        "submits_per_s": done / (wall1 - wall0),
    }


def scenario(name: str, items: int, events: int, annotators: list[int], submits: int, tmp: Path) -> list[str]:
    t0 = time.perf_counter()
    project = make_project(tmp / name, items, events)
    print(
        f"[{name}] built {items:,} items, {events:,} events in {time.perf_counter() - t0:.0f} s", flush=True
    )
    lines = []
    server = Server(project)
    try:
        for n in annotators:
            users = [f"ann{i:02d}" for i in range(n)]
            r = asyncio.run(run_scenario(server.url, users, submits, server.proc.pid))
            line = (f"| {items:,} items / {events:,} events | {n} | {r['p50']:.0f} ms | {r['p95']:.0f} ms | "
                    f"{r['max']:.0f} ms | {r['cpu_ms']:.1f} ms | {r['submits_per_s']:.1f} | {r['n']} | {len(r['errors'])} |")  # fmt: skip
            print(line, flush=True)
            for e in r["errors"][:5]:
                print(f"    error: {e}", flush=True)
            lines.append(line)
    finally:
        server.stop()
    return lines


def label_studio_ui(steps: int) -> None:
    """The same step in Label Studio's labeling UI: press "1" (fully) and Ctrl+Enter (submit), until
    the next task is on screen, over a 1,000-task preference_match project."""
    url = os.environ.get("LABEL_STUDIO_URL")
    if not (url and os.environ.get("LABEL_STUDIO_ADMIN_PASSWORD")):
        print("Label Studio UI: skipped (no LABEL_STUDIO_URL; source the env file .ci/labelstudio.sh prints)")
        return
    from bench_labelstudio import _pairs
    from playwright.sync_api import sync_playwright

    from annotate_app.labelstudio import bridge
    from schemas.curation import Provenance

    with tempfile.TemporaryDirectory() as tmp:
        project = Project.init(Path(tmp) / "ls", name="bench-ls-ui")
        project.store.add_preference_pairs(_pairs(0, 1000), Provenance(source="bench"))
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
    print(f"| Label Studio UI, 1,000 tasks | 1 | {statistics.median(times):.0f} ms | {pct(times, 95):.0f} ms | "
          f"{max(times):.0f} ms | – | – | {len(times)} | 0 |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submits", type=int, default=200, help="submits per annotator")
    ap.add_argument("--quick", action="store_true", help="only the 1,000-item project (a smoke run)")
    ap.add_argument("--skip-library", action="store_true", help="do not run bench_app.py afterwards")
    args = ap.parse_args()
    print(
        f"nproc={os.cpu_count()}  load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (other work on the machine counts)"
    )
    print(
        "| project | annotators at once | p50 | p95 | max | server CPU per submit | submits/s | submits | errors |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        scenario("small", 1_000, 0, [1], args.submits, Path(tmp))
        if not args.quick:
            scenario("large", 100_000, 300_000, [1], args.submits, Path(tmp))
            scenario("team", 10_000, 30_000, [8, 16], max(20, args.submits // 4), Path(tmp))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    label_studio_ui(min(args.submits, 50))
    if not args.skip_library:
        print("library level (bench_app.py, same machine, same run):", flush=True)
        quiet = {
            k: v for k, v in os.environ.items() if not k.startswith("LABEL_STUDIO")
        }  # LS: measured above
        subprocess.run([sys.executable, str(Path(__file__).with_name("bench_app.py")), "--submits", "300"],
                       env=quiet, check=False)  # fmt: skip


if __name__ == "__main__":
    main()
