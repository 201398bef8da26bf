"""LLM-layer area of the project store: the response cache, the per-stage call ledger and batches.

* ``llm_cache`` — one row per completed answer, keyed by the content address of the request
  (``pipelines.llm.keys.cache_key``): raw text, usage, cost and non-secret metadata (endpoint host,
  system fingerprint, offline flag). A key is written once; a rerun reads it instead of calling.
* ``llm_ledger`` — one row per (stage, item, key): ``done`` or ``failed``, with the call's usage; a
  failed call also appends a row to the core ``failures`` table in the same transaction.
* ``llm_batches`` — OpenAI Batch API jobs with the keys they carry, so a rerun resumes a batch still
  in flight instead of submitting it again.

Each answer is committed in its own short transaction as soon as it arrives, so a process killed at
any moment loses at most the calls still in flight. This mixin must never store an API key, a full
endpoint URL or request headers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import case, func, select

from curation.store import StoreCore
from schemas.common import utcnow

_CHUNK = 500


class LLMStore(StoreCore):
    """Reads and writes of the LLM layer."""

    # -- cache ------------------------------------------------------------------------------------
    def llm_cache_get(self, keys: Iterable[str], columns: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        """Cached answers for ``keys`` (missing keys are absent from the result)."""
        t = self.t["llm_cache"]
        cols = [t.c[c] for c in columns] if columns else list(t.c)
        if t.c.key not in cols:
            cols.insert(0, t.c.key)
        keys = sorted(set(keys))
        out: dict[str, dict[str, Any]] = {}
        with self.read() as conn:
            for start in range(0, len(keys), _CHUNK):
                for row in conn.execute(select(*cols).where(t.c.key.in_(keys[start : start + _CHUNK]))).mappings():
                    out[row["key"]] = dict(row)
        return out

    def llm_store_answer(self, stage: str, items: Sequence[str], entry: dict[str, Any]) -> None:
        """Record one completed call: the cache row (first writer wins) and ``done`` ledger rows."""
        t = self.t["llm_cache"]
        now = utcnow()
        with self.write() as conn:
            if conn.execute(select(t.c.key).where(t.c.key == entry["key"])).first() is None:
                conn.execute(t.insert(), {**entry, "stage": stage, "created_at": now})
            usage = {k: entry[k] for k in ("model", "prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd")}
            self._ledger_upsert(conn, stage, items, entry["key"], "done", None, usage, now)

    def llm_store_failure(
        self, stage: str, items: Sequence[str], key: str, error: str, raw: str | None, usage: dict[str, Any]
    ) -> None:
        """Record a failed call: a core ``failures`` row per item and ``failed`` ledger rows, together.

        ``usage`` holds ``model`` and the tokens/cost spent on the failed attempts."""
        now = utcnow()
        with self.write() as conn:
            conn.execute(
                self.t["failures"].insert(),
                [{"stage": stage, "item": item, "error": error, "raw": raw, "created_at": now} for item in items],
            )
            self._ledger_upsert(conn, stage, items, key, "failed", error, usage, now)

    def llm_mark_cached(self, stage: str, answered: Iterable[tuple[str, str, str]]) -> int:
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
                q = select(l.c.item, l.c.key, l.c.status).where(l.c.stage == stage, l.c.key.in_(keys[start : start + _CHUNK]))
                have |= {(r.item, r.key) for r in conn.execute(q) if r.status == "done"}
        missing = sorted(pairs - have)
        if missing:
            zero = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "cost_usd": 0.0}
            with self.write() as conn:
                for item, key in missing:
                    usage = {**zero, "model": model_of[(item, key)]}
                    self._ledger_upsert(conn, stage, [item], key, "done", None, usage, utcnow(), from_cache=True)
        return len(missing)

    def _ledger_upsert(self, conn, stage, items, key, status, error, usage, now, from_cache=False) -> None:
        l = self.t["llm_ledger"]  # noqa: E741
        for item in items:
            where = (l.c.stage == stage, l.c.item == item, l.c.key == key)
            row = conn.execute(select(l.c.attempts).where(*where)).first()
            values = {"status": status, "error": error, "from_cache": from_cache, "updated_at": now, **usage}
            if row is None:
                conn.execute(l.insert(), {"stage": stage, "item": item, "key": key, "attempts": 1, **values})
            else:
                conn.execute(l.update().where(*where).values(attempts=row[0] + 1, **values))

    # -- ledger reads -----------------------------------------------------------------------------
    def llm_ledger(self, stage: str | None = None) -> list[dict[str, Any]]:
        l = self.t["llm_ledger"]  # noqa: E741
        q = select(l).order_by(l.c.stage, l.c.item, l.c.key)
        if stage is not None:
            q = q.where(l.c.stage == stage)
        with self.read() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def llm_usage(self) -> list[dict[str, Any]]:
        """Per stage and model: calls made, answers from the cache, failures, tokens and cost."""
        l = self.t["llm_ledger"]  # noqa: E741
        q = (
            select(
                l.c.stage, l.c.model,
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
        with self.read() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    # -- batches ----------------------------------------------------------------------------------
    def llm_batch_save(self, batch_id: str, stage: str, input_file_id: str, keys: Sequence[str], host: str) -> None:
        now = utcnow()
        with self.write() as conn:
            conn.execute(self.t["llm_batches"].insert(), {
                "batch_id": batch_id, "stage": stage, "status": "submitted", "input_file_id": input_file_id,
                "output_file_id": None, "keys_json": self.dumps(sorted(keys)), "endpoint": host,
                "created_at": now, "updated_at": now,
            })

    def llm_batch_update(self, batch_id: str, status: str, output_file_id: str | None = None) -> None:
        b = self.t["llm_batches"]
        with self.write() as conn:
            conn.execute(b.update().where(b.c.batch_id == batch_id).values(
                status=status, output_file_id=output_file_id, updated_at=utcnow()))

    def llm_batches(self, stage: str | None = None, open_only: bool = False) -> list[dict[str, Any]]:
        """Batches (oldest first); ``open_only``: those whose results are not collected yet."""
        b = self.t["llm_batches"]
        q = select(b).order_by(b.c.created_at, b.c.batch_id)
        if stage is not None:
            q = q.where(b.c.stage == stage)
        if open_only:
            q = q.where(b.c.status != "collected")
        with self.read() as conn:
            rows = [dict(r) for r in conn.execute(q).mappings()]
        for row in rows:
            row["keys"] = self.loads(row.pop("keys_json"))
        return rows
