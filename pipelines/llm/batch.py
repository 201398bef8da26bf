"""OpenAI Batch API mode of the LLM layer (``layer.run(requests, batch=True)``).

The distinct uncached requests are written as JSONL (``custom_id`` = the request's cache key), uploaded
through the Files API and submitted as one batch; the batch id and its keys are persisted in the
project store *before* waiting, so a rerun after an interruption (Ctrl-C, ``kill -9``, or
``batch_wait_s`` running out) resumes polling that batch instead of paying for it again. Output lines
are joined on ``custom_id``, validated like live answers (a schema-invalid one gets the live repair
retry) and stored in the same cache and ledger; a request missing from the output becomes a failure.
Batch answers are priced at half the list price (the Batch API discount).

This module must never submit a key twice while a batch carrying it is still open.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, cast

from prefkit.pipelines.llm.progress import StageProgress
from prefkit.pipelines.llm.types import BatchBackend, CallFailed, Usage
from prefkit.schemas.common import PrefkitError

if TYPE_CHECKING:
    from prefkit.curation.store import LLMBatch
    from prefkit.pipelines.llm.layer import CallOutcome, LLMLayer, Planned

TERMINAL = ("completed", "failed", "expired", "cancelled")
BATCH_DISCOUNT = 0.5


class BatchPending(PrefkitError):
    """A batch is still running when the wait ran out; rerunning the same command resumes it."""


async def run_batch(
    layer: LLMLayer, groups: dict[str, list[Planned]], progress: StageProgress
) -> dict[str, CallOutcome]:
    results: dict[str, CallOutcome] = {}
    for row in layer.store.llm.batches(open_only=True):
        if set(row.keys) & groups.keys():
            results.update(await _collect(layer, row, groups, progress))
    remaining = {k: g for k, g in groups.items() if k not in results}
    if remaining:
        row = await _submit(layer, remaining)
        results.update(await _collect(layer, row, groups, progress))
    return results


def _batch_backend(layer: LLMLayer) -> BatchBackend:
    """The layer's backend as a batch backend (the layer sends groups here only when it is one)."""
    return cast(BatchBackend, layer.backend)


async def _submit(layer: LLMLayer, groups: dict[str, list[Planned]]) -> LLMBatch:
    backend = _batch_backend(layer)
    lines = [
        {
            "custom_id": key,
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": backend.batch_body(group[0].request, group[0].model, layer.seed),
        }
        for key, group in groups.items()
    ]
    stage = "+".join(sorted({p.request.stage for g in groups.values() for p in g}))
    batch_id, upload_id = await backend.submit_batch(lines, stage)
    return layer.store.llm.batch_save(batch_id, stage, upload_id, list(groups), backend.host)


async def _wait(layer: LLMLayer, batch_id: str, stage: str):
    settings = layer.settings
    deadline = time.monotonic() + settings.batch_wait_s
    while True:
        batch = await _batch_backend(layer).batch_state(batch_id)
        if batch.status in TERMINAL:
            return batch
        if time.monotonic() + settings.batch_poll_s > deadline:
            raise BatchPending(
                f"batch {batch_id} ({stage}) is still {batch.status}; rerun the same command to resume it"
            )
        await asyncio.sleep(settings.batch_poll_s)


async def _collect(
    layer: LLMLayer, row: LLMBatch, groups: dict[str, list[Planned]], progress: StageProgress
) -> dict[str, CallOutcome]:
    batch = await _wait(layer, row.batch_id, row.stage)
    lines = await _batch_backend(layer).batch_lines(batch.output_file_id)
    errors = await _batch_backend(layer).batch_lines(batch.error_file_id)
    lines.update({k: v for k, v in errors.items() if k not in lines})
    mine = {key: groups[key] for key in row.keys if key in groups}
    results = await layer.run_groups(
        mine, progress, lambda key, group: _outcome(layer, batch, lines.get(key), group[0])
    )
    layer.store.llm.batch_update(row.batch_id, "collected", batch.output_file_id)
    return results


async def _outcome(layer: LLMLayer, batch, line: dict | None, planned: Planned) -> CallOutcome:
    if line is None:
        return layer.failed_outcome(
            planned,
            f"batch {batch.id} ended {batch.status} without an answer for this request",
            None,
            Usage(),
        )
    try:
        first = _batch_backend(layer).answer_from_batch_line(line)
    except CallFailed as exc:
        return layer.failed_outcome(planned, str(exc), exc.raw, Usage())
    outcome = await layer.attempt(planned, first=first)
    outcome.cost -= BATCH_DISCOUNT * layer.cost_of(planned.model, first[1])
    return outcome
