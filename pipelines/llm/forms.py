"""How a structured answer is asked of an OpenAI-compatible server, and which answers are final.

``FORMS`` is the order ``[llm] structured = "auto"`` tries the engines' structured-output forms in. A
JSON error whose ``param``, ``code`` or message names the request's ``response_format`` is the server
refusing the form, whatever its status, and an answer saying the prompt does not fit the model's window
(``context_length: N > W``) is final as well; everything else stays transient. Which engine says what
is in docs/llm.md (*Structured outputs*).

This module must never hold a key; it only reads error bodies the server sent.
"""

from __future__ import annotations

import json
import re
from typing import Any

from openai.lib._parsing import type_to_response_format_param
from prefkit.pipelines.llm.keys import response_schema
from prefkit.pipelines.llm.types import LLMRequest
from pydantic import BaseModel

FORMS = ("json_schema", "json_object_schema", "json_mode")

JSON_MODE_INSTRUCTION = (
    "Answer with a single JSON object and nothing else. It must validate against this JSON schema:\n{schema}"
)

_NAMES_FORM = re.compile(r"response_format|json[ _]schema", re.I)
# (asked, window) in the words of OpenAI and vLLM, llama-cpp-python, and llama.cpp's server.
_CONTEXT = (
    re.compile(
        r"maximum context length is (?P<w>\d+) tokens.*?(?:requested|resulted in) (?P<n>\d+) tokens",
        re.I | re.S,
    ),
    re.compile(r"requested tokens \((?P<n>\d+)\) exceed context window of (?P<w>\d+)", re.I),
    re.compile(r'"n_prompt_tokens"\s*:\s*(?P<n>\d+).*?"n_ctx"\s*:\s*(?P<w>\d+)', re.S),
)
_CONTEXT_WORDS = re.compile(r"context.length|context window|context size|exceed_context", re.I)


def is_refusal(status: int, body: str) -> bool:
    """An error answer (not a context overflow, nor a status that means "later": 408, 409, 429) whose
    JSON error names the request's response_format."""
    if status < 400 or status in (408, 409, 429):
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return False  # a proxy's page, a crash's text: not the engine answering the request
    error = data.get("error", data) if isinstance(data, dict) else None  # vLLM once sent it bare
    fields = error.items() if isinstance(error, dict) else [("message", error)]
    named = any(k in ("param", "code", "message", "detail") and _NAMES_FORM.search(str(v)) for k, v in fields)
    return named and context_overflow(body) is None


def context_overflow(body: str, asked: int | None = None) -> str | None:
    """``context_length: N > W`` when ``body`` says the prompt does not fit; ``asked`` (an estimate)
    stands in for N when the server names only its window."""
    for pattern in _CONTEXT:
        m = pattern.search(body)
        if m:
            return f"context_length: {m['n']} > {m['w']}"
    if not _CONTEXT_WORDS.search(body):
        return None
    window = re.search(r"(?:length|window|size) (?:is |of )?(\d+)", body)
    return f"context_length: ~{asked or '?'} > {window[1] if window else '?'}"


def is_final(status: int, body: str) -> bool:
    """An error answer no retry can change: a form refusal or a context overflow."""
    return status >= 400 and (is_refusal(status, body) or context_overflow(body) is not None)


def form_params(form: str, request: LLMRequest) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """The messages and ``response_format`` that ask ``request`` in ``form`` (a form the SDK cannot
    build a strict schema for raises TypeError/ValueError/PydanticUserError)."""
    model: type[BaseModel] | None = request.response_model
    messages = request.chat_messages()
    if model is None:
        return messages, {}
    if form == "json_schema":
        return messages, {"response_format": type_to_response_format_param(model)}
    schema = response_schema(model)
    if form == "json_object_schema":
        return messages, {"response_format": {"type": "json_object", "schema": schema}}
    instruction = JSON_MODE_INSTRUCTION.format(schema=json.dumps(schema, sort_keys=True))
    return messages + [{"role": "system", "content": instruction}], {
        "response_format": {"type": "json_object"}
    }
