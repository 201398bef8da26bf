"""Annotation app, server side: the library calls behind one submit, on a big project.

Builds a project with 100,000 preference_match items and 300,000 label events (20 annotators), then
times 500 submits of one annotator who already holds ~15,000 labels. One submit = exactly the library
calls the Annotate page makes between a click and the next item on screen:

- the run's session check: ``sessions.holds`` (one primary-key read: a session signed out in another
  tab, expired or revoked, or a disabled account, acts no more; a full run's, timed on every submit);
- the Submit callback: ``workflow.submit`` naming the session (checked in the write's transaction);
- the item fragment's run: ``workflow.annotator_view`` (session, account, open item and queue version
  in one read; a new chunk every 10 items) and ``workflow.progress_memo`` (the counts brought up to
  date from the events since the last run).

Not per submit, so not timed per submit: the guidelines (sidebar, outside the fragment) and the pool
count (cached two minutes; timed once below). Every event is timestamped today: the worst case for
"today". Prints p50/p95/max, each call's share and the query plans of the queue.

Usage: python bench/bench_app.py [--items 100000] [--events 300000] [--submits 500] [--database URL]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from prefkit.curation.annotation import sessions, workflow
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.project import Project
from prefkit.curation.store.common import search_text
from prefkit.schemas.common import utcnow

ANNOTATORS = 20
OVERLAP = 5


def build(root: Path, items: int, events: int, database: str | None = None) -> Project:
    """A project on ``database`` (default: its own SQLite file) with ``items`` tasks, ``events`` labels."""
    project = Project.init(root, name="bench-app", database=database)
    store, now, kind = project.store, utcnow(), get_kind("preference_match")
    users = [f"ann{i:02d}" for i in range(ANNOTATORS)]
    labelled = events // OVERLAP  # these items already carry OVERLAP labels each
    with store.write() as conn:
        conn.execute(
            store.t["users"].insert(),
            [
                {
                    "username": u,
                    "role": "annotator",
                    "password_hash": "x",
                    "email": None,
                    "active": True,
                    "created_at": now,
                }
                for u in users
            ],
        )
        conn.execute(
            store.t["batches"].insert(),
            {"batch_id": "default", "kind": kind.name, "status": "open", "created_at": now},
        )
        rows = []
        for i in range(items):
            ref = f"pair:p{i:07d}"
            payload = {
                "pair_id": f"p{i:07d}",
                "checklist_item": f"Does the reply mention deadline {i}?",
                "candidate": f"The user wants deadlines for task {i} called out.",
                "instance_id": None,
                "origin": "bench",
            }
            rows.append(
                {
                    "task_id": kind.task_id(ref),
                    "search_text": search_text(kind.task_id(ref), ref, payload),
                    "kind": kind.name,
                    "item_ref": ref,
                    "payload_json": store.dumps(payload),
                    "batch_id": "default",
                    "overlap": OVERLAP,
                    "is_gold": False,
                    "gold_answer_json": None,
                    "schema_version": "1.0",
                    "created_at": now,
                    "n_assigned": OVERLAP if i < labelled else 0,
                }
            )
        conn.execute(store.t["tasks"].insert(), rows)
        task_ids = [r["task_id"] for r in rows[:labelled]]
        assignments, label_events, position = [], [], dict.fromkeys(users, 0)
        for j, tid in enumerate(task_ids):
            for k in range(OVERLAP):
                who = users[(j + k * 4) % ANNOTATORS]
                assignments.append(
                    {
                        "task_id": tid,
                        "annotator": who,
                        "position": position[who],
                        "assigned_at": now,
                        "event_id": f"ev_{j}_{k}",
                        "shown_at": now,
                        "done_at": now,
                        "kind": kind.name,
                        "batch_id": "default",
                    }
                )
                position[who] += 1
                label_events.append(
                    {
                        "event_id": f"ev_{j}_{k}",
                        "task_id": tid,
                        "kind": kind.name,
                        "annotator": who,
                        "action": "label",
                        "values_json": '{"coverage":"fully"}',
                        "comment": None,
                        "time_spent_s": 4.0,
                        "supersedes": None,
                        "source": "app",
                        "schema_version": "1.0",
                        "created_at": now,
                    }
                )
        if assignments:  # a project without earlier labels (bench_browser's small one) has none
            conn.execute(store.t["assignments"].insert(), assignments)
            conn.execute(store.t["label_events"].insert(), label_events)
    with store.write() as conn:
        conn.exec_driver_sql("ANALYZE")
    return project


def one_submit(
    project: Project, user: str, token: str, item: workflow.ShownItem, memo, parts: dict[str, list[float]]
):
    """The page's calls between a click and the next item, for the browser session holding ``token``;
    ``parts`` collects each call's ms. Returns the next item and the counts' memo, as the page keeps
    them between runs."""
    kind = item.task.kind
    view = None

    def next_item():
        nonlocal view
        view = workflow.annotator_view(project, user, kind, token)

    values = {"coverage": "partially"}
    steps = (
        ("session check", lambda: sessions.holds(project.store, token, user)),
        ("submit", lambda: workflow.submit(project, user, item, values, signed_in=True, session=token)),
        ("next item", next_item),
        ("progress", lambda: workflow.progress_memo(project, user, memo, view.version)),
    )
    results = {}
    for name, call in steps:
        start = time.perf_counter()
        results[name] = call()
        parts.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    return view.item, results["progress"]


def library_submits(project: Project, user: str, n: int) -> tuple[list[float], dict[str, list[float]]]:
    """``n`` submits of ``user`` (preference_match) through :func:`one_submit`: total ms each, and per call."""
    kind = "preference_match"
    token = sessions.issue(project.store, user, hours=12)  # the browser session's sign-in
    view = workflow.annotator_view(project, user, kind, token)
    assert view.active
    item, memo = view.item, workflow.progress_memo(project, user, None, view.version)
    times: list[float] = []
    parts: dict[str, list[float]] = {}
    for _ in range(n):
        if item is None:
            break
        start = time.perf_counter()
        item, memo = one_submit(project, user, token, item, memo, parts)
        times.append((time.perf_counter() - start) * 1000)
    return times, parts


def pct(values: list[float]) -> str:
    q = statistics.quantiles(values, n=100)
    return f"p50 {q[49]:.1f} ms  p95 {q[94]:.1f} ms  max {max(values):.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--submits", type=int, default=500)
    ap.add_argument("--database", help="a postgresql:// URL of an empty database (default: SQLite)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        project = build(Path(tmp) / "proj", args.items, args.events, args.database)
        print(
            f"built {args.items:,} items, {project.store.count('label_events'):,} label events "
            f"in {time.perf_counter() - t0:.1f}s (nproc={os.cpu_count()})"
        )
        user = "ann00"
        print(f"{user} already holds {len(project.store.labels.events(annotator=user)):,} labels")
        times, parts = library_submits(project, user, args.submits)
        print(f"submit -> next item ({len(times)} submits): {pct(times)}  (goal p95 <= 100 ms)")
        for name, values in parts.items():
            print(f"  {name:<17} {pct(values)}")
        start = time.perf_counter()
        pool = workflow.available(project, user, "preference_match")
        print(
            f"pool count beside the progress ({pool:,} items; cached 2 minutes by the page): "
            f"{(time.perf_counter() - start) * 1000:.1f} ms"
        )
        for name, plan in project.store.assignments.queue_query_plans(user, "preference_match").items():
            print(f"plan {name}: {plan}")
        project.close()
    # The same step in Label Studio, in the same run, when a server is available.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_labelstudio

    print("Label Studio, same step (GET /next + POST) on the same number of tasks:")
    bench_labelstudio.main(["--tasks", str(args.items), "--steps", str(args.submits)])


if __name__ == "__main__":
    main()
