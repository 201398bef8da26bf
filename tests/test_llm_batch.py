"""Batch API mode: JSONL upload, batch creation, polling, joining on custom_id, resume of an open batch."""

from __future__ import annotations

import json

import pytest
from fakeopenai import (  # noqa: F401 - fake_openai_fixture, openai_key_fixture: register the fixtures
    fake_openai_fixture,
    named_item,
    openai_key_fixture,
    openai_layer,
)
from prefkit.pipelines.llm import LLMLayer, LLMRequest
from prefkit.pipelines.llm.batch import BatchPending
from pydantic import BaseModel

pytestmark = pytest.mark.usefixtures("openai_key")


class Checklist(BaseModel):
    persona: str
    items: list[str]


def responder(body):
    persona = named_item(body)
    return {"persona": persona, "items": ["likes tea"]} if persona != "p3" else {"persona": persona}


def requests_for(n: int) -> list[LLMRequest]:
    return [
        LLMRequest("checklists", f"p{i}", "judge", (("user", f"checklist for p{i}"),), Checklist)
        for i in range(n)
    ]


def make_layer(project, server, **overrides) -> LLMLayer:
    return openai_layer(project, server, **{"batch_poll_s": 0.05, "batch_wait_s": 5, **overrides})


def test_batch_mode_uploads_jsonl_and_joins_results_on_custom_id(fake_openai, project):
    server = fake_openai(responder, batch_delay_s=0.1)
    with make_layer(project, server) as layer:
        responses = layer.run(requests_for(6), batch=True)
    assert [r.parsed.persona for r in responses if r.ok] == ["p0", "p1", "p2", "p4", "p5"]
    upload = next(iter(server.files.values()))  # the first file is the uploaded input
    lines = [json.loads(x) for x in upload["data"].decode().splitlines()]
    assert upload["purpose"] == "batch"
    assert [x["custom_id"] for x in lines] == [p.key for p in layer.plan(requests_for(6))]
    assert len(lines) == 6 and lines[0]["body"]["response_format"]["type"] == "json_schema"
    assert server.count("/v1/batches", "POST") == 1 and server.count() == 1  # one live call: the repair of p3
    assert (
        server.chat_requests()[0].body["messages"][-1]["role"] == "user"
    )  # ... carrying the validation error
    assert not responses[3].ok and "schema-invalid" in responses[3].error
    assert [b.status for b in project.store.llm.batches()] == ["collected"]
    assert all(r.provenance.endpoint == "127.0.0.1" for r in responses)


def test_batch_answers_are_cached_so_a_rerun_calls_nothing(fake_openai, project):
    server = fake_openai(responder)
    with make_layer(project, server) as layer:
        layer.run(requests_for(4), batch=True)
        server.reset_log()
        again = layer.run([r for r in requests_for(4) if r.item != "p3"], batch=True)
    assert all(r.from_cache for r in again) and server.requests == []


def test_a_batch_still_in_flight_is_resumed_not_resubmitted(fake_openai, project):
    server = fake_openai(responder, batch_delay_s=0.6)
    with make_layer(project, server, batch_wait_s=0.1) as layer, pytest.raises(BatchPending, match="rerun"):
        layer.run(requests_for(3), batch=True)
    [open_batch] = project.store.llm.batches(open_only=True)
    assert project.store.count("llm_cache") == 0
    with make_layer(project, server) as layer:
        responses = layer.run(requests_for(3), batch=True)
    assert len(responses) == 3 and all(r.ok for r in responses)
    assert server.count("/v1/batches", "POST") == 1 and server.count("/v1/files", "POST") == 1
    assert project.store.llm.batches()[0].batch_id == open_batch.batch_id
    assert project.store.llm.batches(open_only=True) == []


def test_batch_cost_is_half_the_live_price(fake_openai, project):
    server = fake_openai(responder)
    with make_layer(project, server) as layer:
        [batched] = layer.run(requests_for(1), batch=True)
    live_price = layer.prices.cost("gpt-4o-mini", batched.usage)
    assert batched.cost_usd == pytest.approx(live_price / 2)
