"""The LLM layer against the loopback OpenAI-compatible server, through the real openai client."""

from __future__ import annotations

import json

import pytest
from fakeopenai import fake_openai_fixture  # noqa: F401 - registers the fake_openai fixture
from prefkit.pipelines.llm import LLMConfigError, LLMLayer, LLMRequest
from pydantic import BaseModel, ConfigDict, Field

SECRET = "sk-test-SECRET-0123456789abcdef"


class Person(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="A name.")
    age: int = Field(ge=0, description="Age in years.")


def person_responder(body):
    return {"name": "Ada", "age": 36}


def requests_for(n: int, stage: str = "personas", model=Person) -> list[LLMRequest]:
    return [
        LLMRequest(
            stage, f"p{i}", "writer", (("user", f"describe person {i}"),), model, template_hash="abc123"
        )
        for i in range(n)
    ]


@pytest.fixture
def layer_for(project, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    layers = []

    def make(server, **overrides):
        cfg = {
            **project.config.llm.model_dump(),
            "base_url": server.base_url,
            "timeout_s": 2,
            "max_retries": 1,
            **overrides,
        }
        layer = LLMLayer(project.store, llm_config=cfg, backend="openai", seed=7, progress=False)
        layers.append(layer)
        return layer

    yield make
    for layer in layers:
        layer.close()


def test_structured_parse_returns_validated_models_in_order(fake_openai, layer_for):
    server = fake_openai(lambda body: {"name": body["messages"][0]["content"][-1], "age": 1})
    responses = layer_for(server).run(requests_for(5))
    assert [r.parsed.name for r in responses] == ["0", "1", "2", "3", "4"]
    assert all(r.ok and isinstance(r.parsed, Person) for r in responses)
    assert server.chat_requests()[0].body["response_format"]["type"] == "json_schema"


def test_free_text_requests_return_the_raw_answer(fake_openai, layer_for):
    server = fake_openai(lambda body: "Hello there.")
    [response] = layer_for(server).run(requests_for(1, stage="dialogues", model=None))
    assert response.ok and response.text == "Hello there." and response.parsed is None
    assert "response_format" not in server.chat_requests()[0].body


def test_provenance_names_stage_model_host_template_seed_and_fingerprint(fake_openai, layer_for):
    server = fake_openai(person_responder)
    [response] = layer_for(server, models={"writer": "gpt-4.1-mini"}).run(requests_for(1))
    prov = response.provenance
    assert (prov.source, prov.model, prov.endpoint) == ("generate.personas", "gpt-4.1-mini", "127.0.0.1")
    assert (prov.prompt_template_hash, prov.seed, prov.offline, prov.system_fingerprint) == (
        "abc123",
        7,
        False,
        "fp_fake",
    )
    assert response.usage.prompt_tokens > 0 and response.cost_usd > 0


def test_a_server_refusing_json_schema_gets_json_object_with_the_schema(fake_openai, layer_for):
    server = fake_openai(person_responder, json_schema_supported=False)
    responses = layer_for(server, concurrency=1).run(requests_for(3))
    assert len(responses) == 3 and all(r.ok and r.parsed.name == "Ada" for r in responses)
    formats = [r.body["response_format"]["type"] for r in server.chat_requests()]
    assert formats == ["json_schema", "json_object", "json_object", "json_object"]
    assert "age" in server.chat_requests()[1].body["response_format"]["schema"]["properties"]


def test_json_mode_from_config_never_sends_json_schema(fake_openai, layer_for):
    server = fake_openai(person_responder)
    responses = layer_for(server, structured="json_mode").run(requests_for(2))
    assert len(responses) == 2 and all(r.ok for r in responses)
    assert {r.body["response_format"]["type"] for r in server.chat_requests()} == {"json_object"}


def test_schema_invalid_answer_is_repaired_with_the_validation_error(fake_openai, layer_for):
    def responder(body):
        repaired = "does not validate" in body["messages"][-1]["content"]
        return {"name": "Ada", "age": 36} if repaired else {"name": "Ada", "age": -5}

    server = fake_openai(responder)
    [response] = layer_for(server).run(requests_for(1))
    assert response.ok and response.parsed.age == 36
    repair = server.chat_requests()[1].body["messages"]
    assert repair[-2]["role"] == "assistant" and "age" in repair[-1]["content"]
    answers = [json.dumps({"name": "Ada", "age": a}) for a in (-5, 36)]
    assert response.usage.completion_tokens == sum(len(a) // 4 for a in answers)  # both calls counted
    assert server.count() == 2


def test_still_invalid_after_repair_becomes_a_failure_row_with_the_raw_answer(
    fake_openai, layer_for, project
):
    server = fake_openai(lambda body: {"nickname": "A"})
    [response] = layer_for(server, repair_attempts=1).run(requests_for(1))
    assert not response.ok and response.parsed is None
    assert "schema-invalid" in response.error and response.text == '{"nickname": "A"}'
    [failure] = project.store.content.failures("personas")
    assert failure.item == "p0" and failure.raw == '{"nickname": "A"}'
    assert server.count() == 2
    assert [r.status for r in project.store.llm.ledger("personas")] == ["failed"]


def test_rerun_is_answered_from_the_cache_with_zero_http_requests(fake_openai, layer_for, project):
    server = fake_openai(person_responder, latency=0.01)
    first = layer_for(server).run(requests_for(30))
    server.reset_log()
    again = layer_for(server).run(requests_for(30))
    assert server.count() == 0
    assert all(r.from_cache and r.cost_usd == 0 for r in again)
    assert [r.text for r in again] == [r.text for r in first]
    assert project.store.count("llm_cache") == 30 and project.store.count("llm_ledger") == 30


def test_identical_requests_share_one_call(fake_openai, layer_for, project):
    server = fake_openai(person_responder)
    same = (("user", "the same prompt"),)
    reqs = [LLMRequest("personas", item, "writer", same, Person) for item in ("a", "b", "c")]
    responses = layer_for(server).run(reqs)
    assert server.count() == 1 and all(r.ok for r in responses)
    assert sorted(r.item for r in project.store.llm.ledger("personas")) == ["a", "b", "c"]


def test_concurrency_is_bounded(fake_openai, layer_for):
    server = fake_openai(person_responder, latency=0.05)
    layer_for(server, concurrency=3).run(requests_for(12))
    assert server.max_in_flight == 3


def test_api_key_is_never_written_to_the_database(fake_openai, layer_for, project):
    server = fake_openai(person_responder, faults={"rate": 0.5, "kinds": ("500", "malformed")})
    layer_for(server, max_retries=0).run(requests_for(20))
    assert server.chat_requests()[0].headers["authorization"] == f"Bearer {SECRET}"
    project.store.close()
    db = project.root / "project.db"
    blob = b"".join(p.read_bytes() for p in db.parent.glob("project.db*"))
    assert SECRET.encode() not in blob and b"sk-test" not in blob
    assert project.store.count("failures") > 0


def test_missing_key_is_a_clear_error(project, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        LLMLayer(project.store, llm_config={"base_url": "https://api.example.com/v1"}, backend="openai")


def test_endpoint_and_key_come_from_the_sdk_environment_variables(project, fake_openai, monkeypatch):
    server = fake_openai(person_responder)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("MY_KEY", SECRET)
    with LLMLayer(
        project.store, llm_config={"api_key_env": "MY_KEY"}, backend="openai", progress=False
    ) as layer:
        [response] = layer.run(requests_for(1))
    assert response.ok and server.count() == 1


def test_unknown_backend_and_bad_settings_are_clear_errors(project):
    with pytest.raises(LLMConfigError, match="unknown LLM backend"):
        LLMLayer(project.store, backend="anthropic")
    with pytest.raises(LLMConfigError, match="concurrency"):
        LLMLayer(project.store, llm_config={"concurrency": 0})
    with pytest.raises(LLMConfigError, match="structured"):
        LLMLayer(project.store, llm_config={"structured": "xml"})


def test_async_run_gives_the_same_answers(fake_openai, layer_for):
    import asyncio

    server = fake_openai(person_responder)
    layer = layer_for(server)
    responses = asyncio.run(layer.arun(requests_for(4)))
    assert [r.parsed.name for r in responses] == ["Ada"] * 4
    assert layer.run(requests_for(4))[0].from_cache  # the sync path after an async one


def test_progress_bar_stays_silent_when_stderr_is_not_a_tty(fake_openai, project, monkeypatch, capsys):
    server = fake_openai(person_responder)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with LLMLayer(project.store, {"base_url": server.base_url}, backend="openai", progress=True) as layer:
        assert layer.run(requests_for(3), desc="personas")[0].ok
    assert capsys.readouterr().err == ""


def test_usage_summary_counts_calls_cache_hits_and_failures(fake_openai, layer_for, project):
    server = fake_openai(
        lambda body: {"name": "x"} if "1" in body["messages"][0]["content"] else {"name": "y", "age": 2}
    )
    layer_for(server, repair_attempts=0).run(requests_for(3))
    layer_for(server).run(requests_for(3, stage="again"))
    usage = {row.stage: row for row in project.store.llm.usage()}
    assert (usage["personas"].calls, usage["personas"].failed) == (2, 1)
    assert (usage["again"].calls, usage["again"].cached) == (0, 2)


class Tags(BaseModel):
    tags: dict[str, int]


def test_a_schema_the_server_rejects_falls_back_to_json_mode_for_that_model_only(fake_openai, layer_for):
    def responder(body):
        return {"tags": {"a": 1}} if "tags" in body["messages"][-1]["content"] else {"name": "Ada", "age": 3}

    server = fake_openai(responder, reject_schema=lambda schema: schema.get("name") == "Tags")
    layer = layer_for(server, concurrency=1)
    [tags] = layer.run([LLMRequest("tags", "t", "judge", (("user", "give tags"),), Tags)])
    [person] = layer.run(requests_for(1))
    assert tags.ok and tags.parsed.tags == {"a": 1} and person.ok
    formats = [r.body["response_format"]["type"] for r in server.chat_requests()]
    assert formats == ["json_schema", "json_object", "json_schema"]


def test_retry_after_is_honoured_on_429(fake_openai, layer_for):
    server = fake_openai(person_responder, faults={"schedule": ["429"], "retry_after_s": 1.0})
    [response] = layer_for(server).run(requests_for(1))
    first, retry = server.chat_requests()
    assert response.ok and first.fault == "429" and retry.fault is None
    assert retry.at - first.at >= 0.95  # the SDK's own first backoff would be <= 0.5 s


def test_a_rejected_key_stops_the_run_with_one_scrubbed_error_and_no_failure_rows(
    fake_openai, layer_for, project
):
    server = fake_openai(person_responder, api_key="sk-the-right-one")
    with pytest.raises(LLMConfigError, match="Incorrect API key") as caught:
        layer_for(server, concurrency=2).run(requests_for(6))
    assert SECRET not in str(caught.value) and "***" in str(caught.value)
    assert project.store.count("failures") == 0 and project.store.count("llm_ledger") == 0
    assert server.count() < 6  # the other calls were cancelled, not each turned into a failure
