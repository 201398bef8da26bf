"""The OpenAI-compatible backend: the real ``openai`` SDK (``AsyncOpenAI``) against any endpoint.

Structured requests go through ``client.chat.completions.parse(response_format=Model)`` (json_schema
structured outputs). A server that refuses json_schema (a 400 naming it), a model whose schema the SDK
cannot make strict, or ``[llm] structured = "json_mode"`` switches to JSON mode: ``response_format=
{"type": "json_object"}`` with the schema in a system message; the layer validates either answer with
the same pydantic model. Transport retries (429 with Retry-After, 5xx, timeouts) are the SDK's, with
``max_retries``/``timeout_s`` from the config.

This module must never store, log or return the API key: errors are scrubbed of it before they leave.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, cast

import openai
import pydantic
from openai.lib._parsing import type_to_response_format_param
from prefkit.pipelines.llm.config import LLMConfigError, endpoint_host, resolve_api_key, resolve_base_url
from prefkit.pipelines.llm.keys import response_schema
from prefkit.pipelines.llm.types import BatchState, CallFailed, LLMRequest, Usage
from prefkit.schemas.config import LLMSection
from prefkit.schemas.environment import Environment

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

JSON_MODE_INSTRUCTION = (
    "Answer with a single JSON object and nothing else. It must validate against this JSON schema:\n{schema}"
)


def _usage(data: Any) -> Usage:
    if data is None:
        return Usage()
    details = getattr(data, "prompt_tokens_details", None)
    return Usage(
        data.prompt_tokens or 0, data.completion_tokens or 0, getattr(details, "cached_tokens", 0) or 0
    )


def _refuses_json_schema(exc: openai.BadRequestError) -> bool:
    text = str(exc).lower()
    return "json_schema" in text or "response_format" in text


def _messages(request: LLMRequest) -> list[ChatCompletionMessageParam]:
    # The layer's messages are (role, content) pairs in the chat roles the API takes.
    return cast("list[ChatCompletionMessageParam]", request.chat_messages())


class OpenAIBackend:
    """One ``AsyncOpenAI`` client per event loop; JSON-mode fallback remembered per backend."""

    name = "openai"
    offline = False

    def __init__(self, settings: LLMSection, env: Environment):
        self.settings = settings
        self.base_url = resolve_base_url(settings, env)
        self._key = resolve_api_key(settings, env)
        self.host: str | None = endpoint_host(self.base_url)
        self.json_mode = settings.structured == "json_mode"
        self._json_mode_models: set[type[pydantic.BaseModel]] = set()
        self._clients: dict[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = {}

    @property
    def client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if loop not in self._clients:
            self._clients[loop] = openai.AsyncOpenAI(
                api_key=self._key,
                base_url=self.base_url,
                max_retries=self.settings.max_retries,
                timeout=self.settings.timeout_s,
            )
        return self._clients[loop]

    def scrub(self, text: str | None) -> str | None:
        return None if text is None or not self._key else text.replace(self._key, "***")

    def check(self, requests: list[LLMRequest]) -> None:
        return None

    async def complete(self, request: LLMRequest, model: str, seed: int) -> tuple[str, Usage, dict[str, Any]]:
        try:
            return await self._complete(request, model, seed)
        except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
            # Every call would fail the same way: stop the run instead of writing a failure per item.
            raise LLMConfigError(f"{self.host}: {self.scrub(str(exc))}") from None
        except openai.APIStatusError as exc:
            raise CallFailed(
                f"HTTP {exc.status_code}: {self.scrub(str(exc))}", self.scrub(exc.response.text)
            ) from None
        except openai.APITimeoutError:
            raise CallFailed(
                f"timed out after {self.settings.timeout_s}s ({self.settings.max_retries} retries)"
            ) from None
        except openai.APIConnectionError as exc:
            raise CallFailed(f"connection failed: {self.scrub(str(exc))}") from None
        except openai.APIResponseValidationError as exc:
            raise CallFailed(f"malformed response: {self.scrub(str(exc))}") from None

    async def _complete(
        self, request: LLMRequest, model: str, seed: int
    ) -> tuple[str, Usage, dict[str, Any]]:
        schema_model = request.response_model
        if schema_model is None:
            return await self._create(request, model, seed, response_format=None)
        if self.json_mode or schema_model in self._json_mode_models:
            return await self._create(request, model, seed, response_format={"type": "json_object"})
        try:
            return await self._parse(request, model, seed)
        except openai.BadRequestError as exc:
            if not _refuses_json_schema(exc):
                raise
            if "invalid schema" in str(exc).lower():
                self._json_mode_models.add(schema_model)  # the server rejects this one schema only
            else:
                self.json_mode = True  # the server has no structured outputs: stay in JSON mode
        except (TypeError, ValueError, pydantic.errors.PydanticUserError):
            self._json_mode_models.add(schema_model)  # no strict schema for this model
        return await self._create(request, model, seed, response_format={"type": "json_object"})

    def _params(self, request: LLMRequest, model: str, seed: int) -> dict[str, Any]:
        params: dict[str, Any] = {"model": model, "temperature": request.temperature, "seed": seed}
        if request.max_tokens is not None:
            params["max_tokens"] = request.max_tokens
        return params

    async def _parse(self, request: LLMRequest, model: str, seed: int) -> tuple[str, Usage, dict[str, Any]]:
        if request.response_model is None:  # _complete sends a request without a model to _create
            raise ValueError("a structured call needs the request's response_model")
        raw = await self.client.chat.completions.with_raw_response.parse(
            messages=_messages(request),
            response_format=request.response_model,
            **self._params(request, model, seed),
        )
        try:
            completion = raw.parse()
        except pydantic.ValidationError:
            # Schema-invalid content: hand the raw answer to the layer, which validates and repairs.
            return self._from_body(raw.text)
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            raise CallFailed(f"malformed response body: {exc}", self.scrub(raw.text)) from None
        except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
            raise CallFailed(
                f"answer cut off: {type(exc).__name__}", self._content_or_none(raw.text)
            ) from None
        return self._result(completion)

    async def _create(self, request, model, seed, response_format) -> tuple[str, Usage, dict[str, Any]]:
        messages = request.chat_messages()
        params = self._params(request, model, seed)
        if response_format is not None:
            schema = json.dumps(response_schema(request.response_model), sort_keys=True)
            messages.append({"role": "system", "content": JSON_MODE_INSTRUCTION.format(schema=schema)})
            params["response_format"] = response_format
        raw = await self.client.chat.completions.with_raw_response.create(messages=messages, **params)
        try:
            completion = raw.parse()
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            raise CallFailed(f"malformed response body: {exc}", self.scrub(raw.text)) from None
        if isinstance(completion, str):
            raise CallFailed("malformed response body: not JSON", self.scrub(completion))
        return self._result(completion, structured="json_mode" if response_format else None)

    def _result(
        self, completion: Any, structured: str | None = "json_schema"
    ) -> tuple[str, Usage, dict[str, Any]]:
        if not completion.choices:
            raise CallFailed("the response has no choices")
        message = completion.choices[0].message
        if getattr(message, "refusal", None):
            raise CallFailed(f"the model refused: {message.refusal}", message.refusal)
        meta = {
            "endpoint": self.host,
            "system_fingerprint": completion.system_fingerprint,
            "structured": structured,
        }
        return message.content or "", _usage(completion.usage), meta

    def _from_body(self, body: str) -> tuple[str, Usage, dict[str, Any]]:
        data = json.loads(body)
        usage = data.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0) or 0
        meta = {
            "endpoint": self.host,
            "system_fingerprint": data.get("system_fingerprint"),
            "structured": "json_schema",
        }
        text = data["choices"][0]["message"].get("content") or ""
        return text, Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), cached), meta

    # -- Batch API --------------------------------------------------------------------------------
    def batch_body(self, request: LLMRequest, model: str, seed: int) -> dict[str, Any]:
        """The ``body`` of one Batch API line: what the live path would send for ``request``."""
        body: dict[str, Any] = {"messages": request.chat_messages(), **self._params(request, model, seed)}
        schema_model = request.response_model
        if schema_model is None:
            return body
        if not (self.json_mode or schema_model in self._json_mode_models):
            try:
                body["response_format"] = type_to_response_format_param(schema_model)
                return body
            except (TypeError, ValueError, pydantic.errors.PydanticUserError):
                self._json_mode_models.add(schema_model)
        schema = json.dumps(response_schema(schema_model), sort_keys=True)
        body["messages"].append({"role": "system", "content": JSON_MODE_INSTRUCTION.format(schema=schema)})
        body["response_format"] = {"type": "json_object"}
        return body

    async def submit_batch(self, lines: list[dict[str, Any]], stage: str) -> tuple[str, str]:
        data = ("".join(json.dumps(line) + "\n" for line in lines)).encode("utf-8")
        upload = await self.client.files.create(
            file=("prefkit-batch.jsonl", data, "application/jsonl"), purpose="batch"
        )
        batch = await self.client.batches.create(
            input_file_id=upload.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"prefkit_stage": stage[:500]},
        )
        return batch.id, upload.id

    async def batch_state(self, batch_id: str) -> BatchState:
        b = await self.client.batches.retrieve(batch_id)
        return BatchState(b.id, b.status, b.output_file_id, b.error_file_id)

    async def batch_lines(self, file_id: str | None) -> dict[str, dict[str, Any]]:
        if not file_id:
            return {}
        content = await self.client.files.content(file_id)
        lines = (json.loads(line) for line in content.text.splitlines() if line.strip())
        return {line["custom_id"]: line for line in lines}

    def answer_from_batch_line(self, line: dict[str, Any]) -> tuple[str, Usage, dict[str, Any]]:
        """(text, usage, meta) of one output line; :class:`CallFailed` for an errored request."""
        response = line.get("response") or {}
        if line.get("error") or response.get("status_code") != 200:
            error = line.get("error") or (response.get("body") or {}).get("error") or response
            raise CallFailed(f"batch request failed: {self.scrub(json.dumps(error, sort_keys=True))}")
        text, usage, meta = self._from_body(json.dumps(response["body"]))
        return text, usage, {**meta, "batch": True}

    def _content_or_none(self, body: str) -> str | None:
        try:
            return json.loads(body)["choices"][0]["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError):
            return None

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.close()
        self._clients.clear()  # clients of other (finished) loops cannot be closed from here
