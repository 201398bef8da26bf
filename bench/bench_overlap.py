"""Simulation: fixed overlap 3 + majority vs adaptive overlap + Dawid–Skene, through prefkit's own
queues, adaptive rule and consensus.

Run: .venv/bin/python bench/bench_overlap.py [--items 300] [--seeds 0,1,2]

Items are ``preference_match`` tasks with a known true coverage (60 % fully, 25 % partially, 15 % not
covered); 20 of them are gold items mixed into every queue at the project's gold rate. Ten simulated
annotators answer from known confusion matrices: seven careful ones (accuracy 0.80–0.95, mistakes
spread over the other two values), two careless ones (accuracy 0.55, otherwise a random value) and one
adversary (answers "not_covered" for "fully" and "fully" otherwise, 80 % of the time). In rounds, each
annotator in a seeded random order takes their next item from the real queue
(``workflow.current_item``) and submits (``workflow.submit``, which runs the adaptive decision), until
every queue is empty or the budget — the labels fixed overlap 3 needs (3 per item plus every
annotator's gold items) — is spent. Final labels come from ``consensus.final_labels`` (majority for the
fixed arm, Dawid–Skene for the adaptive ones); in *accuracy* an undecided item (a tie, or below the
arm's posterior confidence) counts as wrong, as it would need a maintainer (when the queues run dry, the adaptive arms run
``workflow.adapt`` — ``prefkit tasks adapt`` — and go on while it hands items out); *decided* is the accuracy of the
decided ones. Before the run every annotator answers the gold items in a qualification round (the
same in every arm; its labels on gold are not counted), which is what establishes them for min = 1. α's 95 % bootstrap CI is read from ``agreement_rows``:
on the audit share for the adaptive arms (10 % of items, always given ``max`` annotators), on every
item for the fixed arm.

Prints one row per (arm, seed), the mean per arm, the worst seed's saving and accuracy difference
against the fixed arm of the same seed, and whether the issue's goal (>= 30 % fewer labels, accuracy
at most 1 point lower) holds on every seed.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prefkit.curation.annotation import workflow  # noqa: E402
from prefkit.curation.annotation.assignment import gold_rate_key  # noqa: E402
from prefkit.curation.annotation.task_admin import create_tasks  # noqa: E402
from prefkit.curation.project import Project  # noqa: E402
from prefkit.curation.quality.agreement import agreement_rows  # noqa: E402
from prefkit.curation.quality.consensus import final_labels  # noqa: E402
from prefkit.curation.store import PreferencePair  # noqa: E402
from prefkit.schemas.common import utcnow  # noqa: E402
from prefkit.schemas.config import OverlapRange  # noqa: E402
from prefkit.schemas.curation import Provenance  # noqa: E402

KIND = "preference_match"
VALUES = ("not_covered", "partially", "fully")
TRUTH_SHARE = (0.15, 0.25, 0.60)
N_GOLD = 20
ANNOTATORS = {  # name: (kind of annotator, accuracy)
    **{f"careful{i}": ("careful", acc) for i, acc in enumerate((0.95, 0.93, 0.9, 0.88, 0.85, 0.82, 0.8))},
    "careless0": ("careless", 0.55),
    "careless1": ("careless", 0.55),
    "adversary": ("adversary", 0.8),
}
ARMS = {  # name: (overlap, consensus, consensus_confidence); the adaptive rule's confidence is the range's
    "fixed 3 + majority": (3, "majority", 0.9),
    "adaptive 2..4 + Dawid-Skene": (OverlapRange(min=2, max=4), "dawid_skene", 0.9),
    "adaptive 1..4 + Dawid-Skene, confidence 0.9": (OverlapRange(min=1, max=4), "dawid_skene", 0.9),
    "adaptive 1..4 + Dawid-Skene, confidence 0.85": (
        OverlapRange(min=1, max=4, confidence=0.85),
        "dawid_skene",
        0.85,
    ),
    "adaptive 1..4 + Dawid-Skene, confidence 0.8": (
        OverlapRange(min=1, max=4, confidence=0.8),
        "dawid_skene",
        0.8,
    ),
    "adaptive 1..4 + Dawid-Skene, confidence 0.75": (
        OverlapRange(min=1, max=4, confidence=0.75),
        "dawid_skene",
        0.75,
    ),
}


BASELINE = "fixed 3 + majority"


def answer(rng: random.Random, who: str, truth: str) -> str:
    kind, acc = ANNOTATORS[who]
    if kind == "adversary":
        if rng.random() < acc:
            return "not_covered" if truth == "fully" else "fully"
        return truth
    if rng.random() < acc:
        return truth
    if kind == "careless":
        return rng.choice(VALUES)
    return rng.choice([v for v in VALUES if v != truth])


def build(
    root: Path, items: int, seed: int, overlap, consensus: str, confidence: float
) -> tuple[Project, dict[str, str]]:
    project = Project.init(root)
    cfg = root / "prefkit.toml"
    text = cfg.read_text().replace('consensus = "majority"', f'consensus = "{consensus}"')
    text = text.replace("consensus_confidence = 0.9", f"consensus_confidence = {confidence}")
    if not isinstance(overlap, int):  # the adaptive rule's own settings (audit share, confidence)
        rule = ", ".join(f"{k} = {v}" for k, v in overlap.model_dump().items())
        text = text.replace("\noverlap = 3\n", f"\noverlap = {{ {rule} }}\n")
    cfg.write_text(text)
    project = Project(root)
    with project.store.write() as conn:
        conn.execute(
            project.store.t["users"].insert(),
            [
                {
                    "username": u,
                    "role": "annotator",
                    "password_hash": "x",
                    "email": None,
                    "active": True,
                    "created_at": utcnow(),
                }
                for u in ANNOTATORS
            ],
        )
    rng = random.Random(seed)
    truth = {f"p{i:05d}": rng.choices(VALUES, TRUTH_SHARE)[0] for i in range(items + N_GOLD)}
    pairs = [PreferencePair(pid, f"Is item {pid} covered?", f"Candidate {pid}", "sim") for pid in truth]
    project.store.content.add_preference_pairs(pairs, Provenance(source="bench.overlap"))
    create_tasks(project, KIND, overlap=overlap, gold_rate=0.1)
    tasks = project.store.labels.tasks(kind=KIND)
    by_pair = {t.payload["pair_id"]: t for t in tasks}
    for pid in sorted(truth)[:N_GOLD]:
        project.store.labels.set_gold(by_pair[pid].task_id, {"coverage": truth[pid]})
    return project, {by_pair[pid].task_id: v for pid, v in truth.items()}


def qualify(project: Project, rng: random.Random, truth: dict[str, str]) -> None:
    """A qualification round, the same in every arm: each annotator first answers every gold item (the
    gold rate is raised for it, then set to 0: everyone has seen all gold). Their few regular items on
    the way count like any other label."""
    project.store.set_meta(gold_rate_key(KIND), "0.95")
    for who in ANNOTATORS:
        seen = 0
        while seen < N_GOLD:
            item = workflow.current_item(project, who, KIND)
            workflow.submit(project, who, item, {"coverage": answer(rng, who, truth[item.task.task_id])})
            seen += item.task.is_gold
    project.store.set_meta(gold_rate_key(KIND), "0")


def run_arm(items: int, seed: int, overlap, consensus: str, confidence: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        project, truth = build(Path(tmp) / "p", items, seed, overlap, consensus, confidence)
        rng = random.Random(f"answers:{seed}")
        qualify(project, rng, truth)
        order = list(ANNOTATORS)
        budget = 3 * items  # what fixed overlap 3 needs; the qualification round comes on top, in every arm
        spent, active, t0 = 0, set(order), time.perf_counter()
        while spent < budget:
            while active and spent < budget:
                random.Random(f"order:{seed}:{spent}").shuffle(order)
                for who in order:
                    if who not in active or spent >= budget:
                        continue
                    item = workflow.current_item(project, who, KIND)
                    if item is None:
                        active.discard(who)
                        continue
                    workflow.submit(
                        project, who, item, {"coverage": answer(rng, who, truth[item.task.task_id])}
                    )
                    spent += 1
            # the queues ran dry: what `prefkit tasks adapt` does before a release (refit, decide again)
            if not any(workflow.adapt(project, KIND).values()):
                break
            active = set(order)
        elapsed = time.perf_counter() - t0
        store = project.store
        tasks = {t.task_id: t for t in store.labels.tasks(kind=KIND)}
        regular = [tid for tid, t in tasks.items() if not t.is_gold]
        finals = final_labels(store, KIND)
        correct = sum((finals[tid].values or {}).get("coverage") == truth[tid] for tid in regular)
        undecided = sum(finals[tid].values is None for tid in regular)
        decided_acc = correct / max(1, len(regular) - undecided)
        labels = [e for e in store.labels.events(kind=KIND) if e.task_id in set(regular)]
        row = agreement_rows(store, kind=KIND, n_boot=1000, seed=0)[0]
        width = None if row["ci_low"] is None else row["ci_high"] - row["ci_low"]
        project.close()
        return {
            "labels": len(labels),
            "per_item": len(labels) / len(regular),
            "accuracy": correct / len(regular),
            "undecided": undecided / len(regular),
            "decided_accuracy": decided_acc,
            "alpha": row["alpha"],
            "ci_width": width,
            "alpha_on": row["share"],
            "alpha_units": row["n_units"],
            "spent": spent,
            "seconds": elapsed,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument(
        "--arms",
        help="Only the arms whose name contains one of these comma-separated words "
        "(the fixed arm always runs: it is the baseline).",
    )
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    arms = {
        name: arm
        for name, arm in ARMS.items()
        if name == BASELINE or not args.arms or any(w.strip() in name for w in args.arms.split(","))
    }
    print(
        f"items {args.items} (+{N_GOLD} gold), annotators {len(ANNOTATORS)}, seeds {seeds}; "
        f"nproc={os.cpu_count()}, load average {os.getloadavg()[0]:.1f}"
    )
    results: dict[str, list[dict]] = {}
    head = f"{'arm':<52} {'seed':>4} {'labels':>6} {'/item':>5} {'accuracy':>8} {'decided':>7} {'undecided':>9} {'alpha':>6} {'CI width':>8} {'on':>5} {'s':>5}"
    print(head)
    for arm, (overlap, consensus, confidence) in arms.items():
        for seed in seeds:
            r = run_arm(args.items, seed, overlap, consensus, confidence)
            results.setdefault(arm, []).append(r)
            width = "—" if r["ci_width"] is None else f"{r['ci_width']:.3f}"
            alpha = "—" if r["alpha"] is None else f"{r['alpha']:.3f}"
            print(
                f"{arm:<52} {seed:>4} {r['labels']:>6} {r['per_item']:>5.2f} {r['accuracy']:>8.3f} "
                f"{r['decided_accuracy']:>7.3f} {r['undecided']:>9.3f} {alpha:>6} {width:>8} {r['alpha_on']:>5} {r['seconds']:>5.1f}"
            )
    print()
    base = statistics.mean(r["labels"] for r in results[BASELINE])
    base_acc = statistics.mean(r["accuracy"] for r in results[BASELINE])
    print(
        f"{'mean over seeds':<52} {'labels':>6} {'saved':>6} {'accuracy':>8} {'Δ acc':>6} {'CI width':>8} "
        f"{'worst seed: saved':>17} {'Δ acc':>6}  goal on every seed"
    )
    for arm, rows in results.items():
        labels = statistics.mean(r["labels"] for r in rows)
        acc = statistics.mean(r["accuracy"] for r in rows)
        widths = [r["ci_width"] for r in rows if r["ci_width"] is not None]
        width = f"{statistics.mean(widths):.3f}" if widths else "—"
        # the goal, seed by seed against the fixed arm of the same seed: >= 30 % fewer labels
        # at an accuracy no more than 1 point below
        saved = [1 - r["labels"] / b["labels"] for r, b in zip(rows, results[BASELINE], strict=True)]
        delta = [r["accuracy"] - b["accuracy"] for r, b in zip(rows, results[BASELINE], strict=True)]
        goal = all(s >= 0.30 for s in saved) and all(d >= -0.01 for d in delta)
        print(
            f"{arm:<52} {labels:>6.0f} {1 - labels / base:>6.1%} {acc:>8.3f} {acc - base_acc:>+6.3f} {width:>8} "
            f"{min(saved):>17.1%} {min(delta):>+6.3f}  {'yes' if goal else 'no'}"
        )


if __name__ == "__main__":
    main()
