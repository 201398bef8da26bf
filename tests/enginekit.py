"""The real inference engine of .ci/engine.sh for the engine tests, seen through a recording proxy.

``.ci/engine.sh`` serves SmolLM2-135M-Instruct with llama-cpp-python's OpenAI-compatible server on
127.0.0.1 (``PREFKIT_ENGINE_URL``, ``PREFKIT_ENGINE_SMALL_URL`` with a 256-token window,
``PREFKIT_ENGINE_MODEL``). :class:`Recorder` is an HTTP proxy on 127.0.0.1 in front of it that forwards
every request unchanged and keeps, per chat completion, the request body, the status and the answer's
``usage``: what the engine was asked and what it says it spent. :func:`engine_project` makes a project
configured as a user with a local engine would: ``base_url``, the model names, and the settings of a
one-request engine (``concurrency = 1``, a timeout that fits one call of a small model on 2 cores).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from conftest import require
from prefkit.schemas.common import canonical_json

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}

#: The ``[llm]`` lines of a one-request engine (docs/llm.md, "llama.cpp and llama-cpp-python").
ONE_REQUEST = {"concurrency": 1, "timeout_s": 600, "max_retries": 1, "max_tokens": 256}


def engine(small: bool = False) -> tuple[str, str]:
    """``(base_url, model)`` of the running engine; skips locally and fails in CI without one."""
    url = os.environ.get("PREFKIT_ENGINE_SMALL_URL" if small else "PREFKIT_ENGINE_URL", "")
    model = os.environ.get("PREFKIT_ENGINE_MODEL", "")
    require(bool(url and model), "no inference engine: `bash .ci/engine.sh start`, then source its env file")
    try:
        httpx.get(f"{url}/models", timeout=10).raise_for_status()
    except httpx.HTTPError as exc:
        require(False, f"the engine at {url} does not answer /v1/models ({exc})")
    return url, model


@dataclass
class Call:
    body: dict[str, Any]
    status: int
    usage: dict[str, Any] = field(default_factory=dict)


class Recorder:
    """Forward everything to ``target`` (an engine's ``…/v1``); keep each chat completion as a :class:`Call`."""

    def __init__(self, target: str):
        self.target = target.rstrip("/")
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self) -> None:
                self._forward(b"")

            def do_POST(self) -> None:
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _forward(self, body: bytes) -> None:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                path = self.path.removeprefix("/v1")
                with httpx.Client(timeout=None) as client:
                    answer = client.request(
                        self.command, recorder.target + path, content=body, headers=headers
                    )
                if path.endswith("/chat/completions"):
                    recorder._keep(body, answer)
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _keep(self, body: bytes, answer: httpx.Response) -> None:
        try:
            usage = answer.json().get("usage") or {}
        except ValueError:
            usage = {}
        with self._lock:
            self.calls.append(Call(json.loads(body), answer.status_code, usage))

    def answered(self) -> list[Call]:
        return [c for c in self.calls if c.status == 200]

    def tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens the engine reported over every answered call."""
        done = self.answered()
        return sum(c.usage["prompt_tokens"] for c in done), sum(c.usage["completion_tokens"] for c in done)

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def body_key(body: dict[str, Any]) -> str:
    """The LLM layer's cache key of the request a chat completion body asks (free text, or json_object
    with the schema: the forms whose messages are the request's own)."""
    canonical = {
        "model": body["model"],
        "messages": [[m["role"], m["content"]] for m in body["messages"]],
        "temperature": body.get("temperature"),
        "max_tokens": body.get("max_tokens"),
        "schema": (body.get("response_format") or {}).get("schema"),
        "seed": body.get("seed"),
    }
    return hashlib.sha256(canonical_json(canonical).encode("utf-8")).hexdigest()


def engine_project(root: Path, base_url: str, model: str) -> Path:
    """``prefkit init`` at ``root``, then only ``[llm]`` backend, base_url, model names and the one-request
    settings changed."""
    from prefkit.curation.project import Project

    Project.init(root).close()
    toml = root / "prefkit.toml"
    text = toml.read_text(encoding="utf-8")
    text = text.replace('backend = "offline"', 'backend = "openai"', 1)
    text = text.replace('base_url = ""', f'base_url = "{base_url}"', 1)
    text = text.replace('"gpt-4o-mini"', f'"{model}"')
    for key, value in ONE_REQUEST.items():
        [line] = [line for line in text.splitlines() if line.startswith(f"{key} = ")]
        text = text.replace(line, f"{key} = {value}", 1)
    toml.write_text(text, encoding="utf-8")
    return root
