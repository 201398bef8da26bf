"""A loopback OpenAI-compatible HTTP server for tests and benchmarks (never for production use).

The real ``openai`` client talks to it over HTTP on 127.0.0.1, so tests exercise the SDK's request
building, retries, ``Retry-After`` handling, timeouts and response parsing instead of patched methods.
It answers ``POST /v1/chat/completions`` (plain, ``json_object`` and ``json_schema`` response formats)
and the Files + Batches endpoints the Batch API uses. Answers come from a scripted ``responder``; faults
(429 with Retry-After, 500, a hang past the client timeout, a malformed JSON body, a schema-invalid
answer, OpenAI's 400 for a prompt over the context window) are injected at a rate drawn from a seeded RNG; every request is logged.

It must never bind anything but 127.0.0.1 and never forward a request anywhere.

    server = start_fake_openai(lambda req: '{"name": "Ada"}', latency=0.01)
    client = openai.OpenAI(base_url=server.base_url, api_key="test")
    ...
    server.stop()
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import socket
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]
FAULT_KINDS = (
    *("429", "500", "timeout", "malformed", "invalid", "context_length"),
    *("context_length_500", "cut", "trickle"),
)
DEFAULT_KINDS = FAULT_KINDS[:6]
INVALID_CONTENT = '{"unexpected_field": true}'


@dataclass
class Faults:
    """Which faults to inject and how often (``rate`` of chat requests, drawn from the seeded RNG)."""

    rate: float = 0.0
    kinds: tuple[str, ...] = DEFAULT_KINDS
    retry_after_s: float = 0.05  # sent as Retry-After on 429s
    hang_s: float = 2.0  # how long a "timeout" fault stalls before answering
    trickle_s: float = 0.4  # a "trickle" fault sends its answer one byte per this many seconds
    schedule: list[str | None] = field(default_factory=list)  # exact faults for the first requests, in order

    def __post_init__(self) -> None:
        unknown = (set(self.kinds) | {k for k in self.schedule if k}) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; choose from {FAULT_KINDS}")


@dataclass
class LoggedRequest:
    method: str
    path: str
    body: Any
    headers: dict[str, str]
    fault: str | None = None
    at: float = field(default_factory=time.monotonic)


def _approx_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def body_form(body: dict[str, Any]) -> str | None:
    """The structured form a request asks in: json_schema, json_object_schema, json_mode or None."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_object":
        return "json_object_schema" if "schema" in fmt else "json_mode"
    return fmt.get("type")


def _prompt_text(body: dict[str, Any]) -> str:
    return "".join(str(m.get("content", "")) for m in body.get("messages", []))


class FakeOpenAI:
    """The server state: responder, faults, logs, uploaded files and batches."""

    def __init__(
        self,
        responder: Responder,
        latency: float = 0.0,
        faults: Faults | dict[str, Any] | None = None,
        seed: int = 0,
        json_schema_supported: bool = True,
        batch_delay_s: float = 0.0,
        reject_schema: Callable[[dict[str, Any]], bool] | None = None,
        api_key: str | None = None,
        fault_for: Callable[[dict[str, Any]], str | None] | None = None,
        refuse_forms: tuple[str, ...] = (),
        refusal_status: int = 400,
        replies: list[tuple[int, str]] | None = None,
    ):
        self.responder = responder
        self.fault_for = fault_for  # a fault chosen by the request itself (e.g. one instance's prompt)
        self.latency = latency
        self.faults = faults if isinstance(faults, Faults) else Faults(**(faults or {}))
        self.json_schema_supported = json_schema_supported
        self.reject_schema = reject_schema  # like OpenAI refusing one schema it cannot make strict
        # Structured forms refused (json_schema, json_object_schema, json_mode), with this status: 500 is
        # what llama-cpp-python answers a json_schema response_format with.
        self.refuse_forms = refuse_forms
        self.refusal_status = refusal_status
        self.replies = list(replies or [])  # (status, body) answered to the first chat requests, in order
        self.api_key = api_key  # when set, any other bearer token gets OpenAI's 401
        self.batch_delay_s = batch_delay_s
        self.requests: list[LoggedRequest] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self._rng = random.Random(seed)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.base_url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # -- inspection -------------------------------------------------------------------------------
    def chat_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def count(self, path_suffix: str = "/chat/completions", method: str | None = None) -> int:
        return sum(
            1
            for r in self.requests
            if r.path.endswith(path_suffix) and (method is None or r.method == method)
        )

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()

    # -- chat -------------------------------------------------------------------------------------
    def _draw_fault(self, body: dict[str, Any]) -> str | None:
        chosen = self.fault_for(body) if self.fault_for else None
        if chosen:
            return chosen
        with self._lock:
            if self.faults.schedule:
                return self.faults.schedule.pop(0)
            if self.faults.rate <= 0 or self._rng.random() >= self.faults.rate:
                return None
            return self._rng.choice(self.faults.kinds)

    def _answer(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        n = next(self._ids)
        return {
            "id": f"chatcmpl-fake{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "logprobs": None,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                }
            ],
            "usage": {
                "prompt_tokens": _approx_tokens(_prompt_text(body)),
                "completion_tokens": _approx_tokens(content),
                "total_tokens": _approx_tokens(_prompt_text(body)) + _approx_tokens(content),
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        }

    def _content(self, body: dict[str, Any]) -> str:
        out = self.responder(body)
        return out if isinstance(out, str) else json.dumps(out)

    def _schema_refusal(self, body: dict[str, Any]) -> JSONResponse | None:
        fmt = body.get("response_format") or {}
        form = body_form(body)
        status = 400
        if form in self.refuse_forms:
            message, status = f"response_format: {form} is not supported (fake)", self.refusal_status
        elif form == "json_schema" and not self.json_schema_supported:
            message = "response_format json_schema is not supported by this server"
        elif form == "json_schema" and self.reject_schema and self.reject_schema(fmt["json_schema"]):
            message = f"Invalid schema for response_format '{fmt['json_schema'].get('name')}': not supported"
        else:
            return None
        error = {
            "message": message,
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        }
        return JSONResponse({"error": error}, status_code=status)

    @staticmethod
    def _scripted(status: int, text: str) -> Response:
        try:
            json.loads(text)
            media = "application/json"
        except ValueError:
            media = "text/html"
        # retry-after-ms keeps the SDK's backoff before a retry short (the tests' time, not the client's).
        return Response(text, status_code=status, media_type=media, headers={"retry-after-ms": "10"})

    def _unauthorized(self, request: Request) -> JSONResponse | None:
        sent = request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.api_key is None or sent == self.api_key:
            return None
        # Like OpenAI, echo the key that was sent (clients must scrub it before storing the error).
        error = {
            "message": f"Incorrect API key provided: {sent}.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
        return JSONResponse({"error": error}, status_code=401)

    async def chat(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ClientDisconnect:  # the client gave up (a timeout under test) before its body came
            return Response(status_code=499)
        refused = self._unauthorized(request)
        if refused is not None:
            self._log(request, body, None)
            return refused
        fault = self._draw_fault(body)
        self._log(request, body, fault)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._chat(body, fault)
        finally:
            self.in_flight -= 1

    async def _chat(self, body: dict[str, Any], fault: str | None) -> Response:
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.replies:
            return self._scripted(*self.replies.pop(0))
        refusal = self._schema_refusal(body)
        if refusal is not None:
            return refusal
        if fault == "429":
            return JSONResponse(
                {"error": {"message": "rate limited (fake)", "type": "rate_limit_error"}},
                status_code=429,
                headers={"retry-after": str(self.faults.retry_after_s)},
            )
        if fault == "500":
            return JSONResponse(
                {"error": {"message": "internal error (fake)", "type": "server_error"}}, status_code=500
            )
        if fault == "context_length":  # what OpenAI answers a prompt over the model's context window
            error = {
                "message": "This model's maximum context length is 128000 tokens (fake).",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
            return JSONResponse({"error": error}, status_code=400)
        if fault == "context_length_500":  # what llama-cpp-python answers it
            n = _approx_tokens(_prompt_text(body))
            error = {
                "message": f"Requested tokens ({n}) exceed context window of 64",
                "type": "internal_server_error",
            }
            return JSONResponse({"error": error}, status_code=500)
        if fault == "timeout":
            await asyncio.sleep(self.faults.hang_s)
        if fault == "malformed":
            return Response('{"id": "chatcmpl-broken", "choices": [', media_type="application/json")
        if fault == "trickle":  # headers at once, then the body a byte at a time: every read is quick
            return StreamingResponse(self._trickle(json.dumps(self._answer(body, self._content(body)))))
        content = INVALID_CONTENT if fault == "invalid" else self._content(body)
        answer = self._answer(body, content[: len(content) // 2] if fault == "cut" else content)
        if fault == "cut":  # the answer reached max_tokens
            answer["choices"][0]["finish_reason"] = "length"
        return JSONResponse(answer)

    async def _trickle(self, text: str):
        for byte in text.encode():
            yield bytes([byte])
            await asyncio.sleep(self.faults.trickle_s)

    def _log(self, request: Request, body: Any, fault: str | None) -> None:
        entry = LoggedRequest(request.method, request.url.path, body, dict(request.headers), fault)
        with self._lock:
            self.requests.append(entry)

    # -- files and batches ------------------------------------------------------------------------
    async def upload_file(self, request: Request) -> Response:
        form = await request.form()
        upload = form["file"]
        data = await upload.read()
        file_id = f"file-fake{next(self._ids)}"
        self.files[file_id] = {"data": data, "purpose": form.get("purpose"), "filename": upload.filename}
        self._log(request, {"purpose": form.get("purpose"), "filename": upload.filename}, None)
        return JSONResponse(self._file_object(file_id))

    def _file_object(self, file_id: str) -> dict[str, Any]:
        f = self.files[file_id]
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(f["data"]),
            "created_at": int(time.time()),
            "filename": f["filename"] or "upload.jsonl",
            "purpose": f["purpose"] or "batch",
            "status": "processed",
        }

    async def file_content(self, request: Request) -> Response:
        file_id = request.path_params["file_id"]
        self._log(request, None, None)
        if file_id not in self.files:
            return JSONResponse({"error": {"message": f"no file {file_id}"}}, status_code=404)
        return Response(self.files[file_id]["data"], media_type="application/octet-stream")

    async def create_batch(self, request: Request) -> Response:
        body = await request.json()
        self._log(request, body, None)
        batch_id = f"batch_fake{next(self._ids)}"
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": body.get("completion_window", "24h"),
            "status": "in_progress",
            "created_at": int(time.time()),
            "output_file_id": None,
            "error_file_id": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "_done_at": time.monotonic() + self.batch_delay_s,
        }
        return JSONResponse(self._batch_object(batch_id))

    def _finish_batch(self, batch: dict[str, Any]) -> None:
        lines = self.files[batch["input_file_id"]]["data"].decode("utf-8").splitlines()
        out = []
        for n, line in enumerate(lines):
            item = json.loads(line)
            answer = self._answer(item["body"], self._content(item["body"]))
            out.append(
                json.dumps(
                    {
                        "id": f"batch_req_{n}",
                        "custom_id": item["custom_id"],
                        "response": {"status_code": 200, "request_id": f"req_{n}", "body": answer},
                        "error": None,
                    }
                )
            )
        file_id = f"file-fake{next(self._ids)}"
        self.files[file_id] = {
            "data": ("\n".join(out) + "\n").encode(),
            "purpose": "batch_output",
            "filename": "output.jsonl",
        }
        batch.update(
            status="completed",
            output_file_id=file_id,
            request_counts={"total": len(lines), "completed": len(lines), "failed": 0},
        )

    def _batch_object(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if batch["status"] == "in_progress" and time.monotonic() >= batch["_done_at"]:
            self._finish_batch(batch)
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    async def get_batch(self, request: Request) -> Response:
        batch_id = request.path_params["batch_id"]
        self._log(request, None, None)
        if batch_id not in self.batches:
            return JSONResponse({"error": {"message": f"no batch {batch_id}"}}, status_code=404)
        return JSONResponse(self._batch_object(batch_id))

    # -- lifecycle --------------------------------------------------------------------------------
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/files", self.upload_file, methods=["POST"]),
                Route("/v1/files/{file_id}/content", self.file_content, methods=["GET"]),
                Route("/v1/batches", self.create_batch, methods=["POST"]),
                Route("/v1/batches/{batch_id}", self.get_batch, methods=["GET"]),
                Route("/_fake/stats", self.stats, methods=["GET"]),
            ]
        )

    async def stats(self, request: Request) -> Response:
        """Request counts, for a benchmark that runs the server in another process."""
        return JSONResponse(
            {"chat": self.count(), "total": len(self.requests), "max_in_flight": self.max_in_flight}
        )

    def start(self, port: int = 0) -> FakeOpenAI:
        """Serve on ``port`` of 127.0.0.1 (0: a free one) from a background thread."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app(),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            backlog=512,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake OpenAI server did not start")
            time.sleep(0.005)
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)


def start_fake_openai(
    responder: Responder,
    latency: float = 0.0,
    faults: Faults | dict[str, Any] | None = None,
    seed: int = 0,
    **options: Any,
) -> FakeOpenAI:
    """Start a server in a background thread; ``.base_url`` is ready to hand to the openai client.

    ``options``: ``json_schema_supported=False`` answers a json_schema response_format with a 400 (like
    servers without structured outputs); ``reject_schema(json_schema) -> bool`` refuses single schemas
    ("Invalid schema for response_format ..."); ``refuse_forms=("json_schema",)`` refuses those structured
    forms (json_schema, json_object_schema = json_object with a schema, json_mode) with ``refusal_status``
    (400; 500 as llama-cpp-python does); ``batch_delay_s`` keeps a batch in progress that long;
    ``api_key`` answers any other bearer token with a 401 that echoes it, as OpenAI does;
    ``fault_for(body) -> kind | None`` injects a fault into the requests it picks; ``replies=[(status,
    body), ...]`` answers the first chat requests with exactly those (an engine's own error wording).
    """
    return FakeOpenAI(responder, latency=latency, faults=faults, seed=seed, **options).start()


@pytest.fixture(name="fake_openai")
def fake_openai_fixture():
    """A factory fixture: ``server = fake_openai(responder, latency=..., faults=...)``; all stopped after."""
    servers: list[FakeOpenAI] = []

    def start(responder: Responder, **kwargs: Any) -> FakeOpenAI:
        server = start_fake_openai(responder, **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


#: The API key the tests' clients send (the loopback server accepts any unless told ``api_key``).
TEST_KEY = "sk-test-fake-openai-key"


@pytest.fixture(name="openai_key")
def openai_key_fixture(monkeypatch):
    """``OPENAI_API_KEY`` set for the test (``pytestmark = pytest.mark.usefixtures("openai_key")``)."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    return TEST_KEY


def openai_layer(project, server: FakeOpenAI, **llm: Any):
    """``project``'s LLM layer on ``server`` through the real openai client: ``[llm]`` settings ``llm``
    over the server's ``base_url``, no progress bar."""
    from prefkit.pipelines.llm import LLMLayer

    return LLMLayer(project.store, {"base_url": server.base_url, **llm}, backend="openai", progress=False)


def named_item(body: dict[str, Any]) -> str:
    """The last word of a request's first message: the item the tests' prompts end in."""
    return body["messages"][0]["content"].split()[-1]


@contextmanager
def openai_projects(tmp_path: Path, monkeypatch, root: Callable[[int], str] = lambda n: "proj"):
    """``make(responder) -> (server, project)``: a loopback server started, ``OPENAI_API_KEY`` set, and
    a new project (at ``tmp_path / root(n)``, n counting from 0) whose ``[llm] base_url`` is the
    server's. Every project is closed and every server stopped on leaving."""
    from prefkit.curation.project import Project

    made: list[tuple[FakeOpenAI, Project]] = []

    def make(responder: Responder) -> tuple[FakeOpenAI, Project]:
        server = start_fake_openai(responder)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        project = Project.init(tmp_path / root(len(made)))
        cfg = project.root / "prefkit.toml"
        cfg.write_text(
            cfg.read_text(encoding="utf-8").replace('base_url = ""', f'base_url = "{server.base_url}"'),
            encoding="utf-8",
        )
        project = Project(project.root)
        made.append((server, project))
        return server, project

    yield make
    for server, project in made:
        project.close()
        server.stop()


def load_responder(spec: str) -> Responder:  # pragma: no cover - used by the benchmarks
    """``path/to/file.py:function`` -> that function (a benchmark's own responder)."""
    import importlib.util

    path, _, name = spec.rpartition(":")
    module_spec = importlib.util.spec_from_file_location("fake_responder", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def serve_forever(port: int, latency: float, responder: Responder | None = None) -> None:  # pragma: no cover
    """Run a server in this process (benchmarks); the built-in responder answers one JSON object
    echoing the prompt size."""

    def echo(body: dict[str, Any]) -> dict[str, Any]:
        return {"text": f"answer to {len(_prompt_text(body))} chars"}

    fake = FakeOpenAI(responder or echo, latency=latency)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(fake.app(), log_level="warning", access_log=False, lifespan="off", backlog=512)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":  # pragma: no cover
    import argparse

    parser = argparse.ArgumentParser(description="Run the loopback fake OpenAI server (127.0.0.1 only).")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--responder", help="path/to/file.py:function answering each chat request")
    args = parser.parse_args()
    serve_forever(args.port, args.latency, load_responder(args.responder) if args.responder else None)
