"""Shared fixtures: every test gets its own project directory; the real AlpsBench sample comes from
../shared (``PREFKIT_SHARED_DATA``) and only the tests about that data read it.

PostgreSQL: tests marked ``postgres`` run against the server named by ``PREFKIT_TEST_PG_URL``
(``source .ci/postgres.sh && postgres_start`` starts a throwaway one), each in a fresh database dropped
afterwards. ``PREFKIT_TEST_BACKEND=postgresql`` puts every other test's projects on PostgreSQL too
(through ``PREFKIT_DATABASE_URL``), to run any module there.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from prefkit.curation.project import Project

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("PREFKIT_SHARED_DATA", ROOT.parent / "shared" / "data"))
ALPS_PACKETS = SHARED_DATA / "alpsbench" / "annotation_packets_sample"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
PG_URL = os.environ.get("PREFKIT_TEST_PG_URL", "")
ALL_ON_POSTGRES = os.environ.get("PREFKIT_TEST_BACKEND", "") == "postgresql"


def _cheap_password_hashing() -> None:
    """Accounts made in the test processes get argon2id hashes at the lowest cost (1 pass over 1 MiB
    instead of 3 over 64 MiB), as Django's docs advise for test suites: the suite makes hundreds of
    accounts and signs in hundreds of times, ~0.2 CPU-s each at the real cost. The hash is still argon2id
    and checked the same way; its parameters travel in the hash, so a served app checks these cheaply
    too. Commands run as subprocesses (``prefkit users add``) hash at the real cost, which
    tests/test_store.py checks."""
    from argon2 import PasswordHasher
    from prefkit.curation.store import accounts

    accounts._hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


_cheap_password_hashing()


def require(condition: bool, reason: str) -> None:
    """Skip locally when a resource is absent; in CI the resource is guaranteed, so fail instead."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI must provide this: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    """Debian chromium driven by Playwright, one per test module (see tests/appkit.py)."""
    from appkit import chromium

    yield from chromium()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A browser test that fails leaves each open page's screenshot and text in artifacts/failures/
    (named in the report): what the screen showed when a wait ran out."""
    report = yield
    browser = item.funcargs.get("browser") if report.failed and call.when == "call" else None
    pages = [p for c in browser.contexts for p in c.pages] if browser is not None else []
    for i, page in enumerate(pages):
        shot = ROOT / "artifacts" / "failures" / f"{item.name[:120]}-{i}"
        shot.parent.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=f"{shot}.png", full_page=True, timeout=10_000)
            keys = page.evaluate("() => JSON.stringify(window.__prefkitKeyLog || [])")  # the key guard's log
            text = page.inner_text("body", timeout=10_000) + f"\n\n-- the key guard's log\n{keys}\n"
            shot.with_suffix(".txt").write_text(text, encoding="utf-8")
        except Exception as exc:  # the page may be what broke: the report says so instead
            report.sections.append(("browser pages", f"{shot}: not kept ({exc})"))
        else:
            report.sections.append(("browser pages", f"kept {shot}.png and .txt"))
    return report


def _in_env(env: dict[str, str], target, *args) -> None:
    os.environ.clear()
    os.environ.update(env)
    target(*args)


class Forked:
    """multiprocessing for the tests whose processes race, replicate an app or get killed: each process
    forks from one server process that imported ``module`` (the test's, with its targets) and what it
    imports, instead of a fresh interpreter importing all of it again (``spawn``: ~1 CPU-s a process).
    Each is still a process of its own, with its own connections, forked from a server that holds no
    thread and no connection, and it runs in the environment of the test that started it."""

    def __init__(self, module: str):
        import multiprocessing as mp

        self.ctx = mp.get_context("forkserver")
        self.ctx.set_forkserver_preload(["conftest", module])

    def Process(self, target, args=()):  # noqa: N802 (multiprocessing's name)
        return self.ctx.Process(target=_in_env, args=(dict(os.environ), target, *args))

    def __getattr__(self, name: str):  # Event, Barrier, ...
        return getattr(self.ctx, name)


def label_event(task, who: str, values: dict, **fields):
    """``who``'s label event on ``task`` with ``values``, made now under a fresh id (``fields`` set the
    event's other fields or these)."""
    from prefkit.schemas.common import utcnow
    from prefkit.schemas.curation import LabelEvent

    made = {"event_id": uuid.uuid4().hex, "task_id": task.task_id, "kind": task.kind, "created_at": utcnow()}
    return LabelEvent(**{**made, "annotator": who, "values": values, **fields})


def crowd_study(project, study_id="pilot", gold=2, **settings):
    """A crowd study of preference_match items on the default batch, the first ``gold`` tasks made gold
    first: 4 items, half of them gold, screened below 0.5, 30 minutes (``settings`` override these)."""
    from prefkit.curation.annotation import studies

    for tid in [t.task_id for t in project.store.labels.tasks(kind="preference_match")][:gold]:
        project.store.labels.set_gold(tid, {"coverage": "fully"})
    base = dict(kind="preference_match", batch="default", items=4, gold_share=0.5, screen_below=0.5)
    return studies.create_study(project, study_id, **{**base, "time_limit_minutes": 30, **settings})


def three_label(ls, project, ls_project_id: int, answer) -> dict[str, int]:
    """Three people (the admin as ``ann1``, two new sign-ups as ``ann2`` and ``ann3``) label every task
    Label Studio serves them in its project ``ls_project_id``, each submitting ``answer(who, task,
    served)``; returns how many each submitted."""
    from prefkit.annotate_app.labelstudio.accounts import signup
    from prefkit.annotate_app.labelstudio.config import TASK_ID_KEY, ls_kind

    people = {
        "ann1": ls.admin,
        "ann2": signup(ls.url, f"ann2-{uuid.uuid4().hex[:8]}@prefkit.example.com", "Label-Studio-2nd-user"),
        "ann3": signup(ls.url, f"ann3-{uuid.uuid4().hex[:8]}@prefkit.example.com", "Label-Studio-3rd-user"),
    }
    done = dict.fromkeys(people, 0)
    for who, person in people.items():
        while (served := person.next_task(ls_project_id)) is not None:
            task = project.store.labels.task(served["data"][TASK_ID_KEY])
            result = ls_kind(task.kind).results(answer(who, task, served), task)
            person.submit(served["id"], result, lead_time=5.0)
            done[who] += 1
    return done


def label_studio_admin():
    """The Label Studio server with its admin signed in: ``url``, ``key`` and ``admin`` (a client)."""
    from types import SimpleNamespace

    from prefkit.annotate_app.labelstudio.accounts import login

    url, key = label_studio_server()
    email, password = (
        os.environ.get("LABEL_STUDIO_ADMIN_EMAIL"),
        os.environ.get("LABEL_STUDIO_ADMIN_PASSWORD"),
    )
    require(
        bool(email and password),
        "LABEL_STUDIO_ADMIN_EMAIL / _PASSWORD not set (.ci/labelstudio.sh exports them)",
    )
    return SimpleNamespace(url=url, key=key, admin=login(url, email, password))


def label_studio_server() -> tuple[str, str]:
    """``(url, api key)`` of the Label Studio server the tests talk to, checked with ``/health``."""
    import httpx

    url, key = os.environ.get("LABEL_STUDIO_URL"), os.environ.get("LABEL_STUDIO_API_KEY")
    require(
        bool(url and key), "no Label Studio server: `bash .ci/labelstudio.sh start`, then source its env file"
    )
    try:
        httpx.get(f"{url}/health", timeout=10).raise_for_status()
    except httpx.HTTPError as exc:
        require(False, f"Label Studio at {url} does not answer /health ({exc})")
    return url, key


#: What a test costs, roughly, by its marks: the parallel run hands out whole files (--dist loadfile),
#: so the files that take longest start first and the run does not end waiting on one of them.
_WEIGHT = {"slow": 30, "browser": 10, "shared_data": 5}


def pytest_collection_modifyitems(config, items):
    """Order the files heaviest first, the slow files that need no browser before all others: in CI,
    Chromium installs in the background while they run (.ci/run, :func:`appkit.require_chromium`).
    The same order on every worker: a pure function of the items."""
    weight: dict[str, int] = {}
    browser: set[str] = set()
    slow: set[str] = set()
    for item in items:
        path = item.nodeid.split("::")[0]
        cost = max((w for mark, w in _WEIGHT.items() if item.get_closest_marker(mark)), default=1)
        weight[path] = weight.get(path, 0) + cost
        if item.get_closest_marker("browser"):
            browser.add(path)
        if item.get_closest_marker("slow"):
            slow.add(path)
    slow_first = slow - browser
    position = {nodeid: i for i, nodeid in enumerate(item.nodeid for item in items)}

    def key(item):
        path = item.nodeid.split("::")[0]
        return (path not in slow_first, -weight[path], path, position[item.nodeid])

    items.sort(key=key)


@pytest.fixture(scope="module", autouse=True)
def _declared_kinds_stay_in_their_module():
    """A project's declared kinds (kinds/*.toml) are in the registry while that project is the last
    one opened: the module that made them keeps them, the next module starts with none."""
    yield
    from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY

    TASK_KIND_REGISTRY.declare([], {})


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch, request):
    """No test reads the user's project, endpoint, key or database by accident. With
    ``PREFKIT_TEST_BACKEND=postgresql`` every project a test opens (and its subprocesses) lives in one
    fresh PostgreSQL database instead (a sweep to run any module on PostgreSQL)."""
    monkeypatch.delenv("PREFKIT_PROJECT", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("PREFKIT_DATABASE_URL", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if ALL_ON_POSTGRES and "pg_url" not in request.fixturenames:
        monkeypatch.setenv("PREFKIT_DATABASE_URL", request.getfixturevalue("pg_url"))


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The URL of the test PostgreSQL server (a superuser, no password); CI fails without it."""
    require(
        bool(PG_URL),
        "no PostgreSQL server for tests: run `source .ci/postgres.sh && postgres_start` "
        "(it exports PREFKIT_TEST_PG_URL)",
    )
    import psycopg

    try:
        psycopg.connect(PG_URL, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        require(False, f"PostgreSQL at {PG_URL} is not reachable: {str(exc).strip().splitlines()[0]}")
    return PG_URL


def pg_admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture
def pg_url(pg_server):
    """A fresh, empty PostgreSQL database for one test (dropped afterwards, connections and all)."""
    from sqlalchemy.engine import make_url

    name = "prefkit_t_" + uuid.uuid4().hex[:12]
    pg_admin(pg_server, f'CREATE DATABASE "{name}"')
    yield make_url(pg_server).set(database=name).render_as_string(hide_password=False)
    pg_admin(pg_server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request, tmp_path) -> str:
    """A fresh store database on each backend: a SQLite file path, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def project(tmp_path) -> Iterator[Project]:
    """A fresh, initialised project; closed after the test."""
    from prefkit.curation.project import Project

    project = Project.init(tmp_path / "proj", name="test-proj")
    yield project
    project.close()


@pytest.fixture
def any_project(tmp_path, database) -> Iterator[Project]:
    """A fresh, initialised project on each backend (SQLite, PostgreSQL)."""
    from prefkit.curation.project import Project

    project = Project.init(tmp_path / "proj", name="test-proj", database=database)
    yield project
    project.close()


@pytest.fixture(scope="session")
def fixture_packets(tmp_path_factory) -> Path:
    """Three AlpsBench packets in the published layout with our own content (:mod:`fixtures_alps`):
    what every test that is not about the real sample imports."""
    from fixtures_alps import write_packets

    return write_packets(tmp_path_factory.mktemp("alps-fixture"), n=3)


@pytest.fixture(scope="session")
def alps_packets() -> Path:
    """The real AlpsBench sample: only for tests about that data itself."""
    require(
        ALPS_PACKETS.is_dir(), f"AlpsBench sample packets not found at {ALPS_PACKETS} (../shared is absent)"
    )
    return ALPS_PACKETS


@pytest.fixture(scope="session")
def alps_project(tmp_path_factory, alps_packets) -> Iterator[Project]:
    """One project with all 400 sample packets imported, shared read-only across a session."""
    from prefkit.curation.project import Project
    from prefkit.pipelines.ingest import alpsbench

    project = Project.init(tmp_path_factory.mktemp("alps") / "proj", name="alps")
    # The sample's own (expert) gold is the reference: these tests are about the data, not verification.
    toml = project.root / "prefkit.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace(
            "[release]\n", '[release]\nalpsbench_reference = "imported"\n', 1
        ),
        encoding="utf-8",
    )
    project.__dict__.pop("config", None)  # read the edited file
    project.store.content.import_bundle(alpsbench.build_bundle(alps_packets))
    yield project
    project.close()
