"""Group commits of the LLM layer's call records to the project store, off the event loop.

Answers arrive on the event loop; their cache, ledger and failure rows are written by one worker
thread (SQLite transactions and lock waits must never stall HTTP calls in flight). This module must
never decide what is written — the store's ``llm_commit`` does — only when and in which group.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from prefkit.curation.store import LLMCallRecord


class GroupCommitter:
    """Commits call records on one writer thread, grouping what finishes within ``window`` seconds.

    A transaction costs ~1 ms of CPU however few rows it holds; at a few hundred answers a second,
    one per answer would cost more CPU than the HTTP client itself. Grouping over a short window keeps
    each answer durable within ~``window`` of arriving (a kill loses at most that, plus the calls in
    flight) and never delays a call: a request's semaphore slot is released before it is persisted.
    """

    window = 0.05
    max_records = 256

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        executor: ThreadPoolExecutor,
        commit: Callable[[Sequence[LLMCallRecord]], None],
    ):
        self.loop, self.executor, self.commit = loop, executor, commit
        self.pending: list[tuple[list[LLMCallRecord], asyncio.Future]] = []
        self.running = False

    async def submit(self, records: list[LLMCallRecord]) -> None:
        future = self.loop.create_future()
        self.pending.append((records, future))
        if not self.running:
            self.running = True
            self.loop.create_task(self._drain())
        await future

    async def _drain(self) -> None:
        try:
            while self.pending:
                if len(self.pending) < self.max_records:
                    await asyncio.sleep(self.window)
                batch, self.pending = self.pending, []
                records = [r for recs, _ in batch for r in recs]
                try:
                    await self.loop.run_in_executor(self.executor, self.commit, records)
                except Exception as exc:  # every waiter sees the store error
                    for _, future in batch:
                        future.set_exception(exc)
                else:
                    for _, future in batch:
                        future.set_result(None)
        finally:
            self.running = False
