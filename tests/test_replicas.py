"""Two annotation-app replicas on one PostgreSQL database, 16 annotators x 300 submits, and one
replica killed with SIGKILL mid-run: no acknowledged label lost, no item over its overlap, no
duplicate, no item stuck in a queue.

A replica is what ``prefkit annotate serve`` is: one process holding one ``Project`` (one connection
pool) that serves many signed-in annotators at once, one thread each, through the same library calls
the Annotate page makes (``workflow.current_item`` then ``workflow.submit``). An acknowledgement is
written to the annotator's file the moment ``submit`` returns, as the browser would see it. The killed
replica's annotators then continue on a fresh replica (what a load balancer does), from where the
database says they are.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from pathlib import Path

import pytest
from appkit import replica, seed_pairs
from conftest import Forked
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from sqlalchemy import func, select
from test_release_support import add_users

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.serial]

ANNOTATORS = 16
SUBMITS = 300
OVERLAP = 3
ITEMS = ANNOTATORS * SUBMITS // OVERLAP + 100  # enough for everyone, with a tail left unassigned
KIND = "preference_match"


def annotate(project: Project, user: str, acks: Path, errors: list[str]) -> None:
    try:
        with acks.open("a", buffering=1) as ack:  # line-buffered: each ack reaches the OS at once
            done = project.store.count("label_events", annotator=user)  # resume where the database says
            while done < SUBMITS:
                item = workflow.current_item(project, user, KIND)
                if item is None:
                    raise AssertionError(f"{user}: queue ran dry after {done} submits")
                assert workflow.submit(project, user, item, {"coverage": "fully"})
                ack.write(item.event_id + "\n")
                done += 1
                if done % 50 == 0:  # a double click: recorded once, the same item is not shown again
                    assert workflow.submit(project, user, item, {"coverage": "fully"}) is False
    except BaseException:  # noqa: BLE001 - reported to the test through the replica's exit code
        errors.append(f"{user}: {traceback.format_exc()}")


def _setup(root: Path, database: str) -> list[str]:
    project = Project.init(root, database=database)
    users = [f"ann{i:02d}" for i in range(ANNOTATORS)]
    add_users(project.store, *users)  # sign-in is not what is tested here
    seed_pairs(project, ITEMS)
    create_tasks(project, KIND, overlap=OVERLAP, gold_rate=0)
    project.close()
    return users


def test_two_replicas_and_a_kill_lose_nothing_and_over_assign_nothing(tmp_path, pg_url):
    root, acks = tmp_path / "proj", tmp_path / "acks"
    acks.mkdir()
    users = _setup(root, pg_url)
    ctx = Forked(__name__)
    first, second = users[: ANNOTATORS // 2], users[ANNOTATORS // 2 :]
    doomed = ctx.Process(target=replica, args=(annotate, str(root), first, str(acks)))
    survivor = ctx.Process(target=replica, args=(annotate, str(root), second, str(acks)))
    doomed.start()
    survivor.start()

    watcher = Project(root)
    deadline = time.monotonic() + 240
    while watcher.store.count("label_events") < ANNOTATORS * SUBMITS // 4:  # a quarter of the way in
        assert time.monotonic() < deadline and doomed.is_alive(), "the replicas made no progress"
        time.sleep(0.05)
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.join()
    assert doomed.exitcode == -signal.SIGKILL
    at_kill = watcher.store.count("label_events")
    replacement = ctx.Process(target=replica, args=(annotate, str(root), first, str(acks)))
    replacement.start()
    for p in (survivor, replacement):
        p.join(timeout=600)
    errors = "".join(f.read_text() for f in acks.glob("errors-*.txt"))
    assert (survivor.exitcode, replacement.exitcode) == (0, 0), errors
    assert at_kill < ANNOTATORS * SUBMITS

    store = watcher.store
    events = store.labels.events(kind=KIND)
    acked = [line for u in users for line in (acks / f"{u}.acks").read_text().split()]
    recorded = {e.event_id for e in events}
    assert not set(acked) - recorded  # 0 acknowledged labels lost
    assert len(events) == ANNOTATORS * SUBMITS and len(recorded) == len(events)
    per_pair = {(e.task_id, e.annotator) for e in events}
    assert len(per_pair) == len(events)  # 0 duplicates: nobody labelled an item twice
    by_annotator = {u: sum(e.annotator == u for e in events) for u in users}
    assert set(by_annotator.values()) == {SUBMITS}

    t, a = store.t["tasks"], store.t["assignments"]
    with store.read() as conn:
        held = dict(conn.execute(select(a.c.task_id, func.count()).group_by(a.c.task_id)).all())
        counters = dict(conn.execute(select(t.c.task_id, t.c.n_assigned)).all())
        queues = conn.execute(select(a.c.annotator, a.c.position, a.c.done_at)).all()
    assert max(held.values()) <= OVERLAP  # 0 over-assigned items
    labelled_by: dict[str, int] = {}
    for e in events:
        labelled_by[e.task_id] = labelled_by.get(e.task_id, 0) + 1
    assert max(labelled_by.values()) <= OVERLAP
    assert counters and all(
        counters[tid] == held.get(tid, 0) for tid in counters
    )  # the counter never drifted
    # None stuck: every annotator's queue is served in order, so an open item below a done one would
    # be an item skipped for good (e.g. the one on screen when its replica was killed).
    for u in users:
        mine = [(pos, done) for who, pos, done in queues if who == u]
        last_done = max(pos for pos, done in mine if done)
        assert mine and all(done for pos, done in mine if pos < last_done), (
            f"{u} has an item stuck in the queue"
        )
    available = sum(1 for tid, n in counters.items() if n < OVERLAP)
    assert store.assignments.available_count("newcomer", KIND) == available > 0  # the rest is still on offer
    watcher.close()
