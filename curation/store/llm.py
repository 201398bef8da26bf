"""LLM-layer area of the project store: the response cache, the per-stage call ledger and batches.

* ``llm_cache`` — one row per completed answer, keyed by the content address of the request
  (``prefkit.pipelines.llm.keys.cache_key``): raw text, usage, cost and non-secret metadata (endpoint host,
  system fingerprint, offline flag). A key is written once; a rerun reads it instead of calling.
* ``llm_ledger`` — one row per (stage, item, key): ``done`` or ``failed``, with the call's usage; a
  failed call also appends a row to the core ``failures`` table in the same transaction.
* ``llm_forms`` — per endpoint (scheme, host, port, path) and model, the structured-output form the
  endpoint took last (``[llm] structured = "auto"`` starts there; a refusal forgets it).
* ``llm_batches`` — OpenAI Batch API jobs with the keys they carry, so a rerun resumes a batch still
  in flight instead of submitting it again.

Answers are committed as they arrive (the layer groups what finishes within ~50 ms into one
transaction), so a process killed at any moment loses at most the calls still in flight or
arrived in the last few tens of milliseconds. This area must never store an API key, a full
endpoint URL or request headers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from prefkit.curation.store.engine import StoreArea, from_row
from prefkit.schemas.common import utcnow
from sqlalchemy import case, func, select

_CHUNK = 500


@dataclass
class LLMCallRecord:
    """One finished call of the LLM layer, for every item (of one stage) that asked it."""

    stage: str
    items: Sequence[str]
    key: str
    model: str
    ok: bool
    text: str | None  # the answer, or the raw text of a failure
    error: str | None
    meta: dict[str, Any]  # non-secret metadata (endpoint host, fingerprint, offline)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """One answer of the response cache (``meta``: non-secret metadata: endpoint host, fingerprint, offline)."""

    key: str
    model: str
    stage: str
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float
    meta: dict[str, Any]
    created_at: str


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """The state of one (stage, item, key) call: ``done`` or ``failed``, with its usage."""

    stage: str
    item: str
    key: str
    model: str
    status: str
    error: str | None
    attempts: int
    from_cache: bool
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float
    updated_at: str


@dataclass(frozen=True, slots=True)
class StageUsage:
    """Per stage and model: calls made, answers from the cache, failures, tokens and cost."""

    stage: str
    model: str
    calls: int
    cached: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


@dataclass(frozen=True, slots=True)
class StructuredForm:
    """The structured-output form ``endpoint`` took for ``model`` (json_schema, json_object_schema, json_mode)."""

    endpoint: str
    model: str
    form: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class LLMBatch:
    """A Batch API job and the cache keys it carries."""

    batch_id: str
    stage: str
    status: str
    input_file_id: str
    output_file_id: str | None
    endpoint: str | None  # the endpoint's host (None: a backend without one)
    created_at: str
    updated_at: str
    keys: list[str]


class LLM(StoreArea):
    """Reads and writes of the LLM layer (``store.llm``)."""

    # -- cache ------------------------------------------------------------------------------------
    def cache_get(self, keys: Iterable[str]) -> dict[str, CachedAnswer]:
        """Cached answers for ``keys`` (missing keys are absent from the result)."""
        t = self.t["llm_cache"]
        keys = sorted(set(keys))
        out: dict[str, CachedAnswer] = {}
        with self.read() as conn:
            for start in range(0, len(keys), _CHUNK):
                for row in conn.execute(
                    select(t).where(t.c.key.in_(keys[start : start + _CHUNK]))
                ).mappings():
                    out[row["key"]] = from_row(CachedAnswer, row)
        return out

    def cached_keys(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` have a cached answer (reads the keys only)."""
        t = self.t["llm_cache"]
        keys = sorted(set(keys))
        out: set[str] = set()
        with self.read() as conn:
            for start in range(0, len(keys), _CHUNK):
                out |= {
                    r[0]
                    for r in conn.execute(select(t.c.key).where(t.c.key.in_(keys[start : start + _CHUNK])))
                }
        return out

    def commit(self, records: Sequence[LLMCallRecord]) -> None:
        """Record finished calls in one transaction: cache rows for answers (a key already cached is
        kept: first writer wins), ``done``/``failed`` ledger rows (a retried item's row is updated and
        its ``attempts`` counted) and a core ``failures`` row per failed item."""
        now = utcnow()
        cache, ledger, failures = [], [], []
        for r in records:
            usage = {
                "model": r.model,
                "prompt_tokens": r.prompt_tokens,
                "completion_tokens": r.completion_tokens,
                "cached_tokens": r.cached_tokens,
                "cost_usd": r.cost_usd,
            }
            if r.ok:
                cache.append(
                    {
                        "key": r.key,
                        "stage": r.stage,
                        "text": r.text,
                        "meta_json": self.dumps(r.meta),
                        "created_at": now,
                        **usage,
                    }
                )
            else:
                failures += [
                    {"stage": r.stage, "item": i, "error": r.error, "raw": r.text, "created_at": now}
                    for i in r.items
                ]
            ledger += [
                {
                    "stage": r.stage,
                    "item": i,
                    "key": r.key,
                    "status": "done" if r.ok else "failed",
                    "error": r.error,
                    "attempts": 1,
                    "from_cache": False,
                    "updated_at": now,
                    **usage,
                }
                for i in r.items
            ]
        with self.write() as conn:
            if cache:
                conn.execute(
                    self.insert_stmt("llm_cache").on_conflict_do_nothing(index_elements=["key"]), cache
                )
            if ledger:
                conn.execute(self._ledger_upsert_stmt(), ledger)
            if failures:
                conn.execute(self.t["failures"].insert(), failures)

    def _ledger_upsert_stmt(self):
        stmt = self.insert_stmt("llm_ledger")
        l, new = self.t["llm_ledger"], stmt.excluded  # noqa: E741
        updated = {
            c: new[c]
            for c in """model status error from_cache updated_at prompt_tokens completion_tokens
                cached_tokens cost_usd""".split()
        }
        return stmt.on_conflict_do_update(
            index_elements=["stage", "item", "key"], set_={**updated, "attempts": l.c.attempts + 1}
        )

    def mark_cached(self, stage: str, answered: Iterable[tuple[str, str, str]]) -> int:
        """Ledger rows for (item, key, model) answered from the cache that the ledger lacks; returns how many."""
        l = self.t["llm_ledger"]  # noqa: E741
        model_of = {(item, key): model for item, key, model in answered}
        pairs = set(model_of)
        if not pairs:
            return 0
        keys = sorted({k for _, k in pairs})
        with self.read() as conn:
            have = set()
            for start in range(0, len(keys), _CHUNK):
                q = select(l.c.item, l.c.key, l.c.status).where(
                    l.c.stage == stage, l.c.key.in_(keys[start : start + _CHUNK])
                )
                have |= {(r.item, r.key) for r in conn.execute(q) if r.status == "done"}
        missing = sorted(pairs - have)
        if missing:
            now = utcnow()
            rows = [
                {
                    "stage": stage,
                    "item": item,
                    "key": key,
                    "model": model_of[(item, key)],
                    "status": "done",
                    "error": None,
                    "attempts": 1,
                    "from_cache": True,
                    "updated_at": now,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "cached_tokens": 0,
                    "cost_usd": 0.0,
                }
                for item, key in missing
            ]
            with self.write() as conn:
                conn.execute(self._ledger_upsert_stmt(), rows)
        return len(missing)

    # -- ledger reads -----------------------------------------------------------------------------
    def ledger(self, stage: str | None = None) -> list[LedgerRow]:
        l = self.t["llm_ledger"]  # noqa: E741
        q = select(l).order_by(l.c.stage, l.c.item, l.c.key)
        if stage is not None:
            q = q.where(l.c.stage == stage)
        return [LedgerRow(**r) for r in self.fetch(q)]

    def usage(self) -> list[StageUsage]:
        """Per stage and model: calls made, answers from the cache, failures, tokens and cost."""
        l = self.t["llm_ledger"]  # noqa: E741
        q = (
            select(
                l.c.stage,
                l.c.model,
                func.sum(case(((l.c.status == "done") & ~l.c.from_cache, 1), else_=0)).label("calls"),
                func.sum(case((l.c.from_cache, 1), else_=0)).label("cached"),
                func.sum(case((l.c.status == "failed", 1), else_=0)).label("failed"),
                func.sum(l.c.prompt_tokens).label("prompt_tokens"),
                func.sum(l.c.completion_tokens).label("completion_tokens"),
                func.sum(l.c.cost_usd).label("cost_usd"),
            )
            .group_by(l.c.stage, l.c.model)
            .order_by(l.c.stage, l.c.model)
        )
        return [StageUsage(**r) for r in self.fetch(q)]

    # -- structured-output forms ------------------------------------------------------------------
    def forms(self) -> list[StructuredForm]:
        t = self.t["llm_forms"]
        rows = self.fetch(select(t).order_by(t.c.endpoint, t.c.model))
        return [StructuredForm(**r) for r in rows]

    def remember_form(self, endpoint: str, model: str, form: str | None) -> None:
        """Remember the form ``endpoint`` took for ``model``; ``None`` forgets it."""
        t = self.t["llm_forms"]
        with self.write() as conn:
            conn.execute(t.delete().where(t.c.endpoint == endpoint, t.c.model == model))
            if form is not None:
                conn.execute(
                    t.insert(), {"endpoint": endpoint, "model": model, "form": form, "updated_at": utcnow()}
                )

    # -- batches ----------------------------------------------------------------------------------
    def batch_save(
        self, batch_id: str, stage: str, input_file_id: str, keys: Sequence[str], host: str | None
    ) -> LLMBatch:
        """Record a submitted batch; returns it as :meth:`batches` will list it."""
        now = utcnow()
        with self.write() as conn:
            conn.execute(
                self.t["llm_batches"].insert(),
                {
                    "batch_id": batch_id,
                    "stage": stage,
                    "status": "submitted",
                    "input_file_id": input_file_id,
                    "output_file_id": None,
                    "keys_json": self.dumps(sorted(keys)),
                    "endpoint": host,
                    "created_at": now,
                    "updated_at": now,
                },
            )
        return LLMBatch(batch_id, stage, "submitted", input_file_id, None, host, now, now, sorted(keys))

    def batch_update(self, batch_id: str, status: str, output_file_id: str | None = None) -> None:
        b = self.t["llm_batches"]
        with self.write() as conn:
            conn.execute(
                b.update()
                .where(b.c.batch_id == batch_id)
                .values(status=status, output_file_id=output_file_id, updated_at=utcnow())
            )

    def batches(self, stage: str | None = None, open_only: bool = False) -> list[LLMBatch]:
        """Batches (oldest first); ``open_only``: those whose results are not collected yet."""
        b = self.t["llm_batches"]
        q = select(b).order_by(b.c.created_at, b.c.batch_id)
        if stage is not None:
            q = q.where(b.c.stage == stage)
        if open_only:
            q = q.where(b.c.status != "collected")
        rows = self.fetch(q)
        return [
            LLMBatch(**{c: r[c] for c in r if c != "keys_json"}, keys=self.loads(r["keys_json"]))
            for r in rows
        ]
