"""End to end through the loopback OpenAI-compatible server with the real openai client: what the
evaluated model sees, kill -9 and resume with no repeated call, scoring, the matching tasks built from
the run, people labelling them through the library, and the judge-vs-human α on the report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from evalkit import HIDDEN_MARK, cupid_release
from fakeopenai import fake_openai_fixture  # noqa: F401 - the fixture
from prefkit.cli import cli
from prefkit.curation.quality.consensus import final_labels
from prefkit.exports.release import cut_release
from prefkit.pipelines.eval import build_report, judge_validation
from prefkit.pipelines.eval.judge import judge_annotator
from prefkit.schemas.common import utcnow
from prefkit.schemas.config import ReleasePolicy
from prefkit.schemas.curation import LabelEvent

ROOT = Path(__file__).resolve().parent.parent
MODEL_SYSTEM = "You are a personal assistant"  # both prompts of the evaluated model start so
STAGES = ("eval.cupid.infer", "eval.cupid.match_gold", "eval.cupid.match_inferred")


def responder(body):
    system = body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    if system.startswith("You are a personal assistant reviewing"):
        return {"preference": "Short answers in bullet points"}
    if system.startswith("You check whether"):
        return {"reason": "r", "coverage": "fully" if "bullets?" in user else "partially"}
    if system.startswith("You compare"):
        return {
            "items": [
                {"item": "short answers", "coverage": "fully"},
                {"item": "bullets", "coverage": "fully"},
            ]
        }
    if system.startswith("You grade how well"):
        return {"reason": "r", "score": 7}
    return "Here is a short answer."


@pytest.fixture
def endpoint(fake_openai, monkeypatch):
    server = fake_openai(responder, latency=0.02)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-eval")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server


def run_cli(project, *args):
    result = CliRunner().invoke(cli, [*args, "--json", "-p", str(project.root)])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def eval_cupid(project, rel, *args):
    """``prefkit eval cupid`` of model ``m`` over the openai backend on ``rel``, prefkit's protocol."""
    cmd = f"eval cupid --release {rel} --model m --backend openai --protocol prefkit".split()
    return run_cli(project, *cmd, *args)


def test_no_hidden_field_reaches_the_evaluated_model(endpoint, project, tmp_path):
    rel = cupid_release(tmp_path, personas=2)
    for task in ("inference", "generation"):
        eval_cupid(project, rel, "--task", task)
    bodies = [json.dumps(r.body) for r in endpoint.chat_requests()]
    to_model = [
        b
        for b, r in zip(bodies, endpoint.chat_requests(), strict=True)
        if r.body["messages"][0]["content"].startswith(MODEL_SYSTEM)
    ]
    assert len(to_model) == 12  # 6 instances x (inference + generation)
    assert not [b for b in to_model if HIDDEN_MARK in b]
    assert len(bodies) > len(to_model)  # the judge was asked too
    assert all(HIDDEN_MARK in b for b in bodies if b not in to_model)  # the judge does see the gold
    assert all(json.loads(b)["model"] == "m" for b in to_model)


def test_oracle_relevant_shows_only_the_relevant_sessions(endpoint, project, tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    eval_cupid(project, rel, "--oracle", "relevant", "--limit", "1")
    (infer,) = [
        r for r in endpoint.chat_requests() if r.body["messages"][0]["content"].startswith(MODEL_SYSTEM)
    ]
    text = infer.body["messages"][-1]["content"]
    assert text.count("--- Conversation") == 1 and "Session 0 of p0" in text


CHILD = "from prefkit.cli import main; main()"


def test_kill_resume_score_pairs_and_judge_vs_human_alpha(endpoint, project, tmp_path):
    rel = cupid_release(
        tmp_path, personas=4
    )  # 12 instances: 12 inferences + 12 x (2 pairs + 1 decomposition)
    total = 12 + 12 * 3
    args = f"""eval cupid --release {rel} --model m --backend openai --protocol prefkit
        --json -p {project.root}""".split()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while endpoint.count() < 20 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    done = sum(1 for s in STAGES for row in project.store.llm.ledger(s) if row.status == "done")
    assert 5 <= done < total
    endpoint.reset_log()

    out = run_cli(project, *args[:-3])
    asked = [json.dumps(r.body, sort_keys=True) for r in endpoint.chat_requests()]
    assert len(asked) == len(set(asked)) == total - done  # nothing finished before the kill is asked again
    overall = next(r for r in out["rows"] if r["group"] == "overall")
    # every gold item: "bullets?" fully (1) + "short?" partially (0.5); both inferred items fully
    assert (overall["recall"], overall["precision"], overall["n_instances"]) == (0.75, 1.0, 12)
    run_id = out["run"]["run_id"]
    assert out["judge"]["validated"] is False

    pairs = run_cli(project, "tasks", "pairs", "from-eval", run_id, "--per-label", "3")
    assert pairs["sampled"] == {"fully": 3, "partially": 3, "not_covered": 0}
    assert pairs["new_tasks"] == 6 and pairs["judge_events"] == 6
    judge = judge_annotator("gpt-4o-mini")
    judged = {
        e.task_id: e.values["coverage"]
        for e in project.store.labels.events(kind="preference_match")
        if e.annotator == judge
    }
    assert len(judged) == 6 and all(e.source == "judge" for e in project.store.labels.events(annotator=judge))

    for name in ("ann1", "ann2", "ann3"):
        project.store.accounts.add_user(name, "annotator", "password-123")
    for i, (task_id, coverage) in enumerate(sorted(judged.items())):
        for name in ("ann1", "ann2", "ann3"):
            human = coverage if (name != "ann3" or i % 2) else "not_covered"
            project.store.labels.append_event(
                LabelEvent(
                    event_id=uuid.uuid4().hex,
                    task_id=task_id,
                    kind="preference_match",
                    annotator=name,
                    values={"coverage": human},
                    created_at=utcnow(),
                )
            )
    assert all(f.n_labels == 3 for f in final_labels(project.store, "preference_match").values())
    status = judge_validation(project.store, "gpt-4o-mini", n_boot=50)
    assert status["judge_vs_human"]["n_units"] == 6 and status["judge_vs_human"]["alpha"] == 1.0
    assert status["validated"] and status["human_vs_human"]["alpha"] < 1.0
    report = build_report(project.store, run_id, ReleasePolicy(judge_alpha_min=0.667))
    assert report["judge"]["status"] == "validated"
    strict = build_report(project.store, run_id, ReleasePolicy().model_copy(update={"judge_alpha_min": 1.01}))
    assert strict["judge"]["status"] == "not validated"
    md = CliRunner().invoke(cli, ["eval", "report", run_id, "--format", "md", "-p", str(project.root)])
    assert md.exit_code == 0 and f"Judge `{judge}`: validated" in md.output
    assert (project.root / "evals" / run_id / "f1_by_position.svg").is_file()
    project.config.release.allow_offline = True
    cut = cut_release(project, "0.1.0", override="eval test: only matching pairs in this project")
    card = (cut.path / "README.md").read_text(encoding="utf-8")
    assert f"| {judge} | preference_match | 6 | 1.000 |" in card and "validated |" in card
    released = (cut.path / "data" / "labels" / "preference_match.jsonl").read_text().splitlines()
    assert len(released) == 6 * 3  # people's labels only: the judge's are measured, not released as labels
