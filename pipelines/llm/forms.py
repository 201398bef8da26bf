"""How a structured answer is asked of an OpenAI-compatible server, and which answers are final.

Engines take structured output their own way: OpenAI, vLLM, SGLang and LM Studio take
``response_format={"type": "json_schema", ...}``; llama.cpp's server and llama-cpp-python take
``{"type": "json_object", "schema": {...}}``; some only JSON mode. ``FORMS`` is the order ``[llm]
structured = "auto"`` tries them in. An error answer whose body names ``response_format`` or a schema is
the server refusing the form (whatever its status, 4xx or 5xx): it is never retried, the next form is
asked. An answer saying the prompt does not fit the model's window is final as well: ``context_length:
N > W``. Everything else (429, other 5xx, timeouts) stays transient.

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

_REFUSAL = re.compile(r"response_format|schema", re.I)
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
    """A 4xx/5xx (not 429, not a context overflow) whose body names response_format or a schema."""
    return status >= 400 and status != 429 and bool(_REFUSAL.search(body)) and context_overflow(body) is None


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


def next_form(form: str) -> str | None:
    i = FORMS.index(form) + 1
    return FORMS[i] if i < len(FORMS) else None
