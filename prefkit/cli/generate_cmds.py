"""``prefkit generate``: synthesize a CUPID-style benchmark into the project, end to end or by stage."""

from __future__ import annotations

import functools
import sys

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, flag, json_option
from prefkit.cli.types import ANY_INT, POSITIVE_INT, SafePath
from prefkit.curation.project import Project
from prefkit.curation.quality.verification import silent_sessions
from prefkit.pipelines.generation import STAGES, run
from prefkit.pipelines.generation.run import COUNTED, estimate_run, generation_settings

#: Exit status of a run in which model calls failed: the project holds everything that succeeded and
#: the same command resumes (distinct from 1, an error that stopped the run, and 2, a usage error).
EXIT_CALLS_FAILED = 3


def generation_options(fn):
    """Flags shared by ``prefkit generate`` and every stage command."""
    options = [
        click.option(
            "--personas",
            "-n",
            type=POSITIVE_INT,
            help="Personas in the batch (default: [generation] personas).",
        ),
        click.option(
            "--backend",
            type=click.Choice(["offline", "openai"]),
            help="LLM backend (default: [llm] backend).",
        ),
        click.option("--seed", type=ANY_INT, help="Seed for sampling, placement and the offline backend."),
        click.option(
            "--max-turns", type=POSITIVE_INT, help="Assistant replies per dialogue at most (default 16)."
        ),
        click.option(
            "--batch",
            is_flag=True,
            default=None,
            help="Send each round of calls through the OpenAI Batch API (cheaper, slower; resumable).",
        ),
        click.option(
            "--seed-personas",
            type=SafePath(dir_okay=False, exists=True),
            help="JSONL of seed persona descriptions.",
        ),
        click.option(
            "--seed-licence", help="Licence of the seed personas, e.g. 'CC BY-NC-SA 4.0' (PersonaHub)."
        ),
        json_option,
        project_option,
    ]
    return functools.reduce(lambda f, opt: opt(f), reversed(options), fn)


def _run(project: Project, stages, as_json: bool, **flags) -> None:
    backend = flags.pop("backend") or project.config.llm.backend
    reports = run.generate(project, stages, backend=backend, progress=not as_json, **flags)
    rows = [r.as_dict() for r in reports]
    failed = {r["stage"]: r["failed"] for r in rows if r["failed"]}
    if as_json:
        echo_json(
            {
                "backend": backend,
                "stages": rows,
                "dropped": project.store.generation.dropped_personas(),
                "silent_sessions": silent_sessions(project.store),
                "failed": failed,
            }
        )
    else:
        echo_table(rows, ["stage", "written", "skipped", "dropped", "failed"])
        click.echo(
            "written and skipped count personas (personas, factors, sessions), preferences (checklists), "
            "sessions (dialogues) and instances"
        )
        held = [(project.store.count(table), table) for _, table in COUNTED.values()]
        click.echo(
            "in the project, as prefkit status counts them: "
            + ", ".join(f"{n} {table.replace('_', ' ')}" for n, table in held)
        )
        for pid, why in project.store.generation.dropped_personas().items():
            click.echo(f"dropped {pid} at {why.stage}: {why.reason}")
        silent = silent_sessions(project.store)
        click.echo(f"backend {backend}; {project.store.count('instances')} instances in the project")
        click.echo(f"silent sessions (no checklist item raised): {len(silent)}")
        for sid in silent[:10]:
            click.echo(f"  - {sid}")
        if not failed:
            click.echo(
                "next: prefkit tasks create --kind preference_expressed  (then prefkit users add, "
                "prefkit annotate serve)"
            )
    if failed:
        _exit_incomplete(", ".join(f"{stage} {n}" for stage, n in failed.items()))
    empty = [r["stage"] for r in rows if not r["written"] and not r["skipped"]]
    if empty:
        _exit_empty(project, empty)


def _exit_empty(project: Project, stages: list[str]) -> None:
    """A stage that was asked for made nothing (and the project held nothing of it before): say so,
    exit 1, so a pipeline never reads an empty run as success."""
    dropped = project.store.generation.dropped_personas()
    why = f"; {len(dropped)} persona(s) dropped by validation (listed above)" if dropped else ""
    click.echo(
        f"error: nothing was generated at stage {', '.join(stages)}{why}; "
        "check the model's answers (`prefkit status` counts failures) and run again",
        err=True,
    )
    sys.exit(1)


def _exit_incomplete(where: str) -> None:
    """Model calls failed: say so and how to resume, and exit with EXIT_CALLS_FAILED."""
    click.echo(
        f"incomplete: model calls failed ({where}; `prefkit status` counts the failure rows). "
        f"Resume by running the same command again: completed calls are cached and not repeated.",
        err=True,
    )
    sys.exit(EXIT_CALLS_FAILED)


def _repair(project: Project, as_json: bool, **flags) -> None:
    report = run.repair(project, progress=not as_json, **flags)
    if as_json:
        echo_json(report.as_dict())
        if report.failed:
            _exit_incomplete(f"repair {len(report.failed)}")
        return
    prev = report.previous
    if prev:
        click.echo(
            f"round {prev['round']} recovered {prev['recovered']} instance(s) "
            f"(verified {prev['verified_instances']} -> {report.verified_instances})"
        )
    click.echo(
        f"repair round {report.round}: {len(report.repaired)} failed session(s) regenerated, "
        f"{report.queued} re-verification task(s) queued; {report.waiting_instances} instance(s) wait on them"
    )
    for sid in report.failed:
        click.echo(f"  could not regenerate {sid} (see `prefkit status` failures)")
    if report.failed:
        _exit_incomplete(f"repair {len(report.failed)}")


@click.command()
@click.argument("stage", required=False, metavar="[STAGE]", type=click.Choice(STAGES))
@click.option("--estimate", is_flag=True, help="Price a full run with the configured models; make no call.")
@flag(
    "--repair",
    "Regenerate every session annotators failed (same slot, factor and preference; a new dialogue) "
    "and queue it for re-verification.",
)
@generation_options
def generate(
    project: Project, stage: str | None, estimate: bool, repair: bool, as_json: bool, **flags
) -> None:
    """Synthesize a CUPID-style benchmark into the project: every stage, or only STAGE.

    \b
    Stages, in pipeline order (each picks up what the previous ones left in the project):
      personas    sample balanced attributes and write the personas
      factors     context factors and contextual preferences (contrastive pair last)
      sessions    place the 13-session plan by code; write each story and opening request
      checklists  decompose every distinct preference into at most 4 yes/no items
      dialogues   simulate each session: assistant model vs user-simulator model
      instances   build the consistent, contrastive and changing CUPID instances

    A rerun skips what the project already holds; a persona that keeps failing validation is dropped
    with the reason shown. When model calls failed the run exits 3 and says how to resume. Export the
    result with `prefkit export cupid OUT.jsonl`.

    After annotators verified the sessions, `--repair` gives every failed session a new dialogue (the
    old one is kept), queues it for re-verification and reports how many instances the previous
    round recovered: generate, verify, repair, verify until the yield is good.

    Example: prefkit generate --personas 4 --backend offline --seed 0
    """
    if repair:
        if stage or estimate:
            raise click.UsageError("--repair works on failed sessions; leave out STAGE and --estimate")
        _repair(project, as_json, **flags)
        return

    if estimate:
        if stage:
            raise click.UsageError("--estimate prices a full run; leave out STAGE")
        flags.pop("backend")
        cfg = generation_settings(project.config.generation, root=project.root, **flags)
        _print_estimate(estimate_run(project.store, project.config.llm, cfg), as_json)
        return
    _run(project, (stage,) if stage else STAGES, as_json, **flags)


def _print_estimate(result: dict, as_json: bool) -> None:
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
    click.echo(
        f"dialogues priced at {result['replies_per_dialogue']} assistant replies each (the offline simulator's "
        f"average); a real run can take up to {result['max_turns']}"
    )
    if result["unpriced"]:
        click.echo(f"no price configured for: {', '.join(result['unpriced'])} (add them under [llm.costs])")
