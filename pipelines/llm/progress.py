"""A progress bar per stage: calls done / failed / from cache, tokens and cost so far.

Drawn with tqdm on stderr only when asked for and stderr is a terminal; otherwise every method is a
cheap no-op, so logs and CI output stay clean. The bar must never affect results. It also holds the
stage's ``calls`` for the layer: runs sharing one stage (a streaming pipeline's) send a key once and
count it in the ledger for each of its requests, as the requests sharing a key in one run are, so
the ledger does not depend on the order the runs came in.
"""

from __future__ import annotations

import sys

from tqdm import tqdm


class StageProgress:
    def __init__(self, desc: str, total: int, enabled: bool):
        self.done = self.failed = self.cached = self.tokens = 0
        self.cost = 0.0
        self.calls: dict = {}  # cache key -> the future of that call's outcome (the layer's)
        self.bar = tqdm(
            total=total,
            desc=desc,
            unit="call",
            disable=not (enabled and sys.stderr.isatty()),
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.2,
        )

    def grow(self, n: int) -> None:
        """``n`` more calls to make (a bar shared by the runs of a streaming pipeline grows with them)."""
        self.bar.total += n

    def advance(self, ok: bool, cached: bool, tokens: int = 0, cost: float = 0.0, n: int = 1) -> None:
        self.done += n if ok else 0
        self.failed += 0 if ok else n
        self.cached += n if cached else 0
        self.tokens += tokens
        self.cost += cost
        if not self.bar.disable:
            self.bar.set_postfix_str(
                f"ok={self.done} failed={self.failed} cached={self.cached} tok={self.tokens} ${self.cost:.4f}",
                refresh=False,
            )
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()
