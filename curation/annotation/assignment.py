"""Assignment policy: how big a queue chunk is, how many gold items go in it and where.

Queues are pulled: when an annotator has nothing open of a kind, the store assigns a chunk of tasks
they never had, regular tasks while fewer than ``overlap`` distinct annotators hold them (the ones
closest to complete first) and gold tasks, which go to every annotator once, at the batch's gold rate.
This module decides the policy (chunk size, gold rate); the assignments area
(:mod:`prefkit.curation.store.assignments`) does the SQL and places the gold items inside a chunk by a
deterministic shuffle (``interleave``), so an annotator cannot tell them apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prefkit.curation.project import Project

DEFAULT_CHUNK = 10


@dataclass(frozen=True)
class QueuePolicy:
    """Chunk size and gold rate for one (project, batch or kind)."""

    chunk: int = DEFAULT_CHUNK
    gold_rate: float = 0.1

    @property
    def n_gold(self) -> int:
        """Gold tasks per chunk: the rate rounded, at least one when the rate is positive."""
        if self.gold_rate <= 0:
            return 0
        return max(1, round(self.chunk * self.gold_rate))


def gold_rate_key(kind: str) -> str:
    return f"annotation.gold_rate.{kind}"


def policy_for(project: Project, kind: str) -> QueuePolicy:
    """The project's policy for ``kind``: config ``[annotation]`` with a per-kind gold rate override
    set by ``prefkit tasks create --gold-rate``."""
    cfg = project.config.annotation
    rate = project.store.get_meta(gold_rate_key(kind))
    return QueuePolicy(chunk=cfg.queue_chunk, gold_rate=float(rate) if rate is not None else cfg.gold_rate)
