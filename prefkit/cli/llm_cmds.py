"""``prefkit llm``: what the LLM layer spent and where its Batch API jobs stand (read-only)."""

from __future__ import annotations

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, json_option, plain
from prefkit.curation.project import Project
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.llm.config import with_models


@click.group()
def llm() -> None:
    """The LLM layer's ledger: calls, cache hits, failures, tokens, cost, batches."""


@llm.command()
@click.option("--stage", help="Only this stage (e.g. personas).")
@project_option
@json_option
def usage(project: Project, stage: str | None, as_json: bool) -> None:
    """Calls made, answers from the cache, failures, tokens and cost, per stage and model, and the
    structured-output form each endpoint took for each model.

    Example: prefkit llm usage --project my-bench
    """
    rows = [plain(r) for r in project.store.llm.usage() if stage is None or r.stage == stage]
    for row in rows:
        row["cost_usd"] = round(row["cost_usd"] or 0.0, 6)
    forms = [plain(f) for f in project.store.llm.forms()]
    if as_json:
        echo_json(
            {"usage": rows, "cached_answers": project.store.count("llm_cache"), "structured_forms": forms}
        )
        return
    total = sum(r["cost_usd"] for r in rows)
    for row in rows:
        row["cost_usd"] = f"{row['cost_usd']:.6f}"
    echo_table(
        rows,
        ["stage", "model", "calls", "cached", "failed", "prompt_tokens", "completion_tokens", "cost_usd"],
    )
    click.echo(f"total ${total:.6f}; {project.store.count('llm_cache')} answers in the cache")
    for f in forms:
        click.echo(f"structured output at {f['endpoint']} for {f['model']}: {f['form']}")


@llm.command()
@click.option("--open", "open_only", is_flag=True, help="Only batches whose results are not collected yet.")
@project_option
@json_option
def batches(project: Project, open_only: bool, as_json: bool) -> None:
    """OpenAI Batch API jobs submitted by `generate --batch`-style runs; open ones resume on rerun.

    Example: prefkit llm batches --open --project my-bench
    """
    rows = [
        {**{k: v for k, v in plain(b).items() if k != "keys"}, "requests": len(b.keys)}
        for b in project.store.llm.batches(open_only=open_only)
    ]
    echo_table(rows, ["batch_id", "stage", "status", "requests", "endpoint", "created_at"], as_json=as_json)


def llm_layer(project: Project, backend, seed, as_json, model=None, judge_model=None, writer_model=None):
    """The LLM layer a command calls through: ``--backend`` (default ``[llm] backend``), ``--seed``,
    the project's environment, progress on stderr unless ``--json``; ``model``, ``judge_model`` and
    ``writer_model`` stand in for the ``assistant``, ``judge`` and ``writer`` roles' models."""
    cfg = with_models(project.config.llm, assistant=model, judge=judge_model, writer=writer_model)
    backend = backend or project.config.llm.backend
    return LLMLayer(
        project.store, llm_config=cfg, backend=backend, seed=seed, progress=not as_json, env=project.env
    )
