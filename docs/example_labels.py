"""Write ``pipelines/examples/labels.jsonl``: the labels of alice, bob and carol that the README's
maintainer tour imports (``prefkit examples`` copies it next to the other example inputs).

The labels fit the tour's project — ``prefkit generate --personas 2 --seed 0`` plus the example
AlpsBench packets, ``prefkit tasks pairs from-instances`` and the ``preference_expressed`` and
``preference_match`` tasks — and are drawn with a fixed seed so the file is byte-stable. They are
deliberately imperfect: mostly "expressed" (so α and AC1 disagree, as on real skewed data) and a few
coverage disagreements (so there is something to adjudicate).

Run ``python docs/example_labels.py`` after a change to offline generation; the README's console
blocks (``tests/test_console_blocks.py``) fail when the shipped file no longer fits the tour.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "pipelines" / "examples" / "labels.jsonl"
ANNOTATORS = ("alice", "bob", "carol")
COVERAGE = ("not_covered", "partially", "fully")


def tour_project(root: Path):
    """The tour's project state, built through the library calls behind the commands."""
    from prefkit.curation.annotation.task_admin import create_tasks
    from prefkit.curation.project import Project
    from prefkit.pipelines.generation.run import generate
    from prefkit.pipelines.ingest import alpsbench
    from prefkit.pipelines.matching import add_pairs_from_instances

    project = Project.init(root / "my-bench", name="my-bench")
    generate(project, backend="offline", personas=2, seed=0)
    project.store.content.import_bundle(alpsbench.build_bundle(ROOT / "pipelines" / "examples" / "alpsbench"))
    add_pairs_from_instances(project.store)
    for kind in ("preference_match", "preference_expressed"):
        create_tasks(project, kind, overlap=3, batch="week1")
    return project


def _match_truth(meta: dict) -> str:
    return "fully" if meta.get("relation") == "same_preference" else "not_covered"


def labels(project, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    pairs = {f"pair:{p.pair_id}": p.meta or {} for p in project.store.content.preference_pairs()}
    rows, minute = [], 0
    for task in sorted(project.store.labels.tasks(), key=lambda t: (t.kind, t.item_ref)):
        for who in ANNOTATORS:
            minute += 1
            if task.kind == "preference_match":
                truth = _match_truth(pairs[task.item_ref])
                value = truth if rng.random() < 0.8 else rng.choice(COVERAGE)
                values = {"coverage": value}
            elif task.kind == "preference_expressed":
                n = len(task.payload["checklist"])
                values = {"items": [{"item": i, "expressed": rng.random() < 0.9} for i in range(n)]}
            else:
                continue
            rows.append(
                {
                    "annotator": who,
                    "task_kind": task.kind,
                    "item_id": task.item_ref,
                    "values": values,
                    "time_spent_s": round(rng.uniform(8, 90), 1),
                    "timestamp": f"2026-03-02T{9 + minute // 60:02d}:{minute % 60:02d}:00.000000Z",
                }
            )
    return rows


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        project = tour_project(Path(tmp))
        rows = labels(project)
        project.close()
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} labels to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
