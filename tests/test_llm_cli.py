"""``prefkit llm usage`` and ``prefkit llm batches`` read the layer's ledger back."""

from __future__ import annotations

import json
import random

from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.pipelines.llm import LLMLayer, LLMRequest, register_offline
from pydantic import BaseModel


class Motto(BaseModel):
    motto: str


@register_offline(Motto)
def fake_motto(request: LLMRequest, rng: random.Random) -> Motto:
    return Motto(motto=f"motto {rng.randint(0, 99)}")


def run_offline(project, n: int, stage: str = "mottos") -> None:
    reqs = [LLMRequest(stage, f"m{i}", "writer", (("user", f"motto {i}"),), Motto) for i in range(n)]
    with LLMLayer(project.store, project.config.llm, backend="offline", progress=False) as layer:
        layer.run(reqs)


def test_llm_usage_reports_calls_and_cache_hits_per_stage(project):
    run_offline(project, 3)
    run_offline(project, 3, stage="again")
    result = CliRunner().invoke(cli, ["llm", "usage", "--project", str(project.root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    by_stage = {r["stage"]: r for r in data["usage"]}
    assert (by_stage["mottos"]["calls"], by_stage["again"]["cached"]) == (3, 3)
    assert data["cached_answers"] == 3


def test_llm_usage_table_and_empty_batches(project):
    run_offline(project, 2)
    runner = CliRunner()
    table = runner.invoke(cli, ["llm", "usage", "--project", str(project.root), "--stage", "mottos"])
    assert table.exit_code == 0 and "mottos" in table.output and "2 answers in the cache" in table.output
    batches = runner.invoke(cli, ["llm", "batches", "--open", "--project", str(project.root)])
    assert batches.exit_code == 0 and batches.output.strip() == "(none)"
