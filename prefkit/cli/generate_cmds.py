"""``prefkit generate``: synthesize a CUPID-style benchmark into the project, end to end or by stage."""

from __future__ import annotations

import functools

import click

from prefkit.cli.common import echo_json, echo_table, json_option, project_option

STAGE_HELP = {
    "personas": "Sample balanced attributes and write the personas.",
    "factors": "Write each persona's context factors and contextual preferences (contrastive pair last).",
    "sessions": "Place the chronological session plan by code and write each session's story and request.",
    "checklists": "Decompose every distinct preference into at most 4 yes/no checklist items.",
    "dialogues": "Simulate each session between the assistant and the user-simulator models.",
    "instances": "Build the consistent, contrastive and changing CUPID instances of each persona.",
}


def generation_options(fn):
    """Flags shared by ``prefkit generate`` and every stage command."""
    options = [
        click.option(
            "--personas", "-n", type=int, help="Personas in the batch (default: [generation] personas)."
        ),
        click.option(
            "--backend",
            type=click.Choice(["offline", "openai"]),
            help="LLM backend (default: [llm] backend).",
        ),
        click.option("--seed", type=int, help="Seed for sampling, placement and the offline backend."),
        click.option("--max-turns", type=int, help="Assistant replies per dialogue at most (default 16)."),
        click.option(
            "--seed-personas",
            type=click.Path(dir_okay=False, exists=True),
            help="JSONL of seed persona descriptions.",
        ),
        click.option(
            "--seed-licence", help="Licence of the seed personas, e.g. 'CC BY-NC-SA 4.0' (PersonaHub)."
        ),
        json_option,
        project_option,
    ]
    return functools.reduce(lambda f, opt: opt(f), reversed(options), fn)


def _run(project, stages, as_json: bool, **flags) -> None:
    from pipelines.generation.run import GenerationConfig, run_generation
    from pipelines.llm import LLMLayer

    backend = flags.pop("backend") or project.config["llm"].get("backend", "offline")
    cfg = GenerationConfig.from_config(project.config["generation"], **flags)
    with LLMLayer(
        project.store, llm_config=project.config["llm"], backend=backend, seed=cfg.seed, progress=not as_json
    ) as layer:
        reports = run_generation(project.store, layer, cfg, stages)
    rows = [r.as_dict() for r in reports]
    if as_json:
        echo_json({"backend": backend, "stages": rows, "dropped": project.store.dropped_personas()})
        return
    echo_table(rows, ["stage", "written", "skipped", "dropped"])
    for pid, why in project.store.dropped_personas().items():
        click.echo(f"dropped {pid} at {why['stage']}: {why['reason']}")
    click.echo(f"backend {backend}; {project.store.count('instances')} instances in the project")


@click.group(invoke_without_command=True)
@click.option("--estimate", is_flag=True, help="Price the run with the configured models; make no call.")
@generation_options
@click.pass_context
def generate(ctx: click.Context, project, estimate: bool, as_json: bool, **flags) -> None:
    """Synthesize a CUPID-style benchmark: every stage, or one stage with a subcommand.

    A rerun skips what the project already holds. Stage subcommands take the same flags.

    Example: prefkit generate --personas 4 --backend offline --seed 0
    """
    if ctx.invoked_subcommand is not None:
        return
    if estimate:
        from pipelines.generation.run import GenerationConfig, estimate_run

        flags.pop("backend")
        cfg = GenerationConfig.from_config(project.config["generation"], **flags)
        result = estimate_run(project.store, project.config["llm"], cfg)
        if as_json:
            echo_json(result)
            return
        click.echo(
            f"estimate for {result['personas']} personas (offline dry run of {result['sampled_personas']}, scaled):"
        )
        echo_table([{"model": m, **v} for m, v in result["per_model"].items()])
        click.echo(
            f"total: {result['calls']} calls, {result['prompt_tokens']} prompt + "
            f"{result['completion_tokens']} completion tokens, ${result['cost_usd']:.4f}"
        )
        if result["unpriced"]:
            click.echo(
                f"no price configured for: {', '.join(result['unpriced'])} (add them under [llm.costs])"
            )
        return
    from pipelines.generation.run import STAGES

    _run(project, STAGES, as_json, **flags)


def _stage_command(stage: str) -> click.Command:
    def command(project, as_json: bool, **flags) -> None:
        _run(project, (stage,), as_json, **flags)

    command.__doc__ = f"{STAGE_HELP[stage]}\n\n    Example: prefkit generate {stage} --backend offline\n    "
    return generate.command(stage)(generation_options(command))


for _stage in STAGE_HELP:
    _stage_command(_stage)
