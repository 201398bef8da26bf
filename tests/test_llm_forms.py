"""Structured output that adapts to the engine, and local servers without a key, against the loopback
server through the real openai client (faults a real engine cannot produce on demand)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fakeopenai import body_form, fake_openai_fixture  # noqa: F401 - registers the fake_openai fixture
from prefkit.cli import cli
from prefkit.pipelines.llm import LLMConfigError, LLMLayer, LLMRequest
from prefkit.pipelines.llm.config import is_local
from pydantic import BaseModel, ConfigDict

KEY = "sk-test-forms-0123456789"


class Person(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    age: int


def ada(body):
    return {"name": "Ada", "age": 36}


def asks(n: int, start: int = 0) -> list[LLMRequest]:
    return [
        LLMRequest("personas", f"p{i}", "writer", (("user", f"person {i}"),), Person)
        for i in range(start, start + n)
    ]


@pytest.fixture
def run(project, monkeypatch):
    """``run(server, requests, **llm)``: one layer (a run of its own) over ``server``; the responses."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def go(server, requests, **llm):
        cfg = {"base_url": server.base_url, "concurrency": 1, "timeout_s": 5, "max_retries": 4, **llm}
        with LLMLayer(project.store, cfg, backend="openai", progress=False) as layer:
            return layer.run(requests)

    return go


def sent_forms(server) -> list[str | None]:
    return [body_form(r.body) for r in server.chat_requests()]


def test_a_500_refusing_json_schema_is_never_retried_and_json_object_with_schema_follows(
    fake_openai, run, project
):
    server = fake_openai(ada, refuse_forms=("json_schema",), refusal_status=500)
    responses = run(server, asks(3))
    assert [r.parsed for r in responses] == [Person(name="Ada", age=36)] * 3
    # One refused request (no SDK retries of the 500), then every call in the form the server takes.
    assert sent_forms(server) == ["json_schema"] + ["json_object_schema"] * 3
    assert server.chat_requests()[1].body["response_format"]["schema"]["required"] == ["name", "age"]
    [form] = project.store.llm.forms()
    assert (form.endpoint, form.model, form.form) == (
        server.base_url.rstrip("/"),
        "gpt-4o-mini",
        "json_object_schema",
    )


def test_a_later_run_starts_with_the_remembered_form(fake_openai, run):
    server = fake_openai(ada, refuse_forms=("json_schema",), refusal_status=500)
    run(server, asks(1))
    server.reset_log()
    assert all(r.ok for r in run(server, asks(2, start=1)))
    assert sent_forms(server) == ["json_object_schema"] * 2


def test_json_mode_carries_the_schema_in_the_prompt_when_both_schema_forms_are_refused(
    fake_openai, run, project
):
    server = fake_openai(ada, refuse_forms=("json_schema", "json_object_schema"))
    assert all(r.ok for r in run(server, asks(2)))
    assert sent_forms(server) == ["json_schema", "json_object_schema", "json_mode", "json_mode"]
    assert '"age"' in server.chat_requests()[-1].body["messages"][-1]["content"]
    assert [f.form for f in project.store.llm.forms()] == ["json_mode"]


def test_a_remembered_form_is_forgotten_once_refused(fake_openai, run, project):
    server = fake_openai(ada, refuse_forms=("json_schema",))
    run(server, asks(1))
    server.refuse_forms = ("json_schema", "json_object_schema")  # the endpoint now runs another engine
    server.reset_log()
    assert all(r.ok for r in run(server, asks(1, start=1)))
    assert sent_forms(server) == ["json_object_schema", "json_mode"]
    assert [f.form for f in project.store.llm.forms()] == ["json_mode"]


def test_an_endpoint_that_flipped_forms_gets_the_remaining_ones_before_the_run_stops(
    fake_openai, run, project
):
    server = fake_openai(ada, refuse_forms=("json_schema",))
    run(server, asks(1))
    server.refuse_forms = ("json_object_schema", "json_mode")  # the next run finds another engine there
    server.reset_log()
    assert all(r.ok for r in run(server, asks(2, start=1)))
    assert sent_forms(server) == ["json_object_schema", "json_mode", "json_schema", "json_schema"]
    assert [f.form for f in project.store.llm.forms()] == ["json_schema"]


def test_a_named_form_refused_stops_the_run_with_one_line(fake_openai, run, project):
    server = fake_openai(ada, refuse_forms=("json_schema",), refusal_status=500)
    with pytest.raises(LLMConfigError) as caught:
        run(server, asks(3), structured="json_schema")
    line = str(caught.value)
    assert "\n" not in line and "127.0.0.1" in line and "'gpt-4o-mini'" in line and "'json_schema'" in line
    assert server.count() == 1 and project.store.count("llm_cache") == 0


def test_every_form_refused_stops_the_run_naming_the_last(fake_openai, run):
    server = fake_openai(ada, refuse_forms=("json_schema", "json_object_schema", "json_mode"))
    with pytest.raises(LLMConfigError, match="refused the structured form 'json_mode'"):
        run(server, asks(2))
    assert server.count() == 3


def test_other_5xx_stay_transient_and_are_retried(fake_openai, run):
    server = fake_openai(ada, faults={"schedule": ["500", "500"]}, refuse_forms=())
    [response] = run(server, asks(1))
    assert response.ok and server.count() == 3
    assert sent_forms(server) == ["json_schema"] * 3


def _error(**fields) -> str:
    return json.dumps({"error": fields})


# Each engine's way of refusing a response_format (the shapes of their error bodies, their key words).
REFUSALS = {
    "openai param": (
        400,
        _error(message="'json_schema' is not supported with this model.", param="response_format"),
    ),
    "vllm param": (
        400,
        _error(
            message="json_schema needs its schema", type="BadRequestError", param="response_format", code=400
        ),
    ),
    "vllm grammar": (
        400,
        _error(message="The JSON schema has features the grammar backend lacks", param=None, code=400),
    ),
    "vllm bare": (400, json.dumps({"object": "error", "message": "bad response_format type", "code": 400})),
    "llama.cpp type": (
        500,
        _error(code=500, message="response_format type must be text or json_object", type="server_error"),
    ),
    "llama.cpp grammar": (
        400,
        _error(code=400, message="JSON schema conversion failed: Unrecognized schema"),
    ),
    "llama-cpp-python": (
        500,
        _error(message="[{'loc': ('body', 'response_format', 'type')}]", type="internal_server_error"),
    ),
    "fastapi 422": (
        422,
        json.dumps({"detail": [{"loc": ["body", "response_format"], "msg": "Input should be 'text'"}]}),
    ),
}
# Answers that only happen to say "schema" or come from something in front of the engine.
TRANSIENT = {
    "migration 500": (500, json.dumps({"error": "database schema migration in progress, retry"})),
    "proxy page 503": (
        503,
        '<html><script type="application/ld+json">{"@context": "https://schema.org"}</script></html>',
    ),
    "408": (408, _error(message="request timeout while the schema cache warms")),
    "409": (409, _error(message="schema lock held, retry")),
    "429": (429, _error(message="rate limited", type="rate_limit_error", param="response_format")),
    "502 text": (502, "Bad gateway: upstream response_format handler crashed"),
}


@pytest.mark.parametrize(
    "reply, refused",
    [(r, True) for r in REFUSALS.values()] + [(r, False) for r in TRANSIENT.values()],
    ids=[*REFUSALS, *TRANSIENT],
)
def test_a_refusal_is_an_error_naming_response_format_and_anything_else_is_retried(
    fake_openai, run, project, reply, refused
):
    server = fake_openai(ada, replies=[reply])
    [response] = run(server, asks(1))
    assert response.ok and server.count() == 2  # asked once more: in the next form, or the same again
    after = "json_object_schema" if refused else "json_schema"
    assert sent_forms(server) == ["json_schema", after]
    assert [f.form for f in project.store.llm.forms()] == [after]


@pytest.mark.parametrize("reply", TRANSIENT.values(), ids=TRANSIENT)
def test_transient_errors_past_max_retries_fail_one_item_and_move_no_form(fake_openai, run, project, reply):
    server = fake_openai(ada, replies=[reply] * 3)
    first, second = run(server, asks(2), max_retries=2)
    assert not first.ok and first.error.startswith(f"HTTP {reply[0]}: ") and second.ok
    assert sent_forms(server) == ["json_schema"] * 4
    assert [f.form for f in project.store.llm.forms()] == ["json_schema"]


def test_a_context_overflow_is_a_named_failure_at_once(fake_openai, run, project):
    server = fake_openai(ada, faults={"schedule": ["context_length_500", "context_length"]})
    first, second = run(server, asks(2))
    assert server.count() == 2  # neither the 500 nor the 400 is retried
    assert first.error.startswith("context_length: ") and first.error.endswith(" > 64")
    assert second.error.startswith("context_length: ~") and second.error.endswith(" > 128000")
    assert {f.error for f in project.store.content.failures("personas")} == {first.error, second.error}


def test_llm_usage_shows_the_form_each_endpoint_took(fake_openai, run, project):
    server = fake_openai(ada, refuse_forms=("json_schema",))
    run(server, asks(1))
    out = CliRunner().invoke(cli, ["llm", "usage", "-p", str(project.root)]).output
    assert f"structured output at {server.base_url.rstrip('/')} for gpt-4o-mini: json_object_schema" in out


def test_a_loopback_server_needs_no_key_and_gets_a_set_one(fake_openai, project, monkeypatch):
    server = fake_openai(ada, faults={"schedule": [None, "context_length"]})
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LLMLayer(project.store, {"base_url": server.base_url}, backend="openai", progress=False) as layer:
        assert layer.run(asks(1))[0].ok
        [failed] = layer.run(asks(1, start=5))  # without a key the failure keeps its error and raw answer
    [row] = project.store.content.failures("personas")
    assert row.error == failed.error and row.error.startswith("context_length:") and "128000" in row.raw
    first = server.chat_requests()[0].headers["authorization"]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LLMLayer(project.store, {"base_url": server.base_url}, backend="openai", progress=False) as layer:
        assert layer.run(asks(1, start=1))[0].ok
    second = server.chat_requests()[-1].headers["authorization"]
    assert first.startswith("Bearer ") and KEY not in first and second == f"Bearer {KEY}"


@pytest.mark.parametrize(
    "url", ["https://api.openai.com/v1", "http://llm.example.com:8000/v1", "http://8.8.8.8/v1"]
)
def test_a_hosted_server_still_asks_for_its_key(project, monkeypatch, url):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMConfigError, match=r"^backend 'openai' needs an API key: set \$OPENAI_API_KEY"):
        LLMLayer(project.store, {"base_url": url}, backend="openai")


def test_what_counts_as_local():
    local = [
        "http://localhost:8080/v1",
        "http://127.0.0.1/v1",
        "http://127.3.4.5:1/v1",
        "http://[::1]:8000/v1",
        "http://10.0.0.7:8000/v1",
        "http://192.168.1.20/v1",
        "http://172.16.0.1/v1",
        "http://api.localhost/v1",
    ]
    hosted = [
        "https://api.openai.com/v1",
        "http://172.32.0.1/v1",
        "http://localhost.example.com/v1",
        "http://1.1.1.1/v1",
    ]
    assert [u for u in local if not is_local(u)] == [] and [u for u in hosted if is_local(u)] == []


def test_an_answer_echoing_the_key_is_stored_and_returned_without_it(fake_openai, run, project):
    servers = []

    def echo(body):  # the header the request came with, as a misconfigured proxy or a model might
        return {"name": servers[0].chat_requests()[-1].headers["authorization"], "age": 1}

    servers.append(fake_openai(echo))
    [response] = run(servers[0], asks(1))
    assert response.ok and response.parsed.name == "Bearer ***" and KEY not in response.text
    [row] = project.store.llm.ledger("personas")
    [cached] = project.store.llm.cache_get([row.key]).values()
    assert KEY not in cached.text and "Bearer ***" in cached.text


def test_a_placeholder_key_too_short_to_be_a_secret_leaves_answers_whole(fake_openai, run, monkeypatch):
    server = fake_openai(lambda body: {"name": "Max Xu", "age": 1})
    monkeypatch.setenv("OPENAI_API_KEY", "x")  # what a local engine is often given
    [response] = run(server, asks(1))
    assert server.chat_requests()[0].headers["authorization"] == "Bearer x"
    assert response.ok and response.parsed.name == "Max Xu"


def test_max_tokens_caps_every_call_that_asks_for_more_or_for_none(fake_openai, run):
    server = fake_openai(ada)
    free = [
        LLMRequest("personas", f"q{n}", "writer", (("user", f"q {n}"),), Person, max_tokens=n)
        for n in (50, 900)
    ]
    assert all(r.ok for r in run(server, [*asks(1), *free], max_tokens=300))
    assert [r.body["max_tokens"] for r in server.chat_requests()] == [300, 50, 300]


def test_an_answer_cut_off_is_a_failure_that_still_counts_its_tokens(fake_openai, run, project):
    server = fake_openai(ada, faults={"schedule": ["cut"]})
    [response] = run(server, asks(1))
    assert not response.ok and response.error == "answer cut off: finish_reason length"
    [row] = project.store.llm.ledger()
    sent = server.chat_requests()[0].body
    assert row.status == "failed" and row.completion_tokens > 0  # what the server counted is in the ledger
    assert response.text and response.text in json.dumps(ada(sent))
