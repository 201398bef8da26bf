"""End to end through the CLI (and the app's rewrite): what annotators decide is what is released.

Generate offline -> tasks -> labels imported for two annotators (a session's item not expressed, a
tie adjudicated, a turn rewritten and re-verified, memories accepted, rejected, edited and added)
-> release; then repair the failed session, re-verify it and release again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import workflow
from prefkit.curation.project import Project
from prefkit.exports.release import private_dir
from test_release_support import add_users

EXAMPLES = Path(__file__).resolve().parent.parent / "pipelines" / "examples" / "alpsbench"
WHEN = "2026-11-30T09:00:00+00:00"
REWRITE = "Please keep it exactly like that whenever this comes up."
EDIT = {
    "value": "Runs a first marathon this April",
    "label": "Thoughts/Goals/Short_Term",
    "type": "direct",
    "time_scope": "short_term",
    "evidence_turn": 0,
    "evidence_text": "I'm training for my first marathon in April",
    "confidence": 0.9,
}
ADDED = {
    "value": "Reads answers on a phone",
    "label": "Preferences/Communication_Format",
    "type": "indirect",
    "time_scope": "long_term",
    "evidence_turn": 2,
    "evidence_text": "I read these on my phone",
    "confidence": 0.7,
}


def run(root: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "-p", str(root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def row(annotator: str, task, values: dict) -> str:
    return json.dumps(
        {
            "annotator": annotator,
            "task_kind": task.kind,
            "item_id": task.item_ref,
            "values": values,
            "timestamp": WHEN,
        }
    )


def expressed(task, missing=()) -> dict:
    return {
        "items": [{"item": i, "expressed": i not in missing} for i in range(len(task.payload["checklist"]))]
    }


def import_labels(root: Path, lines: list[str], name: str) -> None:
    path = root / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run(root, "labels", "import", str(path))


def rows(release: Path, config: str, split: str = "test") -> list[dict]:
    path = release / "data" / config / f"{split}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def bench(tmp_path):
    root = tmp_path / "bench"
    CliRunner().invoke(cli, ["init", str(root)], catch_exceptions=False)
    run(root, "generate", "--personas", "1", "--seed", "0")
    run(root, "import", "alpsbench", str(EXAMPLES))
    project = Project(root)
    add_users(project.store, "ann1", "ann2")
    add_users(project.store, "lead", role="maintainer")
    run(root, "tasks", "create", "--kind", "preference_expressed", "--overlap", "2")
    run(root, "tasks", "create", "--kind", "memory_verify", "--overlap", "2")
    yield project
    project.close()


def test_annotators_decide_the_release_end_to_end(bench):
    root, store = bench.root, bench.store
    pid = store.generation.personas()[0].persona_id
    role = {f"{pid}-s{s.index:02d}": s.role for s in store.generation.plan(pid).slots}
    b_session = next(s for s, r in role.items() if r == "B")
    a_session = next(s for s, r in role.items() if r == "A")
    filler = next(s for s, r in role.items() if r == "other")
    expressed_tasks = {t.payload["dialogue_id"]: t for t in store.labels.tasks(kind="preference_expressed")}
    memory_task = next(
        t for t in store.labels.tasks(kind="memory_verify") if t.payload["dialogue_id"] == "sess_demo000001"
    )
    keys = [c["key"] for c in memory_task.payload["candidates"]]
    broken = {
        c["key"] for c in memory_task.payload["candidates"] if not c["valid"]
    }  # the model broke the schema
    accepted = [k for k in keys[2:] if k not in broken]
    decisions = [
        {"key": keys[0], "decision": "reject", "reason": "not_grounded"},
        {"key": keys[1], "decision": "edit", "edited": EDIT},
        *({"key": k, "decision": "reject", "reason": "other"} for k in sorted(broken)),
        *({"key": k, "decision": "accept"} for k in accepted),
    ]
    lines = []
    for sid, task in expressed_tasks.items():
        for who in ("ann1", "ann2"):
            missing = (0,) if sid == b_session or (sid == filler and who == "ann2") else ()
            lines.append(row(who, task, expressed(task, missing)))
    for who in ("ann1", "ann2"):
        lines.append(row(who, memory_task, {"decisions": decisions, "added": [ADDED]}))
    import_labels(root, lines, "week1")
    tie = expressed_tasks[filler].task_id
    assert tie in run(root, "adjudicate", "queue")
    run(
        root,
        "adjudicate",
        "decide",
        tie,
        "--as",
        "lead",
        "--values",
        json.dumps(expressed(expressed_tasks[filler])),
    )

    # A rewrite after labelling: a new verification round, labelled like any task.
    old = expressed_tasks[a_session]
    turn = next(t["index"] for t in old.payload["turns"] if t["role"] == "user" and t["index"] > 0)
    workflow.rewrite_turn(bench, "ann1", old, turn, REWRITE, "clearer")
    again = next(
        t for t in store.labels.tasks(kind="preference_expressed") if t.item_ref == f"session:{a_session}@r1"
    )
    import_labels(root, [row(w, again, expressed(again)) for w in ("ann1", "ann2")], "week2")

    run(
        root,
        "release",
        "cut",
        "--version",
        "1.0.0",
        "--override",
        "two annotators: gates are not the subject",
    )
    rel = bench.releases_dir / "1.0.0"
    verified = rows(rel, "cupid")
    assert sorted(r["instance_type"] for r in verified) == ["changing", "consistent"]  # contrastive needs B
    assert sorted(r["instance_type"] for r in rows(rel, "cupid_unverified")) == [
        "changing",
        "consistent",
        "contrastive",
    ]
    assert all(REWRITE in json.dumps(r["prior_interactions"]) for r in verified)
    assert not any(REWRITE in json.dumps(r["prior_interactions"]) for r in rows(rel, "cupid_unverified"))
    card = (rel / "README.md").read_text(encoding="utf-8")
    assert "1: 1 a session it depends on is failed" in card

    # AlpsBench: the verified gold is the Task 1 reference, equal to the decisions.
    gold_rows = [
        json.loads(x)
        for p in sorted(private_dir(bench, "1.0.0").glob("alpsbench_task1_gold/*.jsonl"))
        for x in p.read_text(encoding="utf-8").splitlines()
    ]
    gold_rows += [
        r
        for s in ("dev", "validation")
        if (rel / f"data/alpsbench_task1_gold/{s}.jsonl").exists()
        for r in rows(rel, "alpsbench_task1_gold", s)
    ]
    (only,) = gold_rows
    memories = json.loads(only["gold"])["memory_items"]
    cands = {c["key"]: c["memory"] for c in memory_task.payload["candidates"]}
    assert [m["value"] for m in memories] == [
        EDIT["value"],
        *(cands[k]["value"] for k in accepted),
        ADDED["value"],
    ]
    assert memories[0]["evidence"] == {
        "session_id": "sess_demo000001",
        "utterance_index": 0,
        "text": EDIT["evidence_text"],
    }
    assert memories[0]["confidence"] == 0.9 and memories[-1]["time_scope"] == "long_term"
    packets = {
        json.loads(x)["id"]: json.loads(x)
        for x in (private_dir(bench, "1.0.0") / "alpsbench_packets/full.jsonl").read_text().splitlines()
    }
    verification = json.loads(packets["sess_demo000001"]["verification"])
    assert [(r["key"], r["reason"]) for r in verification["rejected"]] == [
        (keys[0], "not_grounded"),
        *((k, "other") for k in sorted(broken)),
    ]
    assert (verification["accepted"], verification["edited"], verification["added"]) == (2, 1, 1)
    assert json.loads(packets["sess_demo000002"]["verification"]) == {"status": "unverified"}
    unverified = {
        r["session_id"]
        for s in ("dev", "validation", "test")
        if (rel / f"data/alpsbench_unverified/{s}.jsonl").exists()
        for r in rows(rel, "alpsbench_unverified", s)
    }
    assert unverified == {"sess_demo000002", "sess_demo000003"}
    gates = {g["gate"]: g for g in json.loads((rel / "manifest.json").read_text())["gates"]}
    assert (
        "alpsbench_task1" in gates["gold_evidence"]["applies_to"] and "cupid" in gates["alpha"]["applies_to"]
    )

    # Repair: the failed B session gets a new dialogue; re-verified, its instance comes back.
    out = run(root, "generate", "--repair")
    assert "repair round 1: 1 failed session(s) regenerated, 1 re-verification task(s) queued" in out
    redo = next(
        t for t in store.labels.tasks(kind="preference_expressed") if t.item_ref == f"session:{b_session}@r1"
    )
    import_labels(root, [row(w, redo, expressed(redo)) for w in ("ann1", "ann2")], "week3")
    assert "round 1 recovered 1 instance(s) (verified 2 -> 3)" in run(root, "generate", "--repair")
    run(
        root,
        "release",
        "cut",
        "--version",
        "2.0.0",
        "--override",
        "two annotators: gates are not the subject",
    )
    assert sorted(r["instance_type"] for r in rows(bench.releases_dir / "2.0.0", "cupid")) == [
        "changing",
        "consistent",
        "contrastive",
    ]
