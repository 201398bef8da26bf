"""The OpenAI-compatible backend: the real ``openai`` SDK (``AsyncOpenAI``) against any endpoint.

A structured request is asked in one of ``forms.FORMS``; with ``[llm] structured = "auto"`` the backend
starts from the form the project remembers for this endpoint and model (``store.llm.forms()``), moves on
after a refusal (``forms.is_refusal``, never retried) and remembers the form that answers
(docs/llm.md, *Structured outputs*). Transport retries are the SDK's, with ``max_retries`` from the
config; ``timeout_s`` bounds each attempt whole, not each read; an answer no retry can change (a
refusal, a context overflow) is marked so the SDK does not retry it.

This module must never store, log or return the API key: errors are scrubbed of it before they leave.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

import httpx
import openai
import pydantic
from prefkit.pipelines.llm import forms
from prefkit.pipelines.llm.config import (
    NO_KEY,
    LLMConfigError,
    endpoint_host,
    endpoint_id,
    resolve_api_key,
    resolve_base_url,
)
from prefkit.pipelines.llm.keys import prompt_tokens
from prefkit.pipelines.llm.types import BatchState, CallFailed, LLMRequest, Usage
from prefkit.schemas.config import LLMSection
from prefkit.schemas.environment import Environment

_CONFIG_ERRORS = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)
_SCHEMA_ERRORS = (TypeError, ValueError, pydantic.errors.PydanticUserError)


class FormMemory(Protocol):
    """Where the form an endpoint took is remembered (the project store's ``store.llm``)."""

    def forms(self) -> list[Any]: ...

    def remember_form(self, endpoint: str, model: str, form: str | None) -> None: ...


def _usage(data: Any) -> Usage:
    if data is None:
        return Usage()
    details = getattr(data, "prompt_tokens_details", None)
    return Usage(
        data.prompt_tokens or 0, data.completion_tokens or 0, getattr(details, "cached_tokens", 0) or 0
    )


async def _no_retry_when_final(response: Any) -> None:
    """A 5xx that refuses the form or the prompt's length is final: tell the SDK not to retry it."""
    if response.status_code >= 500:
        await response.aread()
        if forms.is_final(response.status_code, response.text):
            response.headers["x-should-retry"] = "false"


class _AttemptDeadline(openai.DefaultAsyncHttpxClient):
    """Each chat completion attempt done within ``deadline`` seconds in all: httpx's timeouts bound each
    read, so a server trickling its body a byte at a time would hold a call for as long as it trickles.
    (Batch file uploads and downloads keep httpx's per-read timeouts: their size sets their time.)"""

    def __init__(self, deadline: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.deadline = deadline

    async def send(self, request: Any, **kwargs: Any) -> Any:
        if not request.url.path.endswith("/chat/completions"):
            return await super().send(request, **kwargs)
        try:
            async with asyncio.timeout(self.deadline):
                return await super().send(request, **kwargs)
        except TimeoutError:  # the SDK retries it as a timeout, then raises APITimeoutError
            raise httpx.ReadTimeout(f"no whole answer within {self.deadline}s", request=request) from None


class OpenAIBackend:
    """One ``AsyncOpenAI`` client per event loop; the structured form per model, remembered."""

    name = "openai"
    offline = False

    def __init__(self, settings: LLMSection, env: Environment, memory: FormMemory | None = None):
        self.settings = settings
        self.base_url = resolve_base_url(settings, env)
        self._key = resolve_api_key(settings, env, self.base_url)
        self.host: str | None = endpoint_host(self.base_url)
        self.endpoint = endpoint_id(self.base_url)
        self.auto = settings.structured == "auto"
        self._memory = memory
        self._refused_forms: dict[str, set[str]] = {}  # model name -> the forms the endpoint refused
        self._schema_form: dict[tuple[str, type[pydantic.BaseModel]], str] = {}  # one schema moved on
        self._start: dict[str, str] | None = None  # model name -> the form remembered when the run began
        self._remembered: dict[str, str] = {}  # model name -> the form remembered now
        self._clients: dict[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = {}

    @property
    def client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if loop not in self._clients:
            self._clients[loop] = openai.AsyncOpenAI(
                api_key=self._key or NO_KEY,
                base_url=self.base_url,
                max_retries=self.settings.max_retries,
                timeout=self.settings.timeout_s,
                http_client=_AttemptDeadline(
                    self.settings.timeout_s, event_hooks={"response": [_no_retry_when_final]}
                ),
            )
        return self._clients[loop]

    def scrub(self, text: str | None) -> str | None:
        # A key shorter than any real one ("x", what local engines are often given) is no secret, and
        # replacing it would rewrite every answer that holds that letter.
        if text is None or len(self._key or "") < 8:
            return text
        return text.replace(self._key or "", "***")

    def check(self, requests: list[LLMRequest]) -> None:
        return None

    async def complete(self, request: LLMRequest, model: str, seed: int) -> tuple[str, Usage, dict[str, Any]]:
        try:
            return await self._complete(request, model, seed)
        except _CONFIG_ERRORS as exc:
            # Every call would fail the same way: stop the run instead of writing a failure per item.
            raise LLMConfigError(f"{self.host}: {self.scrub(str(exc))}") from None
        except openai.APIStatusError as exc:
            overflow = forms.context_overflow(exc.response.text, prompt_tokens(request))
            raise CallFailed(
                overflow or f"HTTP {exc.status_code}: {self.scrub(str(exc))}", self.scrub(exc.response.text)
            ) from None
        except openai.APITimeoutError:
            raise CallFailed(
                f"timed out after {self.settings.timeout_s}s ({self.settings.max_retries} retries)"
            ) from None
        except openai.APIConnectionError as exc:
            raise CallFailed(f"connection failed: {self.scrub(str(exc))}") from None
        except openai.APIResponseValidationError as exc:
            raise CallFailed(f"malformed response: {self.scrub(str(exc))}") from None

    # -- the structured form ----------------------------------------------------------------------
    def form_for(self, request: LLMRequest, model: str) -> str:
        """The form to ask ``request`` in now."""
        form = self._endpoint_form(model)
        moved = self._schema_form.get((model, request.response_model))  # type: ignore[arg-type]
        return max(form, moved or form, key=forms.FORMS.index)

    def _endpoint_form(self, model: str) -> str:
        """The form this endpoint takes for ``model``: the named one; else, on from the one remembered
        (or the first) and round to the ones before it, the first not refused yet."""
        if not self.auto:
            return self.settings.structured
        if self._start is None:
            mine = [f for f in (self._memory.forms() if self._memory else []) if f.endpoint == self.endpoint]
            self._remembered = {f.model: f.form for f in mine if f.form in forms.FORMS}
            self._start = dict(self._remembered)
        i = forms.FORMS.index(self._start.get(model, forms.FORMS[0]))
        order, refused = forms.FORMS[i:] + forms.FORMS[:i], self._refused_forms.get(model, set())
        return next((f for f in order if f not in refused), order[-1])

    def _refused(self, request: LLMRequest, model: str, form: str, why: str, one_schema: bool) -> str:
        """The form to ask in after ``form`` was refused (``why``), or a one-line error when none is left."""
        refused = self._refused_forms.setdefault(model, set())
        if one_schema:  # this schema only: the next form the endpoint has not refused
            later = forms.FORMS[forms.FORMS.index(form) + 1 :]
            following = next((f for f in later if f not in refused), None)
        elif self.auto:
            refused.add(form)
            following = self._endpoint_form(model)
            following = None if following in refused else following
        else:
            following = None
        if following is None:
            raise LLMConfigError(
                f"{self.host}: model {model!r} refused the structured form {form!r}: {why[:300]}"
                + ("" if self.auto else '; set [llm] structured = "auto" to try the other forms')
            )
        if one_schema:
            self._schema_form[(model, request.response_model)] = following  # type: ignore[index]
        elif self._remembered.get(model) == form:
            del self._remembered[model]
            if self._memory:
                self._memory.remember_form(self.endpoint, model, None)  # refused: forget it
        return following

    def _worked(self, model: str, form: str) -> None:
        if not self.auto or form != self._endpoint_form(model):
            return  # a named form, or one schema's own: nothing to remember for the endpoint
        if self._remembered.get(model) != form and self._memory:
            self._memory.remember_form(self.endpoint, model, form)
        self._remembered[model] = form

    async def _complete(
        self, request: LLMRequest, model: str, seed: int
    ) -> tuple[str, Usage, dict[str, Any]]:
        if request.response_model is None:
            return await self._create(request, model, seed, None)
        form = self.form_for(request, model)
        while True:
            try:
                answer = await self._create(request, model, seed, form)
            except _CONFIG_ERRORS:
                raise
            except openai.APIStatusError as exc:
                body = exc.response.text
                if not forms.is_refusal(exc.status_code, body):
                    raise
                one = "invalid schema" in body.lower()  # the server rejects this one schema only
                form = self._refused(request, model, form, self.scrub(body) or "", one)
                continue
            except _SCHEMA_ERRORS as exc:  # the SDK cannot make this schema strict
                form = self._refused(request, model, form, str(exc), True)
                continue
            self._worked(model, form)
            return answer

    def _params(self, request: LLMRequest, model: str, seed: int) -> dict[str, Any]:
        params: dict[str, Any] = {"model": model, "temperature": request.temperature, "seed": seed}
        if request.max_tokens is not None:
            params["max_tokens"] = request.max_tokens
        return params

    async def _create(
        self, request: LLMRequest, model: str, seed: int, form: str | None
    ) -> tuple[str, Usage, dict[str, Any]]:
        messages, fmt = forms.form_params(form or "", request)
        raw = await self.client.chat.completions.with_raw_response.create(
            messages=messages,  # type: ignore[arg-type]
            **self._params(request, model, seed),
            **fmt,
        )
        try:
            completion = raw.parse()
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            raise CallFailed(f"malformed response body: {exc}", self.scrub(raw.text)) from None
        if isinstance(completion, str):
            raise CallFailed("malformed response body: not JSON", self.scrub(completion))
        return self._result(completion, form)

    def _result(self, completion: Any, form: str | None) -> tuple[str, Usage, dict[str, Any]]:
        if not completion.choices:
            raise CallFailed("the response has no choices")
        choice = completion.choices[0]
        message = choice.message
        usage = _usage(completion.usage)
        if getattr(message, "refusal", None):
            raise CallFailed(f"the model refused: {message.refusal}", message.refusal, usage)
        if form and choice.finish_reason in ("length", "content_filter"):
            # A structured answer cut short is not repaired: the re-ask would be cut the same way.
            raise CallFailed(f"answer cut off: finish_reason {choice.finish_reason}", message.content, usage)
        meta = {
            "endpoint": self.host,
            "system_fingerprint": completion.system_fingerprint,
            "structured": form,
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
        form = self.form_for(request, model) if request.response_model is not None else None
        while True:
            try:
                messages, fmt = forms.form_params(form or "", request)
                return {"messages": messages, **self._params(request, model, seed), **fmt}
            except _SCHEMA_ERRORS as exc:
                form = self._refused(request, model, form or "", str(exc), True)

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

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.close()
        self._clients.clear()  # clients of other (finished) loops cannot be closed from here
