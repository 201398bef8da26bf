"""``prefkit suggest``: suggestions for annotators through the LLM layer (never labels)."""

from __future__ import annotations

import click
from prefkit.cli.args import KindChoice, project_option
from prefkit.cli.common import echo_json, echo_table, flag, json_option
from prefkit.cli.llm_cmds import llm_layer
from prefkit.cli.types import ANY_INT, POSITIVE_INT
from prefkit.curation.project import Project
from prefkit.pipelines.suggestions import estimate as price
from prefkit.pipelines.suggestions import suggest as run_suggest


@click.command("suggest")
@click.option("--kind", type=KindChoice(), help="Task kind to suggest labels for (required unless --runs).")
@click.option("--model", help="Model that suggests (the `judge` role; default: [llm.models] judge).")
@click.option(
    "--backend",
    type=click.Choice(["offline", "openai"]),
    help="LLM backend (default: [llm] backend); offline suggestions are marked offline.",
)
@flag("--judge", "memory_verify: ask a judge as well as the evidence check (both must find support).")
@click.option("--limit", type=POSITIVE_INT, help="At most this many tasks in this run.")
@click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Seed (offline backend, cache key).")
@click.option("--estimate", is_flag=True, help="Price the run and stop; make no call.")
@click.option("--runs", is_flag=True, help="List the suggestion runs instead.")
@json_option
@project_option
def suggest(project: Project, kind, model, backend, judge, limit, seed, estimate, runs, as_json) -> None:
    """Suggest a label for every task of KIND, shown to annotators on the assisted arm only.

    preference_match: fully / partially / not covered. preference_expressed: per checklist item,
    expressed or not with the evidence turns. memory_verify: per memory, supported or not (its quote
    found by the evidence check; --judge adds a judge). task_qc: the checks that failed. The price is
    printed before any call; a rerun resumes the run. Suggestions are stored apart from labels and
    never count as labels or votes; `prefkit agreement --assist` measures what they do.

    Example: prefkit suggest --kind preference_match --backend openai --model gpt-4o-mini
    """
    if runs:
        rows = [
            {
                "run_id": r.run_id,
                "kind": r.kind,
                "model": r.model,
                "backend": r.backend,
                "offline": r.offline,
                "prompt_hash": r.prompt_hash,
                "suggestions": n,
                "created_at": r.created_at,
            }
            for r, n in project.store.suggestions.runs(kind)
        ]
        echo_json(rows) if as_json else echo_table(rows)
        return
    if kind is None:
        raise click.UsageError("--kind is required (or --runs to list the runs)")
    with llm_layer(project, backend, seed, as_json, judge_model=model) as layer:
        est = price(project.store, layer, kind, judge, limit).as_dict()
        if not as_json:
            click.echo(
                f"estimate: {est['calls']} calls ({est['cached']} cached), {est['prompt_tokens']} prompt + "
                f"{est['completion_tokens']} completion tokens, ${est['cost_usd']:.4f}"
            )
        if estimate:
            if as_json:
                echo_json({"estimate": est})
            return
        report = run_suggest(project.store, layer, kind, judge, limit)
    if as_json:
        echo_json({"estimate": est, **report.as_dict()})
        return
    click.echo(
        f"run {report.run_id} ({report.model}, {report.backend}): {report.suggested} new suggestion(s), "
        f"{report.done_before} made before, {len(report.failed)} failed, {report.tasks} {kind} tasks"
    )
    if report.offline:
        click.echo("offline backend: deterministic stand-in suggestions, marked offline")
    for line in report.failed[:10]:
        click.echo(f"  failed {line}")
    if report.failed:
        click.echo("run the same command again to retry the failed ones")
