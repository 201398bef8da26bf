"""Faults, rate limits and kill -9 resume, against the loopback server with the real openai client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest
from fakeopenai import (  # noqa: F401 - fake_openai_fixture, openai_key_fixture: register the fixtures
    fake_openai_fixture,
    named_item,
    openai_key_fixture,
    openai_layer,
)
from prefkit.pipelines.llm import LLMRequest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.usefixtures("openai_key")


class Answer(BaseModel):
    item: str
    words: list[str]


def answer_responder(body):
    return {"item": named_item(body), "words": ["a", "b"]}


def requests_for(n: int) -> list[LLMRequest]:
    return [
        LLMRequest("sessions", f"s{i}", "user_simulator", (("user", f"session for s{i}"),), Answer)
        for i in range(n)
    ]


def test_twenty_percent_faults_complete_with_every_failure_a_row(fake_openai, project):
    faults = {"rate": 0.2, "retry_after_s": 0.02, "hang_s": 0.8}
    server = fake_openai(answer_responder, latency=0.005, faults=faults, seed=3)
    with openai_layer(project, server, concurrency=16, timeout_s=0.3, max_retries=1) as layer:
        responses = layer.run(requests_for(80))
    assert len(responses) == 80
    injected = Counter(r.fault for r in server.chat_requests() if r.fault)
    assert set(injected) == {"429", "500", "timeout", "malformed", "invalid", "context_length"}
    failed = [r for r in responses if not r.ok]
    assert all(r.parsed.item == r.request.item for r in responses if r.ok)
    assert all(r.error for r in failed) and 0 < len(failed) < 40
    rows = project.store.content.failures("sessions")
    assert sorted(f.item for f in rows) == sorted(r.request.item for r in failed)
    ledger = Counter(row.status for row in project.store.llm.ledger("sessions"))
    assert ledger == {"done": 80 - len(failed), "failed": len(failed)}


def test_timeout_s_bounds_each_attempt_whole_when_the_server_trickles_its_body(fake_openai, project):
    # One byte every 0.4 s: each read is quick, the whole answer (~400 bytes) would take minutes.
    server = fake_openai(answer_responder, faults={"schedule": ["trickle", "trickle"]})
    with openai_layer(project, server, timeout_s=1, max_retries=1) as layer:
        started = time.monotonic()
        [response] = layer.run(requests_for(1))
        took = time.monotonic() - started
    assert not response.ok and response.error == "timed out after 1.0s (1 retries)"
    assert server.count() == 2 and took < 4  # two attempts of 1 s and the SDK's backoff, not 2 x 160 s
    [row] = project.store.content.failures("sessions")
    assert row.error == response.error


def test_failed_items_are_retried_on_the_next_run_and_completed_ones_are_not(fake_openai, project):
    server = fake_openai(answer_responder, faults={"rate": 0.3, "kinds": ("500",)}, seed=1)
    with openai_layer(project, server, max_retries=0) as layer:
        first = layer.run(requests_for(20))
        failed = {r.request.item for r in first if not r.ok}
        server.faults.rate = 0.0
        server.reset_log()
        second = layer.run(requests_for(20))
    assert failed and all(r.ok for r in second)
    asked = {named_item(r.body) for r in server.chat_requests()}
    assert asked == failed
    assert Counter(row.status for row in project.store.llm.ledger("sessions")) == {"done": 20}


def test_requests_per_minute_limit_paces_calls_at_the_server(fake_openai, project):
    server = fake_openai(answer_responder)
    with openai_layer(project, server, concurrency=32, requests_per_minute=600) as layer:  # 10/s, burst 10
        layer.run(requests_for(21)[-1:])  # warm the client up: its first call stalls the event loop
        server.reset_log()
        start = time.monotonic()
        responses = layer.run(requests_for(20))
        assert len(responses) == 20 and all(r.ok for r in responses)
        elapsed = time.monotonic() - start
    arrivals = sorted(r.at for r in server.chat_requests())
    # A burst of 10, then 10/s: the 20th call cannot leave before ~1.0 s, nor more than 15 within 0.5 s.
    assert elapsed >= 0.95 and len(arrivals) == 20
    assert arrivals[-1] - start >= 0.95
    assert sum(1 for t in arrivals if t - start < 0.5) <= 16


CHILD = textwrap.dedent(
    """
    import sys
    from pydantic import BaseModel
    from prefkit.curation.project import Project
    from prefkit.pipelines.llm import LLMLayer, LLMRequest

    class Answer(BaseModel):
        item: str
        words: list[str]

    project = Project(sys.argv[1])
    reqs = [LLMRequest("sessions", f"s{i}", "user_simulator", (("user", f"session for s{i}"),), Answer)
            for i in range(int(sys.argv[3]))]
    cfg = {"base_url": sys.argv[2], "concurrency": 4}
    LLMLayer(project.store, cfg, backend="openai", progress=False).run(reqs)
    """
)


def test_kill_minus_9_then_resume_repeats_no_completed_call(fake_openai, project):
    server = fake_openai(answer_responder, latency=0.05)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(project.root), server.base_url, "60"], cwd=ROOT, env=env
    )
    deadline = time.monotonic() + 30
    while server.count() < 25 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    done_before = {row.item for row in project.store.llm.ledger("sessions") if row.status == "done"}
    assert 10 <= len(done_before) < 60
    server.reset_log()
    with openai_layer(project, server) as layer:
        responses = layer.run(requests_for(60))
    asked = [named_item(r.body) for r in server.chat_requests()]
    assert not set(asked) & done_before
    assert len(asked) == len(set(asked)) == 60 - len(done_before)
    assert len(responses) == 60 and all(r.ok for r in responses)
    assert project.store.count("llm_cache") == 60 and project.store.count("llm_ledger") == 60
