"""End to end with backend "openai": the real openai client against the loopback fake server."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fakeopenai import openai_projects
from prefkit.curation.project import Project
from prefkit.pipelines.generation import offline
from prefkit.pipelines.generation.run import generation_settings, run_generation
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.llm.types import LLMRequest

ROOT = Path(__file__).resolve().parent.parent


def _factors(user: str) -> dict:
    persona = re.search(r'The user:\n"(.+?)" \(occupation', user, re.S).group(1)
    n = int(re.search(r"exactly (\d+) context factors", user).group(1))
    request = LLMRequest(
        stage="factors",
        item="x",
        role="writer",
        messages=(),
        offline_context={"persona": persona, "n_factors": n},
    )
    return offline.offline_factors(request, random.Random(n)).model_dump(mode="json")


def _stories(user: str) -> dict:
    a_pref = re.search(r'preference about it is: "(.+?)"\n', user).group(1)
    sessions = re.findall(r'^Session (\d+): factor "(.+?)" \(', user, re.M)
    return {
        "changed_preference": offline._changed_preference(a_pref),
        "sessions": [
            {
                "index": int(i),
                "story": f"Session {i} of a busy month, with {name} in the background.",
                "opening_request": f"Could you help me with a task involving {name} this week?",
            }
            for i, name in sessions
        ],
    }


def _verdict(system: str, user: str) -> dict:
    k = len(re.findall(r"^\d+\. Does the reply", system, re.M))
    first_reply = user.count("[assistant]") == 1
    scores = [{"item": i, "score": 3 if first_reply else 9} for i in range(1, k + 1)]
    if first_reply:
        return {
            "scores": scores,
            "feedback_items": [1],
            "message": "Hmm, that misses what usually works for me here.",
        }
    never = re.search(r"You have not yet alluded to item\(s\) ([\d, ]+)\.", user)
    if never:  # every item met, but the conversation cannot end before each one was raised
        items = [int(x) for x in never.group(1).split(",")]
        return {"scores": scores, "feedback_items": items, "message": "Good, that is how it has to be here."}
    return {"scores": scores, "feedback_items": [], "message": ""}


def responder(body: dict) -> str | dict:
    system = body["messages"][0]["content"]
    user = body["messages"][1]["content"] if len(body["messages"]) > 1 else ""
    if system.startswith("You write realistic user personas"):
        return {
            "text": "Rosa Delgado is a staff nurse on a busy surgical ward who plans every shift in a notebook, "
            "wants to move into teaching, dislikes rushed handovers and walks to work each morning.",
            "occupation": "staff nurse",
        }
    if system.startswith("You help build a personalization benchmark"):
        return _factors(user)
    if system.startswith("You write the story"):
        return _stories(user)
    if system.startswith("You turn a user's preference"):
        pref = re.search(r'Preference: "(.+)"', user).group(1)
        return {"items": [{"question": q} for q in offline.bank_checklist(pref)]}
    if system.startswith("You play a user"):
        return _verdict(system, user)
    return "Here is a practical answer: start with the goal, list the constraints, then the next step."


@pytest.fixture
def openai_project(tmp_path, monkeypatch):
    with openai_projects(tmp_path, monkeypatch) as make:
        yield make


def contrastive_broken(body):
    """The responder, with the last context factor's type changed: the contrastive pair's types differ."""
    answer = responder(body)
    if isinstance(answer, dict) and "factors" in answer:
        answer["factors"][-1]["type"] = (
            "Location/Place" if answer["factors"][-2]["type"] != "Location/Place" else "Event/Time"
        )
    return answer


def factors_down(state: dict):
    """The responder, answering every factors call with a body that is not JSON while ``state["down"]``."""

    def flaky(body):
        answer = responder(body)
        if state["down"] and isinstance(answer, dict) and "factors" in answer:
            return "upstream error: not JSON"
        return answer

    return flaky


def run(project, **overrides):
    cfg = generation_settings(project.config.generation, **overrides)
    with LLMLayer(
        project.store, llm_config=project.config.llm, backend="openai", seed=0, progress=False
    ) as layer:
        return run_generation(project.store, layer, cfg)


def test_one_persona_end_to_end_over_http(openai_project):
    server, project = openai_project(responder)
    run(project, personas=1)
    store = project.store
    assert store.status()["instances"] == 3 and store.generation.dropped_personas() == {}
    sessions = store.content.sessions()
    assert len(sessions) == 13 and all(s.satisfied for s in sessions[:-1])
    assert all(
        len(store.generation.turn_scores(s.session_id)) == 2 for s in sessions[:-1]
    )  # feedback once, then met
    records = [json.loads(r) for r in _provenance_records(store)]
    assert records and not any(r["offline"] for r in records)
    calls = server.count()
    run(project, personas=1)  # a rerun: nothing pending, no request reaches the server
    assert server.count() == calls


def _provenance_records(store):
    from sqlalchemy import select

    t = store.t["provenance"]
    with store.read() as conn:
        return conn.execute(select(t.c.record_json).where(t.c.source.like("generate.%"))).scalars().all()


def test_broken_contrastive_pair_drops_the_persona_with_reasons(openai_project):
    _, project = openai_project(contrastive_broken)
    reports = run(project, personas=1)
    store = project.store
    assert reports[1].dropped == ["persona-s0-0000"]
    assert "types differ" in store.generation.dropped_personas()["persona-s0-0000"].reason
    assert len(store.content.failures("factors")) == 3 and store.status()["context_factors"] == 0
    run(project, personas=1)  # the dropped persona is not retried
    assert len(store.content.failures("factors")) == 3  # no new failure rows


def test_failed_calls_leave_the_persona_for_a_rerun(openai_project):
    state = {"down": True}
    _, project = openai_project(factors_down(state))
    reports = run(project, personas=1)
    assert reports[1].failed == ["persona-s0-0000"] and project.store.generation.dropped_personas() == {}
    assert project.store.content.failures("factors")  # the layer recorded why
    state["down"] = False
    run(project, personas=1)
    assert project.store.status()["instances"] == 3


def test_generate_batch_flag_sends_rounds_through_the_batch_api(openai_project):
    from click.testing import CliRunner
    from prefkit.cli import cli

    server, project = openai_project(responder)
    cfg = project.root / "prefkit.toml"
    cfg.write_text(cfg.read_text().replace("\nbatch_poll_s = 30\n", "\nbatch_poll_s = 0.05\n", 1))
    assert "batch_poll_s = 0.05" in cfg.read_text()
    result = CliRunner().invoke(
        cli, ["generate", "-n", "1", "--backend", "openai", "--batch", "--project", str(project.root)]
    )
    assert result.exit_code == 0, result.output
    reopened = Project(project.root)
    assert reopened.store.status()["instances"] == 3
    assert server.count("/v1/batches", "POST") >= 5  # one batch per stage round
    assert server.count() <= 2  # live chat calls only for repairs, if any
    assert all(b.status == "collected" for b in reopened.store.llm.batches())
    reopened.close()


def test_generate_exits_3_when_calls_failed_and_the_rerun_resumes(openai_project):
    from click.testing import CliRunner
    from prefkit.cli import cli

    state = {"down": True}
    _, project = openai_project(factors_down(state))
    args = ["generate", "-n", "1", "--backend", "openai", "--project", str(project.root)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 3, result.output
    assert "incomplete: model calls failed (factors 1;" in result.output
    assert "Resume by running the same command again" in result.output
    state["down"] = False
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    reopened = Project(project.root)
    assert reopened.store.status()["instances"] == 3
    reopened.close()


def test_generate_exits_1_when_every_persona_was_dropped_by_validation(openai_project):
    """Issue 23, item 6: an endpoint whose factor answers always break the rules drops every persona;
    `prefkit generate` says that nothing was made and exits 1 (a CI pipeline must not read success)."""
    from click.testing import CliRunner
    from prefkit.cli import cli

    _, project = openai_project(contrastive_broken)
    result = CliRunner().invoke(
        cli, ["generate", "-n", "2", "--backend", "openai", "--project", str(project.root)]
    )
    assert result.exit_code == 1, result.output
    assert "nothing was generated at stage" in result.output
    reopened = Project(project.root)
    try:
        assert len(reopened.store.generation.dropped_personas()) == 2
        assert reopened.store.status()["instances"] == 0
    finally:
        reopened.close()


def distinct(body: dict) -> str | dict:
    """The responder, with one person per persona id (the later prompts then name whose they are)."""
    answer = responder(body)
    pid = re.search(r"\((persona-\S+) of a batch", body["messages"][-1]["content"])
    if pid and isinstance(answer, dict):
        answer["text"] = answer["text"].replace("Rosa Delgado", f"Rosa Delgado ({pid.group(1)})")
    return answer


def test_bad_input_on_the_streaming_scheduler_drops_refuses_and_retries_per_persona(openai_project):
    """Three personas at once: one whose factors break the rules is dropped with its reason, one
    whose factors call is refused (a 400) is asked once and left for a rerun, one whose factors call
    first fails with a 500 is retried by the client; the others' work goes on to the end."""
    state = {"500": True}

    def who(body):  # whose request (a retry's last message is the rejection: look at them all)
        text = " ".join(m["content"] for m in body["messages"])
        return next((f"000{i}" for i in range(3) if f"persona-s0-000{i})" in text), "")

    def answer(body):
        given = distinct(body)
        return (
            contrastive_broken(body)
            if isinstance(given, dict) and "factors" in given and who(body) == "0000"
            else given
        )

    def fault(body):
        factors = "context factors" in body["messages"][1]["content"]
        if factors and who(body) == "0001":
            return "context_length"
        if factors and who(body) == "0002" and state.pop("500", False):
            return "500"
        return None

    server, project = openai_project(answer)
    server.fault_for = fault
    reports = {r.stage: r for r in run(project, personas=3)}
    store = project.store
    assert reports["factors"].dropped == ["persona-s0-0000"] and reports["factors"].failed == [
        "persona-s0-0001"
    ]
    assert "types differ" in store.generation.dropped_personas()["persona-s0-0000"].reason
    refused = [r for r in server.chat_requests() if r.fault == "context_length"]
    assert len(refused) == 1  # a deterministic refusal is never asked again
    assert [r.fault for r in server.chat_requests() if who(r.body) == "0002"][:2] == ["500", None]
    assert {i.record.persona_id for i in store.content.instances()} == {"persona-s0-0002"}
    assert reports["instances"].written == 3 and reports["dialogues"].written == 13


CHILD = textwrap.dedent(
    """
    import sys
    from prefkit.curation.project import Project
    from prefkit.pipelines.generation.run import generate
    generate(Project(sys.argv[1]), backend="openai", personas=3, seed=0)
    """
)


def test_kill_minus_9_mid_run_then_resume_repeats_no_finished_call(openai_project):
    server, project = openai_project(distinct)
    server.latency = 0.02
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(project.root)], cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while server.count() < 60 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.005)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    answered = project.store.count("llm_cache")
    assert answered >= 20 and child.returncode == -signal.SIGKILL
    server.reset_log()
    reports = run(project, personas=3)
    assert not any(r.dropped or r.failed for r in reports)
    # every call the resume made added an answer: none of them had been answered before the kill
    assert project.store.count("llm_cache") == answered + server.count() > answered
    assert project.store.status()["instances"] == 9 and len(project.store.content.sessions()) == 39
