"""The annotation app's test kit: test data (generated-style sessions, preference pairs, AlpsBench
packets from :mod:`fixtures_alps`, users and tasks), the app under Streamlit's AppTest (``app``), the
served app in Debian chromium (``serve``, ``chromium`` behind conftest's ``browser`` fixture, ``sign_in``,
``open_kind``, ``next_item``, ...), and app replicas in processes of their own (``replica``).

Sessions are written through the store's tables directly (dialogues, turns, sessions with a
``Session`` record without turns), the same rows the generation pipeline writes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import ROOT, require
from fixtures_alps import write_packets
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.project import Project
from prefkit.curation.store import Account, PreferencePair
from prefkit.schemas.curation import Provenance
from prefkit.schemas.generation import ChecklistItem, ContextFactor, ContextualPreference, Session, Turn

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

PASSWORD = "correct-horse-9"
HOSTILE = '<script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2"> **bold** $x$'
USERS = (("alice", "annotator"), ("bob", "annotator"), ("maya", "maintainer"))


def session_record(i: int) -> Session:
    pref = ContextualPreference(
        text=f"Keep answers about project {i} under five bullet points.",
        family="Style",
        preference_type="length",
    )
    factor = ContextFactor(
        factor_id=f"f{i}",
        type="activity",
        name=f"Project {i}",
        background="A side project.",
        task_types=["planning"],
        preference=pref,
    )
    return Session(
        session_id=f"sess_{i:04d}",
        persona_id="p1",
        index=i + 1,
        timestamp="2026-01-01T00:00:00Z",
        context_factor=factor,
        preference=pref,
        checklist=[
            ChecklistItem(question="Is the reply at most five bullet points?"),
            ChecklistItem(question="Does the reply avoid long paragraphs?"),
        ],
    )


def session_turns(i: int, hostile: bool) -> list[tuple[str, str]]:
    first = HOSTILE if hostile else f"Help me plan project {i}. I read this on my phone."
    return [
        ("user", first),
        ("assistant", "Here is a long plan with many paragraphs..."),
        ("user", "That is a lot to read on a small screen."),
        ("assistant", "- Step 1\n- Step 2\n- Step 3"),
    ]


def seed_sessions(project: Project, n: int, hostile_first: bool = False) -> None:
    for i in range(n):
        turns = [
            Turn(index=j, role=role, content=content)
            for j, (role, content) in enumerate(session_turns(i, hostile_first and i == 0))
        ]
        session = session_record(i).model_copy(update={"turns": turns})
        project.store.generation.add_session(session, {}, [None] * len(turns), Provenance(source="test"))


def seed_pairs(project: Project, n: int) -> None:
    pairs = [
        PreferencePair(
            f"pair_{i:04d}",
            f"Does the reply mention deadline {i}?",
            f"The user wants deadlines for task {i} called out.",
            "test-model",
        )
        for i in range(n)
    ]
    project.store.content.add_preference_pairs(pairs, Provenance(source="test.pairs"))


def make_project(
    root: Path, n: int = 6, overlap: int = 2, alps: bool = False, hostile: bool = False
) -> Project:
    """A project with users, sessions, pairs and tasks of every kind; with ``alps``, ``n`` AlpsBench
    packets written by :mod:`fixtures_alps` are imported and given memory-verification tasks."""
    project = Project.init(root, name="app-test")
    for name, role in USERS:
        project.store.accounts.add_user(name, role, PASSWORD)
    seed_sessions(project, n, hostile_first=hostile)
    seed_pairs(project, n)
    create_tasks(project, "preference_expressed", overlap=overlap, gold_rate=0)
    create_tasks(project, "preference_match", overlap=overlap, gold_rate=0)
    if alps:
        from prefkit.pipelines.ingest import alpsbench

        packets = write_packets(root.parent / f"{root.name}-packets", n)
        project.store.content.import_bundle(alpsbench.build_bundle(packets))
        create_tasks(project, "memory_verify", overlap=overlap, gold_rate=0)
    return project


def clone_project(template: Project, dest: Path) -> Project:
    """A copy of a closed template project (cheaper than building one again)."""
    template.close()
    shutil.copytree(template.root, dest)
    return Project(dest)


def project_fixtures(env: bool = False, **make: object):
    """The ``template`` (module scope, built once by :func:`make_project` with ``make``) and ``project`` (a
    fresh copy per test; with ``env``, also ``$PREFKIT_PROJECT``) fixtures of an app test module:
    ``template, project = project_fixtures(n=6, overlap=2)``."""

    @pytest.fixture(scope="module")
    def template(tmp_path_factory):
        project = make_project(tmp_path_factory.mktemp("tpl") / "proj", **make)
        project.close()
        return project

    @pytest.fixture
    def project(template, tmp_path, monkeypatch):
        project = clone_project(template, tmp_path / "proj")
        if env:
            monkeypatch.setenv("PREFKIT_PROJECT", str(project.root))
        yield project
        project.close()

    return template, project


#: Planted in every field the app displays: markup, a remote image, live-link candidates, a directive.
PAYLOAD = (
    '<img src="http://127.0.0.9:9/x.png" onerror="window.__pwned=1"> https://evil.example/p '
    "www.evil.example mail@evil.example [click](https://evil.example/l) ![i](https://evil.example/i.png) "
    ':red[red] $x$ <a href="https://evil.example/a">a</a>'
)


def hostile_tasks(batch: str = "wk" + PAYLOAD) -> list:
    """One task of every kind with ``PAYLOAD`` in every field a screen shows (ids and captions too)."""
    turns = [
        {"index": 0, "role": "user", "content": "turn0 " + PAYLOAD},
        {"index": 1, "role": "assistant", "content": "turn1 " + PAYLOAD},
        {"index": 2, "role": "user", "content": "turn2 " + PAYLOAD},
    ]
    memory = {
        "value": "value " + PAYLOAD,
        "label": "label " + PAYLOAD,
        "type": "type " + PAYLOAD,
        "evidence_text": "evidence " + PAYLOAD,
    }
    payloads = {
        "preference_expressed": {
            "dialogue_id": "dlg " + PAYLOAD,
            "persona_id": "p",
            "session_index": 1,
            "turns": turns,
            "context_factor": "context " + PAYLOAD,
            "preference": "preference " + PAYLOAD,
            "checklist": ["first " + PAYLOAD + "?", "second " + PAYLOAD + "?"],
        },
        "preference_match": {
            "pair_id": "pair",
            "checklist_item": "item " + PAYLOAD,
            "candidate": "candidate " + PAYLOAD,
            "instance_id": None,
            "origin": "origin " + PAYLOAD,
        },
        "memory_verify": {
            "dialogue_id": "dlg " + PAYLOAD,
            "turns": turns,
            "candidates": [
                {
                    "key": f"model {PAYLOAD}:0",
                    "model": "model " + PAYLOAD,
                    "memory": memory,
                    "valid": False,
                    "problems": ["problem " + PAYLOAD],
                    "evidence_flags": ["flag " + PAYLOAD],
                    "group": 0,
                }
            ],
        },
    }
    return [get_kind(k).make_task("ref " + PAYLOAD, p, 3, batch) for k, p in payloads.items()]


def qc_task(i: int):
    """A generated-task-check (``task_qc``) task about benchmark item ``b<i>`` (overlap 5)."""
    payload = {
        "track": "task3",
        "benchmark_id": f"b{i}",
        "question": "Does the message need the memory?",
        "generated": f"What should I cook tonight, number {i}?",
        "memory": "Diet: vegetarian",
        "gold_answer": "m1: vegetarian",
        "checks": {},
    }
    return get_kind("task_qc").make_task(f"alps:task3:b{i}", payload, 5, "default")


HOSTILE_LABELS = {
    "preference_expressed": (
        {"items": [{"item": 0, "expressed": True, "evidence": [0]}, {"item": 1, "expressed": False}]},
        {"items": [{"item": 0, "expressed": False}, {"item": 1, "expressed": True, "evidence": [2]}]},
    ),
    "preference_match": ({"coverage": "fully"}, {"coverage": "not_covered"}),
    "memory_verify": (
        {"decisions": [{"key": f"model {PAYLOAD}:0", "decision": "accept"}]},
        {"decisions": [{"key": f"model {PAYLOAD}:0", "decision": "reject", "reason": "other"}]},
    ),
}


def make_hostile_project(root: Path) -> Project:
    """Tasks of every kind with ``PAYLOAD`` everywhere; alice and bob disagree on each (with the
    payload as their comment), carol has them open, maya adjudicates."""
    project = Project.init(root, name="hostile")
    for name, role in (*USERS, ("carol", "annotator")):
        project.store.accounts.add_user(name, role, PASSWORD)
    project.store.labels.add_tasks(hostile_tasks())
    for kind, (first, second) in HOSTILE_LABELS.items():
        for who, values in (("alice", first), ("bob", second)):
            item = workflow.current_item(project, who, kind)
            workflow.submit(project, who, item, values, comment="comment " + PAYLOAD)
    return project


def memory_candidates(n: int) -> list[dict]:
    """``n`` valid candidate memories of a ``memory_verify`` payload, one group each."""
    return [
        {
            "key": f"m:{i}",
            "model": "m",
            "memory": {"value": f"User fact {i}", "label": "Preferences/Food", "type": "direct"},
            "valid": True,
            "problems": [],
            "evidence_flags": [],
            "group": i,
        }
        for i in range(n)
    ]


def set_control_share(root: Path, share: float) -> None:
    """Set ``assist_control_share`` in a project's prefkit.toml (the template's 0.2)."""
    cfg = root / "prefkit.toml"
    cfg.write_text(cfg.read_text().replace("assist_control_share = 0.2", f"assist_control_share = {share}"))


def with_share(project: Project, share: float, kind: str | None = None) -> Project:
    """``project`` with its assist control share set (re-read) and, with ``kind``, offline suggestions
    made for that kind's tasks (``memory_verify``'s is the programmatic evidence check: no model call)."""
    from prefkit.pipelines.llm import LLMLayer
    from prefkit.pipelines.suggestions import suggest

    set_control_share(project.root, share)
    project.__dict__.pop("config", None)
    if kind is not None:
        with LLMLayer(project.store, backend="offline", progress=False) as layer:
            suggest(project.store, layer, kind)
    return project


# -- the app under Streamlit's AppTest ------------------------------------------------------------------
APP = str(ROOT / "annotate_app" / "app.py")
ALICE = Account("alice", "annotator", None, True, "2026-01-01T00:00:00Z")
MAYA = Account("maya", "maintainer", None, True, "2026-01-01T00:00:00Z")


def app(user: Account | None = None, kind: str | None = None) -> AppTest:
    """A browser tab of the app (its own Streamlit session) after its first run: signed in as
    ``user``, on ``kind`` past its intro."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    if user:
        at.session_state["user"] = user
    if kind:
        at.session_state["kind"] = kind
        at.session_state[f"intro:{kind}"] = True
    return at.run()


# -- app replicas: what ``prefkit annotate serve`` is, one process each ----------------------------------
def replica(
    annotate: Callable[[Project, str, Path, list[str]], None],
    root: str,
    users: list[str],
    acks_dir: str,
    database: str | None = None,
) -> None:
    """One replica (the target of a spawned process): one ``Project`` (one connection pool) serving
    ``users`` at once, one thread each running ``annotate(project, user, acks file, errors)``; an error
    of any is written to ``acks_dir`` and the process exits 1."""
    if database:
        os.environ["PREFKIT_DATABASE_URL"] = database
    project = Project(root)
    errors: list[str] = []
    threads = [
        threading.Thread(target=annotate, args=(project, u, Path(acks_dir) / f"{u}.acks", errors))
        for u in users
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    project.close()
    if errors:
        Path(acks_dir, f"errors-{os.getpid()}.txt").write_text("\n".join(errors))
        raise SystemExit(1)


# -- the served app in Debian chromium (Playwright) -----------------------------------------------------
CHROMIUM = "/usr/bin/chromium"
ARGS = "--no-sandbox --disable-gpu --disable-background-networking --disable-component-update --disable-sync --no-first-run".split()
#: How the tests launch it: ``launch(**LAUNCH)``, through tests/chromium.sh (the omnibox's pages off).
LAUNCH = {"executable_path": str(ROOT / "tests" / "chromium.sh"), "args": ARGS}
SHOTS = ROOT / "artifacts" / "screenshots"


#: axe-core from npm (``.ci/axe.sh`` installs the pinned version into the git-ignored ``.ci/.npm``).
AXE = ROOT / ".ci" / ".npm" / "node_modules" / "axe-core" / "axe.min.js"


@functools.cache
def axe_script() -> str:
    """axe-core's script, installed with npm (``.ci/axe.sh``) when missing: CI fails without it (it
    must run there), a machine without npm skips."""
    if not AXE.exists() and shutil.which("npm"):
        subprocess.run(["bash", str(ROOT / ".ci" / "axe.sh")], check=False, capture_output=True, timeout=600)
    require(AXE.exists(), "axe-core is not installed and could not be: bash .ci/axe.sh (needs npm)")
    return AXE.read_text()


def axe_violations(page, impacts: tuple[str, ...] = ("serious", "critical")) -> list[dict]:
    """What axe-core finds on ``page`` as it is now (any page: it is injected each time, a navigation
    drops it), the violations of ``impacts``: ``[{id, impact, help, nodes: [[target, html, summary]]}]``."""
    page.add_script_tag(content=axe_script())
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(v => ({
          id: v.id, impact: v.impact, help: v.help,
          nodes: v.nodes.slice(0, 5).map(n => [n.target.join(' '), n.html.slice(0, 200), n.failureSummary])}))"""
    )
    return [v for v in found if v["impact"] in impacts]


#: The roles of what a person operates (each must be named in words).
CONTROLS = (
    "button",
    "link",
    "radio",
    "checkbox",
    "switch",
    "textbox",
    "combobox",
    "spinbutton",
    "slider",
    "tab",
)


def unnamed_controls(page) -> list[str]:
    """Controls of the page's accessibility tree whose names are not words: no name, a number only,
    a shortcut hint (``Shortcut Ctrl + Enter``: that is ``aria-keyshortcuts``) or an icon's ligature
    name (``check_circle``); and every icon the page shows that a screen reader would read."""
    icons = set(
        page.evaluate(
            "() => [...document.querySelectorAll('[data-testid=stIconMaterial]')].map(e => e.textContent.trim())"
        )
    )
    bad = []
    for line in page.locator("[data-testid=stApp]").aria_snapshot().splitlines():
        m = re.match(r'\s*- (\w+)(?: "((?:[^"\\]|\\.)*)")?', line)
        if not m or m.group(1) not in CONTROLS:
            continue
        name = m.group(2) or ""
        words = set(re.findall(r"[a-z_]+", name))
        if (
            not name.strip()
            or name.strip().isdigit()
            or "Shortcut" in name
            or words & {i for i in icons if "_" in i}
        ):
            bad.append(line.strip())
    spoken = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stIconMaterial]')]"
        ".filter(e => !e.closest('[aria-hidden=true]')).map(e => e.textContent.trim())"
    )
    return bad + [f"icon read out: {i}" for i in spoken]


def require_chromium(wait_s: float = 900) -> None:
    """Debian chromium, or a skip (a failure in CI). In CI, .ci/run installs it in the background while
    the first tests run and writes the installer's exit status to ``$PREFKIT_CHROMIUM_READY`` when
    done: a browser test that comes earlier waits for it."""
    ready = os.environ.get("PREFKIT_CHROMIUM_READY")
    if ready:
        status, deadline = Path(ready), time.monotonic() + wait_s
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert status.exists(), f"chromium's background install did not finish in {wait_s:.0f} s"
        log = status.with_name("log")
        assert status.read_text().strip() == "0", f"chromium's background install failed (log: {log})"
    require(os.path.exists(CHROMIUM), "Debian chromium is not installed (apt-get install chromium)")


def served_project(tmp_path_factory, name: str, annotators=(), **make: Any) -> Project:
    """The project of a served-app fixture (skipped first without chromium): :func:`make_project` with
    ``make`` and the extra ``annotators``; the fixture then ``yield from serve(project)``."""
    require_chromium()
    project = make_project(tmp_path_factory.mktemp(name) / "proj", **make)
    for who in annotators:
        project.store.accounts.add_user(who, "annotator", PASSWORD)
    return project


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("server did not become healthy")


def serve(project: Project) -> Iterator[tuple[Project, str, subprocess.Popen]]:
    """``prefkit annotate serve`` on ``project`` (a fixture's body: ``yield from serve(project)``)."""
    port = free_port()
    env = {**os.environ, "PREFKIT_PROJECT": str(project.root)}
    cmd = [str(Path(sys.executable).parent / "prefkit"), "annotate", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc)
    yield project, url, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    project.close()


class ForwardingProxy:
    """A reverse proxy on 127.0.0.1 that does what nginx's ``proxy_set_header X-Forwarded-For
    $proxy_add_x_forwarded_for`` does for one browser: each connection's first request head gets the
    header (the websocket's upgrade request carries the sign-in), then bytes flow both ways."""

    def __init__(self, upstream_port: int, forwarded_for: str):
        self.upstream, self.forwarded = upstream_port, forwarded_for
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream))
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(65536)
            if not chunk:
                return
            head += chunk
        first, rest = head.split(b"\r\n", 1)
        upstream.sendall(first + b"\r\nX-Forwarded-For: " + self.forwarded.encode() + b"\r\n" + rest)

        def pipe(a, b) -> None:
            try:
                while data := a.recv(65536):
                    b.sendall(data)
            except OSError:
                pass
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        pipe(client, upstream)

    def close(self) -> None:
        self.server.close()


def chromium() -> Iterator[Any]:
    """Debian chromium, launched for the ``browser`` fixture (tests/conftest.py): one per test module."""
    from playwright.sync_api import sync_playwright

    require_chromium()
    with sync_playwright() as p:
        b = p.chromium.launch(**LAUNCH)
        yield b
        for key in [k for k in _CONTEXTS if k[0] == id(b)]:
            del _CONTEXTS[key]
        b.close()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


#: Browser contexts that earlier tests signed in with, per browser and settings: a later test's
#: :func:`sign_in` takes one over instead of opening a fresh context, which loads and compiles the
#: app's front end with an empty cache (about 1.5 CPU-s more per sign-in on 2 cores). Taken over, a
#: context has every page closed and its cookies, site storage and permissions cleared, so the app sees
#: a browser that has never signed in and only has the files cached. A test's ``page.context.close()``
#: hands the context back; the browser fixture closes them for good.
_CONTEXTS: dict[tuple, list[list[Any]]] = {}


def _current_test() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]


def reused_page(browser, url: str, settings: dict[str, Any]):
    """A new page in a context with ``settings`` that no other part of this test holds: one an earlier
    test handed back (cleared), else a new one."""
    key = (id(browser), json.dumps(settings, sort_keys=True))
    held = _CONTEXTS.setdefault(key, [])
    me = _current_test()
    for entry in held:
        owner, context, free = entry
        if context.browser is browser and (free or owner != me):
            for page in list(context.pages):
                page.close()
            context.clear_cookies()
            context.clear_permissions()
            page = context.new_page()
            origin = re.match(r"https?://[^/]+", url)[0]
            cdp = context.new_cdp_session(page)
            cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
            cdp.detach()
            entry[0], entry[2] = me, False
            return page
    context = browser.new_context(**settings)
    entry = [me, context, False]

    def hand_back() -> None:  # its pages close as before; the next sign-in may take the context over
        for page in list(context.pages):
            page.close()
        entry[2] = True

    context.close = hand_back
    held.append(entry)
    return context.new_page()


def sign_in(
    browser,
    url: str,
    user: str,
    outside: list[str] | None = None,
    size: tuple[int, int] = (1440, 1000),
    headers: dict | None = None,
    state: Any = "visible",
    color_scheme: str = "light",
    lag: bool = False,
):
    """A new browser context signed in as ``user``: its page. ``outside`` collects every request that
    would leave the app's own server; ``state`` is how "signed in as" must be there (``attached`` where
    a narrow window folds the sidebar); ``color_scheme`` is the system's (``prefers-color-scheme``);
    ``lag``: the page can be made to hear the server late (:func:`lagging`)."""
    settings = {
        "viewport": {"width": size[0], "height": size[1]},
        "extra_http_headers": headers,
        "color_scheme": color_scheme,
    }
    if lag or outside is not None:  # a context with its own scripts or listeners is never handed on
        context = browser.new_context(**settings)
        if lag:
            context.add_init_script(LAG)
        if outside is not None:
            context.on("request", lambda r: None if r.url.startswith(url) else outside.append(r.url))
        page = context.new_page()
    else:
        page = reused_page(browser, url, settings)
    attempt(page, url, user, PASSWORD)
    page.get_by_text(f"signed in as {user}").wait_for(state=state)
    settle(page)
    return page


#: A page script that holds every message from the app's server for ``window.__prefkitLag`` ms, in
#: order: the browser hears of each run late, as from a busy or distant server.
LAG = """(() => { const Native = window.WebSocket;
  const late = f => function (e) { const ms = window.__prefkitLag || 0;
    if (!ms) return f.call(this, e); setTimeout(() => f.call(this, e), ms); };
  window.WebSocket = class extends Native {
    set onmessage(f) { super.onmessage = typeof f === 'function' ? late(f) : f; }
    get onmessage() { return super.onmessage; }
    addEventListener(type, f, o) { return super.addEventListener(type, type === 'message' && typeof f === 'function' ? late(f) : f, o); }
  }; })();"""


def lagging(page, ms: int) -> None:
    """From now on the page (signed in with ``lag=True``) hears the server ``ms`` late."""
    page.evaluate(f"window.__prefkitLag = {int(ms)}")


def signed_in_on(served, browser, user: str, kind: str, **options) -> tuple[Project, Any]:
    """``user`` signed in on the served app (``served``: the ``serve`` fixture's value) with the task
    kind ``kind`` open at its first item: the project and the page."""
    project, url, _ = served
    page = sign_in(browser, url, user, **options)
    open_kind(page, get_kind(kind).title)
    return project, page


def skip_to(project: Project, user: str, kind: str, item_ref: str) -> None:
    """Skip ``user``'s items of ``kind`` until the one about ``item_ref`` is the open one."""
    while (item := workflow.current_item(project, user, kind)).task.item_ref != item_ref:
        workflow.skip(project, user, item, "cannot judge")


def attempt(page, url: str, user: str, password: str) -> None:
    if "User name" not in page.inner_text("body"):
        page.goto(url)
    page.get_by_label("User name").fill(user)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()
    settle(page)


def settle(page) -> None:
    """Wait until the script run the last interaction started has finished rendering (the key guard
    holds no click or key and awaits no run: ``__prefkitSettled``), and a key pressed next would be a
    new burst for it (:func:`keys_ready`)."""
    page.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=stApp]');"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'"
        " && (!window.__prefkitSettled || window.__prefkitSettled())"
        " && (!window.__prefkitKeysReady || window.__prefkitKeysReady()); }"
    )


def open_kind(page, title: str) -> None:
    page.get_by_role("radio", name=title, exact=True).click()
    page.get_by_role("heading", name=title, exact=True).wait_for()  # the intro of *this* kind
    settle(page)
    page.get_by_role("button", name=re.compile("^Start annotating")).click()
    item_header(page, title).wait_for()
    settle(page)


def item_header(page, title: str):
    """The header of the item on screen: ``<title> · <n> left for you`` (a heading)."""
    return page.get_by_role("heading", name=re.compile(rf"^{re.escape(title)} · \d+ left for you")).first


#: The item on screen, in words: its header (the count left) and the line under it (batch, item
#: reference); it changes with every new item.
ITEM_NOW = """t => { const h = [...document.querySelectorAll('[data-testid=stMain] h2')].find(e => e.innerText.startsWith(t + ' · '));
  return h ? h.closest('[data-testid=stMarkdownContainer]').innerText : ''; }"""


def item_now(page, title: str) -> str:
    """The header and reference line of the item on screen ('' when none)."""
    return page.evaluate(f"({ITEM_NOW})", title)


def keys_ready(page) -> None:
    """Wait until a key pressed now is a new burst for the key guard (``annotate_app/keys.py``): a key
    less than ``keys.BURST_MS`` after the last one belongs to the item that one was pressed on, and is
    dropped on the item that replaced it."""
    page.wait_for_function("() => !window.__prefkitKeysReady || window.__prefkitKeysReady()")


def next_item(page, title: str, action) -> None:
    """Do ``action`` and wait until the server has stored it and rendered the next item (or the end)."""
    before = item_now(page, title)
    keys_ready(page)  # settle() waited too, unless the caller pressed a key since
    action()
    page.wait_for_function(
        f"([t, b]) => {{ const now = ({ITEM_NOW})(t);"
        " return document.body.innerText.includes('Nothing left') || (now !== '' && now !== b); }",
        arg=[title, before],
    )
    settle(page)


def draft_kept(
    project: Project, user: str, task_id: str, holds: Callable[[dict], bool], timeout: float = 60
) -> dict:
    """Wait until the store holds ``user``'s draft of ``task_id`` and ``holds(state)`` is true of it,
    then return the state: what a reload restores. A change in the browser reaches the draft in the
    run it starts (a text field's on losing focus), which may not have begun when the page looks
    idle; a reload before it ends would drop it, so a test reloads only after this."""
    deadline = time.monotonic() + timeout
    state: dict = {}
    while time.monotonic() < deadline:
        draft = project.store.drafts.draft(user, task_id)
        state = json.loads(draft[1]) if draft else {}
        if draft and holds(state):
            return state
        time.sleep(0.1)
    raise AssertionError(f"the draft never held what was expected; last seen: {state}")


def select_word(page, turn: int, word: str) -> None:
    """Double-click ``word`` in ``turn`` of the picker, as an annotator selects it with the mouse."""
    point = page.evaluate(
        """([turn, word]) => { const el = document.querySelector(`.prefkit-spans .pk-text[data-turn="${turn}"]`);
        const node = [...el.childNodes].find(n => n.nodeType === 3 && n.textContent.includes(word));
        const r = document.createRange(); const at = node.textContent.indexOf(word);
        r.setStart(node, at + 1); r.setEnd(node, at + 2); const b = r.getBoundingClientRect();
        return {x: b.x + b.width / 2, y: b.y + b.height / 2}; }""",
        [turn, word],
    )
    page.mouse.dblclick(point["x"], point["y"])


def label_match(page) -> None:
    next_item(page, "Preference matching", lambda: page.keyboard.press("1"))


def choose(page, label: str, option: str, nth: int = 0) -> None:
    """Pick ``option`` in the menu (a select box) labelled ``label``, with the mouse."""
    page.get_by_role("combobox", name=label).nth(nth).click()
    page.get_by_role("option", name=option, exact=True).click()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # keys are keys again
    settle(page)


def add_qc_task(project):
    """One task_qc task (does a generated question leak the memory?), added to ``project``."""
    from prefkit.curation.annotation.task_kinds import get_kind

    payload = {
        "track": "task4_ability2",
        "benchmark_id": "b1",
        "question": "Does it leak?",
        "generated": "As a vegan, what should I cook?",
        "memory": "Preferences/Food: vegan",
        "gold_answer": "m1: vegan",
        "checks": {},
    }
    task = get_kind("task_qc").make_task("alps:task4_ability2:b1", payload, 1, "default")
    project.store.labels.add_tasks([task])
    return task
