"""Adaptive overlap under concurrency: 16 annotators in 2 replicas (processes, one thread per
annotator, as ``prefkit annotate serve`` runs them) on SQLite and on PostgreSQL, one replica killed
with SIGKILL mid-run and its annotators resumed on a fresh one. Afterwards: every acknowledged label
is recorded once, no item was ever handed to more annotators than its target (nor its target above
``max``), the holder counters never drifted, and no item starved: each one has all the labels its
target asks for, and a target below ``max`` is one whose labels are certain.

The annotators disagree on purpose (each answers "fully" with a probability of their own), so many
items go to a third and fourth annotator while the replicas race for them.
"""

from __future__ import annotations

import hashlib
import os
import signal
import threading
import time
import traceback
from pathlib import Path

import pytest
from appkit import replica, seed_pairs
from conftest import Forked
from prefkit.curation.annotation import overlap, workflow
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.schemas.common import utcnow
from prefkit.schemas.config import OverlapRange
from prefkit.schemas.curation import LabelEvent
from sqlalchemy import func, select
from test_release_support import add_users

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.timeout(900),
]  # the replicas get up to 600 s below

ANNOTATORS = 16
ITEMS = 120
RULE = OverlapRange(min=2, max=4, audit_share=0.1)
KIND = "preference_match"
FROZEN = overlap.Snapshot(10**12, "dawid_skene", {}, {})


def _answer(user: str, task_id: str) -> str:
    care = 0.55 + 0.4 * (int(user[3:]) % 5) / 4  # 0.55 .. 0.95
    draw = int(hashlib.sha256(f"{user}:{task_id}".encode()).hexdigest()[:8], 16) / 2**32
    if draw < care:
        return "fully"
    return "partially" if draw < care + (1 - care) / 2 else "not_covered"


def quiescent(project: Project) -> bool:
    """Nothing can change any more: nobody holds an open item (only a submit can raise a target, and
    a submit needs one), and no item is short of its target with an annotator who never had it."""
    t, a = project.store.t["tasks"], project.store.t["assignments"]
    with project.store.read() as conn:
        if conn.execute(select(func.count()).where(a.c.done_at.is_(None))).scalar_one():
            return False
        short = conn.execute(
            select(func.count()).where(t.c.n_assigned < t.c.overlap, t.c.n_assigned < ANNOTATORS)
        )
        return short.scalar_one() == 0


def annotate(project: Project, user: str, acks: Path, errors: list[str]) -> None:
    """Like a team that keeps coming back: an annotator with an empty queue looks again a moment later
    (someone else's label may hand an item to one more person) until nothing can change."""
    try:
        with acks.open("a", buffering=1) as ack:
            while True:
                item = workflow.current_item(project, user, KIND)
                if item is None:
                    if quiescent(project):
                        return
                    time.sleep(0.05)
                    continue
                assert workflow.submit(project, user, item, {"coverage": _answer(user, item.task.task_id)})
                ack.write(item.event_id + "\n")
    except BaseException:  # noqa: BLE001 - reported through the replica's exit code
        errors.append(f"{user}: {traceback.format_exc()}")


def _setup(root: Path, database: str | None) -> list[str]:
    project = Project.init(root, database=database)
    users = [f"ann{i:02d}" for i in range(ANNOTATORS)]
    add_users(project.store, *users)  # sign-in is not what is tested here
    seed_pairs(project, ITEMS)
    create_tasks(project, KIND, overlap=RULE, gold_rate=0)
    # A fixed reliability snapshot (never stale: its log position is far ahead), so every decision of
    # the run is reproducible afterwards; the annotators are unknown to it (accuracy 0.75 each).
    project.store.set_meta(overlap.snapshot_key(KIND), FROZEN.dumps())
    project.close()
    return users


def _run_with_a_kill(root: Path, acks: Path, users: list[str], database: str | None) -> None:
    ctx = Forked(__name__)
    first, second = users[: ANNOTATORS // 2], users[ANNOTATORS // 2 :]
    doomed = ctx.Process(target=replica, args=(annotate, str(root), first, str(acks), database))
    survivor = ctx.Process(target=replica, args=(annotate, str(root), second, str(acks), database))
    doomed.start()
    survivor.start()
    watcher = Project(root)
    deadline = time.monotonic() + 240
    while watcher.store.count("label_events") < ITEMS // 2:  # part of the way in
        assert time.monotonic() < deadline and doomed.is_alive(), "the replicas made no progress"
        time.sleep(0.02)
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.join()
    watcher.close()
    assert doomed.exitcode == -signal.SIGKILL
    replacement = ctx.Process(target=replica, args=(annotate, str(root), first, str(acks), database))
    replacement.start()
    for p in (survivor, replacement):
        p.join(timeout=600)
        assert not p.is_alive(), "a replica did not finish its queue within 600 s"
    errors = "".join(f.read_text() for f in acks.glob("errors-*.txt"))
    assert (survivor.exitcode, replacement.exitcode) == (0, 0), errors


def _check(root: Path, acks: Path, users: list[str]) -> None:
    project = Project(root)
    store = project.store
    events = store.labels.events(kind=KIND)
    acked = [line for u in users for line in (acks / f"{u}.acks").read_text().split()]
    repeats = store.repeats.events(kind=KIND)  # an annotator past 20 labels meets repeats (issue 49)
    recorded = {e.event_id for e in [*events, *repeats]}
    assert acked and not set(acked) - recorded  # 0 acknowledged labels lost
    assert len(recorded) == len(events) + len(repeats)
    assert len({(r.task_id, r.annotator) for r in repeats}) == len(repeats)  # one repeat per item
    assert len({(e.task_id, e.annotator) for e in events}) == len(events)  # nobody labelled an item twice
    tasks = {t.task_id: t for t in store.labels.tasks(kind=KIND)}
    t, a = store.t["tasks"], store.t["assignments"]
    with store.read() as conn:
        held = dict(conn.execute(select(a.c.task_id, func.count()).group_by(a.c.task_id)).all())
        counters = dict(conn.execute(select(t.c.task_id, t.c.n_assigned)).all())
        still_open = conn.execute(select(func.count()).where(a.c.done_at.is_(None))).scalar_one()
    assert still_open == 0  # every queue ran dry: nothing stuck on anyone's screen
    assert all(counters[tid] == held.get(tid, 0) for tid in counters)  # the counter never drifted
    in_order: dict[str, list] = {}
    for e in events:
        in_order.setdefault(e.task_id, []).append(e)
    assert overlap.read_snapshot(store, KIND).seq == FROZEN.seq  # nobody refitted it
    raised = 0
    for tid, task in tasks.items():
        mine = {e.annotator: e.values for e in in_order.get(tid, [])}
        assert held.get(tid, 0) <= task.overlap <= RULE.max  # never over its target
        assert len(mine) == task.overlap  # none starved: every slot of its target was filled
        if task.audit:
            assert task.overlap == RULE.max
            continue
        # each raise was due: the first n labels were uncertain for every n from min to target - 1
        for n in range(RULE.min, task.overlap):
            first = {e.annotator: e.values for e in in_order[tid][:n]}
            assert not overlap.certain(KIND, first, FROZEN, RULE), (tid, n)
        # and where it stopped below max, its labels are certain
        assert task.overlap == RULE.max or overlap.certain(KIND, mine, FROZEN, RULE), tid
        raised += task.overlap > RULE.min
    assert raised >= ITEMS // 10  # the disagreements really sent items to more annotators
    assert sum(task.audit for task in tasks.values()) >= 3
    project.close()


def _sixteen_annotators(tmp_path: Path, database: str | None) -> None:
    root, acks = tmp_path / "proj", tmp_path / "acks"
    acks.mkdir()
    users = _setup(root, database)
    _run_with_a_kill(root, acks, users, None)
    _check(root, acks, users)


def test_sqlite_sixteen_annotators_two_replicas_and_a_kill(tmp_path):
    """``_sixteen_annotators`` asserts it: no label lost, no item over its overlap, none stuck, on SQLite."""
    _sixteen_annotators(tmp_path, None)


@pytest.mark.postgres
def test_postgres_sixteen_annotators_two_replicas_and_a_kill(tmp_path, pg_url):
    """``_sixteen_annotators`` asserts it: no label lost, no item over its overlap, none stuck, on PostgreSQL."""
    _sixteen_annotators(tmp_path, pg_url)


@pytest.mark.postgres
def test_two_last_labels_at_once_on_postgres_still_raise_the_target(tmp_path, pg_url):
    """The race the task lock is for: two annotators send the last two labels of an item together.
    The first decides while the second's label is not committed (so it cannot count it) and keeps its
    transaction open a moment; the second must wait for it, then see both labels and raise the target.
    Without the lock both would decide on one label and the disagreeing item would starve at 2."""
    project = Project.init(tmp_path / "p", database=pg_url)
    add_users(project.store, "ann00", "ann01")
    seed_pairs(project, 1)
    create_tasks(project, KIND, overlap=OverlapRange(min=2, max=3, audit_share=0), gold_rate=0)
    items = {u: workflow.current_item(project, u, KIND) for u in ("ann00", "ann01")}
    (task,) = project.store.labels.tasks(kind=KIND)
    inside = threading.Event()

    def slow_review(conn):
        overlap.decide(conn, project.store, task.task_id, KIND, RULE, FROZEN)
        inside.set()
        time.sleep(1.0)  # the second submit arrives while this transaction is still open

    def submit(user: str, value: str, review) -> None:
        ev = LabelEvent(
            event_id=items[user].event_id,
            task_id=task.task_id,
            kind=KIND,
            annotator=user,
            values={"coverage": value},
            created_at=utcnow(),
        )
        project.store.submits.record_submit(ev, review=review)

    first = threading.Thread(target=submit, args=("ann00", "fully", slow_review))
    first.start()
    assert inside.wait(10)
    normal = overlap.review_hook(project.store, task.task_id, KIND, RULE, FROZEN)
    submit("ann01", "not_covered", normal)
    first.join()
    assert project.store.labels.task(task.task_id).overlap == 3  # the disagreement goes to a third
    project.close()
