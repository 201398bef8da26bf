"""16 annotators submitting at once from 16 processes, while another process reads: nothing is lost,
nothing is written twice, and every item still goes to exactly k distinct annotators."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from appkit import seed_pairs
from conftest import Forked
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from test_release_support import add_users

WRITERS = 16
ITEMS = 40
OVERLAP = 3


# Sixteen processes race on purpose: alone, after the parallel run, so the race is theirs alone.
pytestmark = pytest.mark.serial


def writer(root: str, user: str, out: str) -> None:
    project = Project(root)
    acked = []
    while (item := workflow.current_item(project, user, "preference_match")) is not None:
        workflow.submit(project, user, item, {"coverage": "fully"})
        workflow.submit(project, user, item, {"coverage": "fully"})  # a double click
        acked.append(item.event_id)
    Path(out).write_text(json.dumps(acked))
    project.close()


def reader(root: str, stop, out: str) -> None:
    project = Project(root)
    seen = []
    while not stop.is_set():
        seen.append(len(project.store.labels.events(kind="preference_match")))
        project.store.progress.progress_table()
    Path(out).write_text(json.dumps(seen))
    project.close()


def test_sixteen_concurrent_writers_lose_nothing(tmp_path):
    project = Project.init(tmp_path / "proj")
    users = [f"ann{i:02d}" for i in range(WRITERS)]
    add_users(project.store, *users)
    seed_pairs(project, ITEMS)
    create_tasks(project, "preference_match", overlap=OVERLAP, gold_rate=0)
    project.close()

    ctx = Forked(__name__)
    stop = ctx.Event()
    read = ctx.Process(target=reader, args=(str(project.root), stop, str(tmp_path / "reader.json")))
    read.start()
    procs = [
        ctx.Process(target=writer, args=(str(project.root), u, str(tmp_path / f"{u}.json"))) for u in users
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    stop.set()
    read.join(timeout=60)
    assert [p.exitcode for p in procs] == [0] * WRITERS and read.exitcode == 0

    acked = [eid for u in users for eid in json.loads((tmp_path / f"{u}.json").read_text())]
    store = Project(project.root).store
    events = store.labels.events(kind="preference_match")
    # an annotator with 20 labels or more may meet a repeat at the end: kept too, never a label event
    assert sorted(e.event_id for e in [*events, *store.repeats.events()]) == sorted(acked)
    assert len(events) == ITEMS * OVERLAP
    per_task: dict[str, set[str]] = {}
    for e in events:
        per_task.setdefault(e.task_id, set()).add(e.annotator)
    assert len(per_task) == ITEMS and all(len(a) == OVERLAP for a in per_task.values())
    counts = json.loads((tmp_path / "reader.json").read_text())
    assert counts == sorted(counts) and counts  # the reader only ever saw the log grow
    store.close()
