"""Simulation of judge-assisted labelling: does ``prefkit agreement --assist`` find the anchoring it was
given, and stay quiet when there is none?

Run: .venv/bin/python bench/bench_assist.py [--seeds 5] [--gold 60] [--regular 60] [--annotators 8]

Each run builds a real project store (temporary directory): ``--gold`` gold preference-matching items
and ``--regular`` regular ones, a suggestion per item (wrong on ``--wrong`` of the gold items),
annotators who each label every gold item and ``--overlap`` of them every regular item. An annotator's
arm on an item is the app's (``arm_of``: hash of annotator, kind, item; control share 0.2). Simulated
annotators answer from the item (the truth, with ``--error`` chance of another value) — and on the
assisted arm they copy the suggestion with probability ``copy``. Time on item: lognormal, assisted 20%
faster. The report (:func:`prefkit.curation.quality.suggestions.assist_report`) and the ``assist_anchoring``
gate are then read off the store. Prints one row per (copy probability, seed).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prefkit.curation.annotation.suggestions import arm_of  # noqa: E402
from prefkit.curation.project import Project  # noqa: E402
from prefkit.curation.quality.gates import ConfigPlan, run_gates  # noqa: E402
from prefkit.curation.quality.suggestions import assist_report  # noqa: E402
from prefkit.curation.store import (  # noqa: E402
    PreferencePair,  # noqa: E402
    Suggestion,
    SuggestionRun,
)
from prefkit.schemas.curation import LabelEvent, Provenance  # noqa: E402

KIND = "preference_match"
VALUES = ("not_covered", "partially", "fully")


def simulate(root: Path, copy: float, seed: int, args) -> dict:
    rng = np.random.default_rng(seed)
    Project.init(root, name="sim").close()
    project = Project(root)
    store = project.store
    from argon2 import PasswordHasher
    from prefkit.curation.store import accounts

    accounts._hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)  # cheap accounts
    names = [f"sim{i}" for i in range(args.annotators)]
    for name in names:
        store.accounts.add_user(name, "annotator", "simulated-password-1")
    n = args.gold + args.regular
    pairs = [PreferencePair(f"s{i:04d}", f"Checklist item {i}?", f"Candidate {i}", "sim") for i in range(n)]
    store.content.add_preference_pairs(pairs, Provenance(source="sim"))
    from prefkit.curation.annotation.task_admin import create_tasks

    create_tasks(project, KIND, overlap=args.overlap)
    tasks = sorted(store.labels.tasks(kind=KIND), key=lambda t: t.item_ref)
    truth = {t.task_id: VALUES[int(rng.integers(0, 3))] for t in tasks}
    gold = tasks[: args.gold]
    for t in gold:
        store.labels.set_gold(t.task_id, {"coverage": truth[t.task_id]})
    run = SuggestionRun("sugg-sim", KIND, "sim-judge", "offline", True, "sim", seed, {})
    suggested = {}
    for i, t in enumerate(tasks):
        wrong = (i < args.gold and rng.random() < args.wrong) or (i >= args.gold and rng.random() < 0.2)
        other = [v for v in VALUES if v != truth[t.task_id]]
        suggested[t.task_id] = other[int(rng.integers(0, 2))] if wrong else truth[t.task_id]
    made = [
        Suggestion(
            Suggestion.make_id(run.run_id, t.task_id),
            run.run_id,
            t.task_id,
            KIND,
            {"coverage": suggested[t.task_id]},
            {},
        )
        for t in tasks
    ]
    store.suggestions.add(run, made)
    sid = {s.task_id: s.suggestion_id for s in made}
    events = []
    for t in tasks:
        who = names if t.is_gold or t in gold else list(rng.choice(names, size=args.overlap, replace=False))
        for name in who:
            arm = arm_of(name, KIND, t.item_ref, 0.2)
            if arm == "assisted" and rng.random() < copy:
                value = suggested[t.task_id]
            elif rng.random() < args.error:
                value = [v for v in VALUES if v != truth[t.task_id]][int(rng.integers(0, 2))]
            else:
                value = truth[t.task_id]
            secs = float(rng.lognormal(np.log(12 if arm == "control" else 9.6), 0.4))
            events.append(
                LabelEvent(
                    event_id=uuid.uuid4().hex,
                    task_id=t.task_id,
                    kind=KIND,
                    annotator=name,
                    values={"coverage": value},
                    time_spent_s=round(secs, 2),
                    created_at="2026-11-20T10:00:00.000000Z",
                    assist_arm=arm,
                    suggestion_id=sid[t.task_id],
                )
            )
    store.labels.append_events(events)
    t0 = time.perf_counter()
    report = assist_report(store, n_boot=args.boot, seed=seed)
    took = time.perf_counter() - t0
    gate = next(
        r
        for r in run_gates(
            store,
            project.config.release,
            [ConfigPlan("labels", (KIND,), len(events))],
            agreement_rows=lambda _s: [],
        )
        if r.gate == "assist_anchoring"
    )
    project.close()
    ka = report.kinds[KIND]
    a, c = ka.arms["assisted"], ka.arms["control"]
    return {
        "copy": copy,
        "seed": seed,
        "labels": a.n_labels + c.n_labels,
        "assisted": a.anchoring_rate,
        "control": c.anchoring_rate,
        "diff": ka.anchoring_difference,
        "detected": ka.significantly_worse,
        "gate": "pass" if gate.passed else "FAIL",
        "time": (a.time_median.value, c.time_median.value),
        "report_s": took,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--copies", default="0,0.15,0.3,0.6", help="Copy probabilities to simulate.")
    p.add_argument("--gold", type=int, default=60)
    p.add_argument("--regular", type=int, default=60)
    p.add_argument("--annotators", type=int, default=8)
    p.add_argument("--overlap", type=int, default=3)
    p.add_argument("--wrong", type=float, default=0.5, help="Share of gold items with a wrong suggestion.")
    p.add_argument("--error", type=float, default=0.1, help="Chance an annotator answers another value.")
    p.add_argument("--boot", type=int, default=1000)
    args = p.parse_args()
    print(
        f"nproc={os.cpu_count()} load={os.getloadavg()[0]:.1f} gold={args.gold} regular={args.regular} "
        f"annotators={args.annotators} wrong={args.wrong} error={args.error} boot={args.boot}"
    )
    head = (
        f"{'copy':>5} {'seed':>4} {'labels':>6}  {'anchoring assisted':<26} {'anchoring control':<26} "
        f"{'difference [95% CI]':<30} {'detected':>8} {'gate':>5} {'median s a/c':>13} {'report s':>8}"
    )
    print(head)
    summary: dict[float, list[bool]] = {}
    for copy in [float(x) for x in args.copies.split(",")]:
        for seed in range(args.seeds):
            with tempfile.TemporaryDirectory() as tmp:
                r = simulate(Path(tmp) / "sim", copy, seed, args)
            summary.setdefault(copy, []).append(bool(r["detected"]))
            d = r["diff"]
            diff = f"{d.value:+.3f} [{d.ci_low:+.3f}, {d.ci_high:+.3f}]" if d.value is not None else "-"
            print(
                f"{copy:>5} {seed:>4} {r['labels']:>6}  {r['assisted'].text():<26} {r['control'].text():<26} "
                f"{diff:<30} {str(r['detected']):>8} {r['gate']:>5} "
                f"{r['time'][0]:>6.1f}/{r['time'][1]:<6.1f} {r['report_s']:>8.2f}"
            )
    print(
        "detected (one-sided 5%) per copy probability: "
        + ", ".join(f"{c}: {sum(v)}/{len(v)}" for c, v in summary.items())
    )


if __name__ == "__main__":
    main()
