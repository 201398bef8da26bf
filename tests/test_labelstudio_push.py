"""Against the real Label Studio server, on both store backends: a push in several requests that
fails half-way resumes without importing anything twice; tasks the config cannot show are reported;
two processes pushing (or pulling) one project at once import each task (record each annotation)
once; a push waits for, refuses, or takes over from another push's lease."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from appkit import memory_candidates
from conftest import ROOT, label_studio_server
from lsproxy import FailingProxy
from prefkit.annotate_app.labelstudio import bridge
from prefkit.annotate_app.labelstudio.accounts import login
from prefkit.annotate_app.labelstudio.config import TASK_ID_KEY, ls_kind
from prefkit.annotate_app.labelstudio.kinds.memory_verify import MAX_CANDIDATES
from prefkit.curation.project import Project
from prefkit.curation.store import LSPushLease, PreferencePair
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import AnnotationTask, Provenance

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow]


@pytest.fixture(scope="module")
def ls_url() -> str:
    url, _key = label_studio_server()
    return url


@pytest.fixture
def ls_project(tmp_path, database):
    """A fresh prefkit project (SQLite, then PostgreSQL) with overlap 2."""
    root = tmp_path / "proj"
    Project.init(root, name="ls-push", database=database).close()
    cfg = root / "prefkit.toml"
    cfg.write_text(cfg.read_text().replace("overlap = 3", "overlap = 2"))
    project = Project(root)
    yield project
    project.close()


def _pairs(project: Project, n: int, gold: int = -1) -> None:
    pairs = [
        PreferencePair(
            f"pair{i:02d}",
            f"Is item {i} covered?",
            f"Candidate preference {i}",
            "test",
            meta={"gold_answer": {"coverage": "fully"}} if i == gold else None,
        )
        for i in range(n)
    ]
    project.store.content.add_preference_pairs(pairs, Provenance(source="test"))


def _ls_tasks(url: str, pid: int) -> list[str]:
    """The prefkit task id of every task in the Label Studio project (duplicates included)."""
    return [
        t.data[TASK_ID_KEY]
        for t in bridge.connect(url, os.environ["LABEL_STUDIO_API_KEY"]).tasks.list(project=pid, fields="all")
    ]


@pytest.mark.parametrize("mode", ["refused", "answer_lost"])
def test_a_push_that_fails_half_way_resumes_and_imports_each_task_once(ls_url, ls_project, mode):
    _pairs(ls_project, 9, gold=4)
    proxy = FailingProxy(ls_url, fail_import=3, mode=mode)
    try:
        with pytest.raises(bridge.LabelStudioError, match="importing tasks: Label Studio answered 50"):
            bridge.push(ls_project, "preference_match", proxy.url, batch=2, chunk=2)
        pid = ls_project.store.labelstudio.project_id(proxy.url, "preference_match")
        assert proxy.imports == 3  # the fourth request was never sent
        mapped = ls_project.store.labelstudio.task_ids(proxy.url, pid)
        assert len(mapped) == 4 and len(ls_project.store.labels.tasks(kind="preference_match")) >= 6
        in_ls = _ls_tasks(ls_url, pid)
        assert len(in_ls) == (6 if mode == "answer_lost" else 4)  # never sent twice

        again = bridge.push(ls_project, "preference_match", proxy.url, batch=2, chunk=2)
    finally:
        proxy.close()
    assert again.reconciled == (2 if mode == "answer_lost" else 0)
    assert again.already == 4 + again.reconciled and again.imported == 9 - again.already
    tasks = ls_project.store.labels.tasks(kind="preference_match")
    in_ls = _ls_tasks(ls_url, pid)
    assert sorted(in_ls) == sorted(t.task_id for t in tasks) and len(tasks) == 9
    mapped = ls_project.store.labelstudio.task_ids(proxy.url, pid)
    assert {ls_id: task_id for task_id, ls_id in mapped.items()} == {
        int(t.id): t.data[TASK_ID_KEY]
        for t in bridge.connect(ls_url, os.environ["LABEL_STUDIO_API_KEY"]).tasks.list(
            project=pid, fields="all"
        )
    }
    gold = next(t for t in tasks if t.is_gold)
    assert gold.item_ref == "pair:pair04" and gold.gold_answer == {"coverage": "fully"}
    assert [
        a.ground_truth
        for a in bridge.connect(ls_url, os.environ["LABEL_STUDIO_API_KEY"]).annotations.list(
            mapped[gold.task_id]
        )
    ] == [True]

    third = bridge.push(ls_project, "preference_match", ls_url)  # the server's own address: its own project
    assert third.project_created and third.imported == 9
    fourth = bridge.push(ls_project, "preference_match", ls_url)
    assert (fourth.imported, fourth.already, fourth.reconciled) == (0, 9, 0)


def _memory_task(n: int, i: int) -> AnnotationTask:
    turns = [{"index": 0, "role": "user", "content": f"Dialogue {i}: I only cook vegetarian food."}]
    cands = memory_candidates(n)
    return AnnotationTask(
        task_id=f"memory_verify_t{i}",
        kind="memory_verify",
        item_ref=f"dialogue:d{i}",
        payload={"dialogue_id": f"d{i}", "turns": turns, "candidates": cands},
        overlap=2,
        created_at=utcnow(),
    )


def test_a_memory_task_with_more_candidates_than_slots_is_reported_and_not_pushed(ls_url, ls_project):
    ls_project.store.labels.add_tasks([_memory_task(3, 1), _memory_task(MAX_CANDIDATES + 1, 2)])
    report = bridge.push(ls_project, "memory_verify", ls_url)
    assert report.imported == 1
    assert report.not_pushed == [
        f"memory_verify_t2: {MAX_CANDIDATES + 1} candidates (the config has 60 slots)"
    ]
    again = bridge.push(ls_project, "memory_verify", ls_url)
    assert (again.imported, again.already, len(again.not_pushed)) == (0, 1, 1)
    assert _ls_tasks(ls_url, report.ls_project_id) == ["memory_verify_t1"]


def _cli(verb: str, project: Project, url: str) -> list[str]:
    """``prefkit labelstudio VERB preference_match`` on ``project`` as a separate process's argv."""
    prefkit = str(Path(sys.executable).parent / "prefkit")
    return [prefkit, "labelstudio", verb, "preference_match", "--url", url, "-p", str(project.root), "--json"]


def test_two_processes_pulling_one_project_at_once_record_each_annotation_once(ls_url, ls_project):
    _pairs(ls_project, 6)
    pushed = bridge.push(ls_project, "preference_match", ls_url)
    admin = login(ls_url, os.environ["LABEL_STUDIO_ADMIN_EMAIL"], os.environ["LABEL_STUDIO_ADMIN_PASSWORD"])
    result = ls_kind("preference_match").results({"coverage": "partially"}, None)
    annotations = []
    while (served := admin.next_task(pushed.ls_project_id)) is not None:
        annotations.append(admin.submit(served["id"], result, lead_time=3.0))
    assert len(annotations) == 6

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            _cli("pull", ls_project, ls_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err.decode()[-2000:] for _, err in outs]
    reports = [json.loads(out) for out, _ in outs]

    events = ls_project.store.labels.events(kind="preference_match")
    assert len(events) == 6 and len({e.event_id for e in events}) == 6
    assert {e.annotator for e in events} == {"admin"} and {e.values["coverage"] for e in events} == {
        "partially"
    }
    mapped = ls_project.store.labelstudio.annotations(ls_url, pushed.ls_project_id)
    assert sorted(mapped) == sorted(annotations)
    assert {r.event_id for r in mapped.values()} == {e.event_id for e in events}
    # Between them the two pulls recorded each annotation once; the later saw the rest as unchanged.
    assert sum(r["labels"] for r in reports) == 6
    assert sum(r["labels"] + r["unchanged"] for r in reports) == 12
    assert sum(len(r["users_created"]) for r in reports) == 1
    assert [u.username for u in ls_project.store.accounts.users()] == ["admin"]


def _lease(url: str, pid: int, renewed_at: str | None = None) -> LSPushLease:
    now = utcnow()
    return LSPushLease(
        url, "preference_match", f"test-{pid}", socket.gethostname(), pid, now, renewed_at or now
    )


def test_two_push_processes_at_once_import_each_task_once(ls_url, ls_project, tmp_path):
    _pairs(ls_project, 30, gold=7)
    # Held for the test (this process, alive) until both pushes are waiting; then they race for it.
    blocker = _lease(ls_url, os.getpid())
    assert ls_project.store.labelstudio.take_push_lease(blocker, lambda holder: False) is None
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    errs = [tmp_path / f"push{i}.err" for i in range(2)]
    procs = [
        subprocess.Popen(
            _cli("push", ls_project, ls_url), stdout=subprocess.PIPE, stderr=err.open("wb"), env=env
        )
        for err in errs
    ]
    deadline = time.monotonic() + 120
    while not all("waiting for the push" in err.read_text() for err in errs):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), [
            e.read_text() for e in errs
        ]
        time.sleep(0.2)
    ls_project.store.labelstudio.release_push_lease(blocker)
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e.read_text()[-2000:] for e in errs]
    reports = sorted((json.loads(out) for out in outs), key=lambda r: r["imported"])

    # One imported everything; the other waited for it and found every task there.
    assert [(r["imported"], r["already"]) for r in reports] == [(0, 30), (30, 0)]
    assert reports[0]["ls_project_id"] == reports[1]["ls_project_id"]
    pid = reports[0]["ls_project_id"]
    tasks = ls_project.store.labels.tasks(kind="preference_match")
    assert sorted(_ls_tasks(ls_url, pid)) == sorted(t.task_id for t in tasks) and len(tasks) == 30
    mapped = ls_project.store.labelstudio.task_ids(ls_url, pid)
    assert {ls_id: task_id for task_id, ls_id in mapped.items()} == {
        int(t.id): t.data[TASK_ID_KEY]
        for t in bridge.connect(ls_url, os.environ["LABEL_STUDIO_API_KEY"]).tasks.list(
            project=pid, fields="all"
        )
    }
    assert ls_project.store.labelstudio.projects(ls_url)[0].ls_project_id == pid
    assert ls_project.store.labelstudio.push_lease(ls_url, "preference_match") is None


def test_a_push_refuses_while_another_runs_and_takes_over_from_a_dead_one(ls_url, ls_project):
    _pairs(ls_project, 3)
    alive = _lease(ls_url, os.getpid())
    assert ls_project.store.labelstudio.take_push_lease(alive, lambda holder: False) is None
    with pytest.raises(
        bridge.LabelStudioError, match=r"another push of preference_match to .* is running .*pid"
    ):
        bridge.push(ls_project, "preference_match", ls_url, wait_s=0)
    assert ls_project.store.labelstudio.project_id(ls_url, "preference_match") is None  # nothing done
    ls_project.store.labelstudio.release_push_lease(alive)

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert (
        ls_project.store.labelstudio.take_push_lease(_lease(ls_url, gone.pid), lambda holder: False) is None
    )
    report = bridge.push(ls_project, "preference_match", ls_url, wait_s=0)  # its process is gone
    assert report.imported == 3

    silent = _lease(ls_url, os.getpid(), renewed_at="2020-01-01T00:00:00.000000Z")
    assert ls_project.store.labelstudio.take_push_lease(silent, lambda holder: False) is None
    assert bridge.push(ls_project, "preference_match", ls_url, wait_s=0).already == 3  # it stopped renewing
    assert ls_project.store.labelstudio.push_lease(ls_url, "preference_match") is None
