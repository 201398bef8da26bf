"""Client-side request and token rate limits (token buckets) shared by every call of one layer.

A bucket holds up to one second's worth of its per-minute rate (at least one unit), refills
continuously, and a call waits until its cost fits. Token costs are estimated before the call and
settled with the real usage afterwards (the bucket may go negative, delaying later calls). The
limiter never blocks the event loop: it only ever ``await asyncio.sleep``. Concurrency (how many
calls are open at once) is the layer's :class:`Pool`, shared by every run of the layer.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import time

#: Which waiting call gets a freed slot of the pool first: the lowest value, then the earliest asked.
#: A pipeline sets it per task (generation: the persona's place in the run, so the oldest persona is
#: served first and finishes first); asyncio copies it into every task a task starts.
PRIORITY: contextvars.ContextVar[int] = contextvars.ContextVar("prefkit_llm_priority", default=0)


class Pool:
    """At most ``size`` calls open at once; a freed slot goes to the waiter of lowest :data:`PRIORITY`."""

    def __init__(self, size: int):
        self.free = size
        self.waiting: list[tuple[int, int, asyncio.Future]] = []
        self.order = itertools.count()

    async def __aenter__(self) -> None:
        if self.free > 0 and not self.waiting:
            self.free -= 1
            return
        turn = asyncio.get_running_loop().create_future()
        heapq.heappush(self.waiting, (PRIORITY.get(), next(self.order), turn))
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # handed a slot while being cancelled: pass it on
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        while self.waiting:
            turn = heapq.heappop(self.waiting)[2]
            if not turn.done():  # a cancelled waiter stays in the heap until here
                turn.set_result(None)
                return
        self.free += 1


class TokenBucket:
    """``per_minute`` units per minute; ``per_minute <= 0`` means unlimited."""

    def __init__(self, per_minute: float, clock=time.monotonic):
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.clock = clock
        self.stamp = clock()

    @property
    def unlimited(self) -> bool:
        return self.rate <= 0

    def _refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_time(self, amount: float) -> float:
        """Seconds until ``amount`` fits (0 = now). A cost above capacity waits for a full bucket."""
        if self.unlimited:
            return 0.0
        self._refill()
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float) -> None:
        if not self.unlimited:
            self._refill()
            self.level -= amount

    def settle(self, estimated: float, actual: float) -> None:
        """Correct an earlier ``take(estimated)`` once the real cost is known."""
        if not self.unlimited:
            self.level -= actual - estimated


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits together."""

    def __init__(self, requests_per_minute: float = 0, tokens_per_minute: float = 0):
        self.requests = TokenBucket(requests_per_minute)
        self.tokens = TokenBucket(tokens_per_minute)

    @property
    def unlimited(self) -> bool:
        return self.requests.unlimited and self.tokens.unlimited

    async def acquire(self, tokens: int) -> None:
        if self.unlimited:
            return
        while True:
            delay = max(self.requests.wait_time(1), self.tokens.wait_time(tokens))
            if delay <= 0:
                # No await between the check and the take: the event loop makes this atomic.
                self.requests.take(1)
                self.tokens.take(tokens)
                return
            await asyncio.sleep(delay)

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        self.tokens.settle(estimated_tokens, actual_tokens)
