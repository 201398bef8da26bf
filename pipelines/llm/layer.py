"""The LLM layer: every pipeline stage's one way to call a model.

``LLMLayer.run(requests)`` answers a list of :class:`LLMRequest` in order. On the way it resolves the
configured model per role, looks each request up in the content-addressed cache of the project store
(so a rerun or a resume after ``kill -9`` repeats no completed call), bounds concurrency and request /
token rates, validates structured answers with the request's pydantic model (with a bounded repair
retry that sends the validation error back), records usage, cost and a ledger row per call, and turns
every failure into an ``ok=False`` response plus a failure row — never ``None``, never a silent drop.

Backends (OpenAI-compatible or offline) only answer one request; everything else lives here. This
module must never write SQL (it goes through ``prefkit.curation.store.llm.LLM``) nor see the API key.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic
from prefkit.curation.store import LLMCallRecord
from prefkit.pipelines.llm.batch import run_batch
from prefkit.pipelines.llm.commits import GroupCommitter
from prefkit.pipelines.llm.config import LLMConfigError
from prefkit.pipelines.llm.costs import Estimate, PriceTable, estimate_calls
from prefkit.pipelines.llm.keys import cache_key, prompt_tokens
from prefkit.pipelines.llm.limits import Pool, RateLimiter
from prefkit.pipelines.llm.offline import OfflineBackend
from prefkit.pipelines.llm.progress import StageProgress
from prefkit.pipelines.llm.types import Backend, BatchBackend, CallFailed, LLMRequest, LLMResponse, Usage
from prefkit.schemas.common import PrefkitError, validation_line
from prefkit.schemas.config import LLMSection
from prefkit.schemas.curation import Provenance
from prefkit.schemas.environment import Environment

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

T = TypeVar("T")
BATCH_GATHER_S = 0.2  # Batch API mode: how long a batch waits for more requests after the last one

REPAIR_PROMPT = (
    "Your previous answer does not validate against the required JSON schema: {error}\n"
    "Reply again with only the corrected JSON object."
)


@dataclass(frozen=True)
class Planned:
    """A request with its resolved model and cache key."""

    request: LLMRequest
    model: str
    key: str


@dataclass
class CallOutcome:
    """The result of one distinct call (shared by every request with the same key)."""

    ok: bool
    text: str | None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)
    parsed: pydantic.BaseModel | None = None
    from_cache: bool = False


BACKEND_MEMBERS = ("name", "offline", "host", "complete", "check", "scrub", "aclose")


def make_backend(
    backend: str | Backend, settings: LLMSection, env: Environment, store: ProjectStore | None = None
) -> Backend:
    if not isinstance(backend, str):  # a user-supplied backend implementing the Backend protocol
        missing = [m for m in BACKEND_MEMBERS if not hasattr(backend, m)]
        if missing:
            raise LLMConfigError(
                f"backend {type(backend).__name__} lacks {', '.join(missing)} of the Backend protocol "
                "(subclass prefkit.pipelines.llm.types.BaseBackend for the defaults)"
            )
        return backend
    if backend == "offline":
        return OfflineBackend()
    if backend == "openai":
        # Here, not at the top: the openai package costs ~0.4 s to import, which every command that only
        # builds, reads or runs offline (most of them, and the annotation app) would pay.
        from prefkit.pipelines.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(settings, env, memory=store.llm if store is not None else None)
    raise LLMConfigError(f"unknown LLM backend {backend!r}; use 'offline' or 'openai'")


class Gathered:
    """What concurrent runs ask, answered together: ``answer`` gets the union of their asks once they
    have asked nothing new for ``quiet_s`` (0: the runs ready now), and each run its own part."""

    def __init__(self, answer: Callable[[dict[str, list]], Awaitable[dict[str, Any]]], quiet_s: float):
        self.answer, self.quiet_s = answer, quiet_s
        self.asked: list[tuple[dict[str, list], asyncio.Future]] = []

    async def ask(self, part: dict[str, list]) -> dict[str, Any]:
        future = asyncio.get_running_loop().create_future()
        self.asked.append((part, future))
        if len(self.asked) == 1:
            self.task = asyncio.ensure_future(self._answer())
        return await future

    async def _answer(self) -> None:
        seen = 0
        while seen != len(self.asked):
            seen = len(self.asked)
            await asyncio.sleep(self.quiet_s)
        asked, self.asked = self.asked, []
        merged: dict[str, list] = {}
        for part, _ in asked:
            for key, values in part.items():
                merged.setdefault(key, []).extend(values)
        try:
            answers = await self.answer(merged)
        except Exception as exc:  # every run that asked sees the error
            for _, future in asked:
                future.set_exception(exc)
            return
        for part, future in asked:
            future.set_result({key: answers.get(key) for key in part})


class LLMLayer:
    """Cached, rate-limited, validated LLM calls for one project store."""

    def __init__(
        self,
        store: ProjectStore,
        llm_config: LLMSection | dict[str, Any] | None = None,
        backend: str | Backend = "offline",
        seed: int = 0,
        progress: bool = True,
        batch: bool = False,
        env: Environment | None = None,
    ):
        self.store = store
        self.batch = batch  # default for run()/arun(): stages need not know about the Batch API
        self.settings = LLMSection.of(llm_config)
        self.seed = seed
        self.progress = progress
        # The endpoint and key variables: the caller's environment (project.env), else this process's.
        self.backend = make_backend(backend, self.settings, Environment.read() if env is None else env, store)
        self.prices = PriceTable(self.settings.costs)
        self.limiter = RateLimiter(self.settings.requests_per_minute, self.settings.tokens_per_minute)
        # One writer thread: each answer commits as it arrives without blocking the event loop.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefkit-llm-store")
        self._commit: GroupCommitter | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._slots: tuple[asyncio.AbstractEventLoop, Pool] | None = None
        # One cache query for the keys the runs ready now ask; one batch for what they ask together.
        self._lookups = Gathered(self._cached, 0)
        self._batches = Gathered(
            lambda g: run_batch(self, g, StageProgress("batch", 0, False)), BATCH_GATHER_S
        )

    # -- planning and estimates -------------------------------------------------------------------
    def plan(self, requests: Iterable[LLMRequest]) -> list[Planned]:
        offline = self.backend.offline
        cap = None if offline else self.settings.max_tokens or None
        out = []
        for request in requests:
            if cap and (request.max_tokens is None or request.max_tokens > cap):
                request = dataclasses.replace(request, max_tokens=cap)  # [llm] max_tokens: part of the key
            model = self.settings.model_for(request.role)
            out.append(Planned(request, model, cache_key(request, model, self.seed, offline)))
        return out

    def estimate(self, requests: Sequence[LLMRequest]) -> Estimate:
        """Price the calls a run of ``requests`` would make now (cached answers cost nothing)."""
        plan = self.plan(requests)
        cached = self.store.llm.cached_keys({p.key for p in plan})
        unique = {p.key: p for p in plan if p.key not in cached}
        calls = [
            (
                p.model,
                prompt_tokens(p.request),
                self.settings.completion_budget(p.request.stage, p.request.max_tokens),
            )
            for p in unique.values()
        ]
        return estimate_calls(self.prices, calls, cached=sum(1 for p in plan if p.key in cached))

    # -- running ----------------------------------------------------------------------------------
    def run(
        self, requests: Sequence[LLMRequest], desc: str | None = None, batch: bool | None = None
    ) -> list[LLMResponse]:
        """Synchronous :meth:`arun`."""
        return self.wait(self.arun(requests, desc=desc, batch=batch))

    def wait(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to its end on the layer's private event loop (reused, so the HTTP client's
        pool survives; inside a running loop, a notebook's, on a loop of its own thread)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(coro)
        return asyncio.run_coroutine_threadsafe(coro, self._background_loop()).result()

    def stage(self, desc: str) -> StageProgress:
        """A stage's bar and calls for runs to share (``arun(..., progress=stage)``); close it after."""
        return StageProgress(desc, 0, self.progress)

    def _background_loop(self) -> asyncio.AbstractEventLoop:
        """For ``run()`` called inside a running loop (a notebook): a private loop on its own thread."""
        if self._thread_loop is None:
            self._thread_loop = asyncio.new_event_loop()
            threading.Thread(
                target=self._thread_loop.run_forever, daemon=True, name="prefkit-llm-loop"
            ).start()
        return self._thread_loop

    async def arun(
        self,
        requests: Sequence[LLMRequest],
        desc: str | None = None,
        batch: bool | None = None,
        progress: StageProgress | None = None,
    ) -> list[LLMResponse]:
        """One response per request, in order. ``batch=True`` (default: the layer's ``batch``) uses the
        OpenAI Batch API. Concurrent runs share the layer's pool of ``concurrency`` calls (a waiting
        call of lower :data:`~prefkit.pipelines.llm.limits.PRIORITY` goes first); runs given one
        ``progress`` (:meth:`stage`) share its bar and calls."""
        batch = self.batch if batch is None else batch
        requests = list(requests)
        if not requests:
            return []
        self.backend.check(requests)  # fail fast before any call
        plan = self.plan(requests)
        stage = progress or StageProgress(desc or plan[0].request.stage, 0, self.progress)
        outcomes = await self._from_cache([p for p in plan if p.key not in stage.calls])
        groups: dict[str, list[Planned]] = {}
        for p in plan:
            if p.key not in outcomes:
                groups.setdefault(p.key, []).append(p)
        stage.grow(len(plan))
        stage.advance(True, True, n=len(plan) - sum(len(g) for g in groups.values()))
        try:
            if batch and not self.backend.offline:
                if not isinstance(self.backend, BatchBackend):
                    raise LLMConfigError(f"backend {self.backend.name!r} has no Batch API; run without batch")
                # What concurrent runs ask within a moment goes in one batch (a streaming pipeline
                # asks its next requests as soon as the previous batch's answers are in).
                outcomes.update(batched := await self._batches.ask(groups))
                for key, group in groups.items():
                    self._count(stage, batched[key], len(group))
            else:
                outcomes.update(await self._call_all(groups, stage))
        finally:
            if progress is None:
                stage.close()
        return [self._response(p, outcomes[p.key]) for p in plan]

    async def _from_cache(self, plan: list[Planned]) -> dict[str, CallOutcome]:
        found = await self._lookups.ask({p.key: [] for p in plan}) if plan else {}
        rows = {key: row for key, row in found.items() if row is not None}
        self._mark_cached([p for p in plan if p.key in rows])
        return {
            key: CallOutcome(
                True,
                row.text,
                usage=Usage(row.prompt_tokens, row.completion_tokens, row.cached_tokens),
                meta=row.meta,
                from_cache=True,
            )
            for key, row in rows.items()
        }

    async def _cached(self, keys: dict[str, list]) -> dict[str, Any]:
        return self.store.llm.cache_get(keys)

    def _mark_cached(self, plan: list[Planned]) -> None:
        by_stage: dict[str, set[tuple[str, str, str]]] = {}
        for p in plan:
            by_stage.setdefault(p.request.stage, set()).add(
                (p.request.item, p.key, self._ledger_model(p.model))
            )
        for stage, pairs in by_stage.items():
            self.store.llm.mark_cached(stage, pairs)

    async def _call_all(
        self, groups: dict[str, list[Planned]], stage: StageProgress
    ) -> dict[str, CallOutcome]:
        """Live calls; a key the stage's runs asked already waits for that call's outcome."""
        shared = {key: stage.calls[key] for key in groups if key in stage.calls}
        mine = {key: group for key, group in groups.items() if key not in shared}
        for key in mine:
            stage.calls[key] = asyncio.get_running_loop().create_future()
        results: dict[str, CallOutcome] = {}
        try:
            results = await self.run_groups(mine, stage, lambda key, group: self.attempt(group[0]))
        finally:
            for key in mine:
                if key in results:
                    stage.calls[key].set_result(dataclasses.replace(results[key], parsed=None))
                else:
                    stage.calls.pop(key).cancel()
        for key, call in shared.items():
            outcome = results[key] = await call
            await self.persist(key, groups[key], outcome)
            self._count(stage, outcome, len(groups[key]))
        return results

    async def run_groups(
        self,
        groups: dict[str, list[Planned]],
        progress: StageProgress,
        call: Callable[[str, list[Planned]], Awaitable[CallOutcome]],
    ) -> dict[str, CallOutcome]:
        """The one run loop (live calls and batch answers): ``call`` each group at most
        ``concurrency`` at a time, persist its outcome for every request of the group, and count it."""
        pool = self._pool()
        results: dict[str, CallOutcome] = {}

        async def one(key: str, group: list[Planned]) -> None:
            async with pool:
                outcome = await call(key, group)
            await self.persist(key, group, outcome)
            results[key] = outcome
            self._count(progress, outcome, len(group))

        await every(one(key, group) for key, group in groups.items())
        return results

    @staticmethod
    def _count(progress: StageProgress, outcome: CallOutcome, n: int) -> None:
        tokens = outcome.usage.prompt_tokens + outcome.usage.completion_tokens
        progress.advance(outcome.ok, False, tokens, outcome.cost, n=n)

    def _pool(self) -> Pool:
        """The layer's one pool of ``concurrency`` calls (per event loop: its waiters are futures)."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, Pool(self.settings.concurrency))
        return self._slots[1]

    async def attempt(
        self, planned: Planned, first: tuple[str, Usage, dict[str, Any]] | None = None
    ) -> CallOutcome:
        """Call (unless ``first`` already holds an answer), validate, repair a bounded number of times."""
        request, total, text, error = planned.request, Usage(), None, None
        for n in range(1 + self.settings.repair_attempts):
            try:
                text, usage, meta = first if (n == 0 and first) else await self._call(planned, request)
            except CallFailed as exc:
                return self.failed_outcome(planned, f"{exc}", exc.raw, _add(total, exc.usage))
            text = self.backend.scrub(text) or ""  # an answer echoing the key is stored without it
            total = _add(total, usage)
            if request.response_model is None:
                return self._succeeded(planned, text, None, total, meta)
            try:
                parsed = request.response_model.model_validate_json(text)
            except pydantic.ValidationError as exc:
                error = validation_line(exc, root="(root)", limit=5)
                request = dataclasses.replace(
                    request,
                    messages=request.messages
                    + (("assistant", text), ("user", REPAIR_PROMPT.format(error=error))),
                )
                continue
            return self._succeeded(planned, text, parsed, total, meta)
        attempts = self.settings.repair_attempts
        return self.failed_outcome(
            planned, f"schema-invalid answer after {attempts} repair attempt(s): {error}", text, total
        )

    async def _call(self, planned: Planned, request: LLMRequest) -> tuple[str, Usage, dict[str, Any]]:
        budget = prompt_tokens(request) + self.settings.completion_budget(request.stage, request.max_tokens)
        await self.limiter.acquire(budget)
        try:
            text, usage, meta = await self.backend.complete(request, planned.model, self.seed)
        except CallFailed as exc:
            self.limiter.settle(budget, exc.usage.prompt_tokens + exc.usage.completion_tokens)
            raise
        self.limiter.settle(budget, usage.prompt_tokens + usage.completion_tokens)
        return text, usage, meta

    def cost_of(self, model: str, usage: Usage) -> float:
        return 0.0 if self.backend.offline else self.prices.cost(model, usage)

    def _succeeded(
        self, planned: Planned, text: str, parsed, usage: Usage, meta: dict[str, Any]
    ) -> CallOutcome:
        meta = {**meta, "offline": self.backend.offline, "backend": self.backend.name}
        return CallOutcome(
            True, text, usage=usage, cost=self.cost_of(planned.model, usage), meta=meta, parsed=parsed
        )

    def failed_outcome(self, planned: Planned, error: str, raw: str | None, usage: Usage) -> CallOutcome:
        """A failure (error and raw text scrubbed of the API key by backends that hold one)."""
        scrub = self.backend.scrub
        meta = {
            "offline": self.backend.offline,
            "backend": self.backend.name,
            "endpoint": self.backend.host,
        }
        return CallOutcome(
            False,
            scrub(raw),
            error=scrub(error),
            usage=usage,
            cost=self.cost_of(planned.model, usage),
            meta=meta,
        )

    async def persist(self, key: str, group: list[Planned], outcome: CallOutcome) -> None:
        """Commit one call's result (cache + ledger, or failure rows) before reporting it done."""
        await self._committer().submit(self._records(key, group, outcome))

    def _committer(self) -> GroupCommitter:
        loop = asyncio.get_running_loop()
        if self._commit is None or self._commit.loop is not loop:
            self._commit = GroupCommitter(loop, self._writer, self.store.llm.commit)
        return self._commit

    def _ledger_model(self, model: str) -> str:
        """The model as the ledger shows it: offline answers are labelled so usage never mixes them."""
        return f"offline:{model}" if self.backend.offline else model

    def _records(self, key: str, group: list[Planned], outcome: CallOutcome) -> list[LLMCallRecord]:
        u = outcome.usage
        return [
            LLMCallRecord(
                stage=stage,
                items=sorted({p.request.item for p in group if p.request.stage == stage}),
                key=key,
                model=self._ledger_model(group[0].model),
                ok=outcome.ok,
                text=outcome.text,
                error=outcome.error,
                meta=outcome.meta,
                prompt_tokens=u.prompt_tokens,
                completion_tokens=u.completion_tokens,
                cached_tokens=u.cached_tokens,
                cost_usd=outcome.cost,
            )
            for stage in sorted({p.request.stage for p in group})
        ]

    # -- responses --------------------------------------------------------------------------------
    def provenance(self, planned: Planned, meta: dict[str, Any]) -> Provenance:
        return Provenance(
            source=f"generate.{planned.request.stage}",
            model=planned.model,
            endpoint=meta.get("endpoint"),
            prompt_template_hash=planned.request.template_hash,
            seed=self.seed,
            offline=bool(meta.get("offline", self.backend.offline)),
            system_fingerprint=meta.get("system_fingerprint"),
        )

    def _response(self, planned: Planned, outcome: CallOutcome) -> LLMResponse:
        parsed = outcome.parsed
        model = planned.request.response_model
        if outcome.ok and parsed is None and model is not None and outcome.text is not None:
            parsed = model.model_validate_json(outcome.text)
        return LLMResponse(
            request=planned.request,
            ok=outcome.ok,
            parsed=parsed,
            text=outcome.text,
            error=outcome.error,
            provenance=self.provenance(planned, outcome.meta),
            usage=outcome.usage,
            cost_usd=0.0 if outcome.from_cache else outcome.cost,
            from_cache=outcome.from_cache,
        )

    # -- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the HTTP client(s), the writer thread and the private event loops."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.run_until_complete(self._close_backend())
            self._loop.close()
        if self._thread_loop is not None:
            asyncio.run_coroutine_threadsafe(self._close_backend(), self._thread_loop).result(timeout=10)
            self._thread_loop.call_soon_threadsafe(self._thread_loop.stop)
        self._loop = self._thread_loop = None
        self._writer.shutdown(wait=True)

    async def aclose(self) -> None:
        """Close after :meth:`arun` used from your own event loop."""
        await self._close_backend()
        self._writer.shutdown(wait=True)

    async def _close_backend(self) -> None:
        await self.backend.aclose()

    def __enter__(self) -> LLMLayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.prompt_tokens + b.prompt_tokens,
        a.completion_tokens + b.completion_tokens,
        a.cached_tokens + b.cached_tokens,
    )


async def every(aws: Iterable[Coroutine[Any, Any, T]], then: Callable[[T], object] | None = None) -> list[T]:
    """Await ``aws`` together and return their results in order; ``then(result)`` is called in that
    order, each as soon as its result and every earlier one is in. The first error cancels the rest
    and is raised itself (the first PrefkitError, if any), not as an exception group."""
    try:
        async with asyncio.TaskGroup() as tasks:
            started = [tasks.create_task(aw) for aw in aws]
            if then is not None:
                for task in started:
                    then(await task)
    except BaseExceptionGroup as group_error:
        raise _first_prefkit_error(group_error) from None
    return [task.result() for task in started]


def _first_prefkit_error(group: BaseExceptionGroup) -> BaseException:
    """The error to show the user from a failed task group (a PrefkitError when there is one)."""
    flat: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(exc.exceptions)
        else:
            flat.append(exc)
    return next((e for e in flat if isinstance(e, PrefkitError)), flat[0])
