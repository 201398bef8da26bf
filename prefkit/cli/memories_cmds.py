"""``prefkit memories``: extract candidate memories from dialogues and check memories' evidence."""

from __future__ import annotations

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, flag, json_option, shown
from prefkit.cli.llm_cmds import llm_layer
from prefkit.cli.types import ANY_INT, POSITIVE_INT
from prefkit.curation.annotation.kinds import memory_verify
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.curation.quality.evidence import evidence_rows, sources, summarize
from prefkit.pipelines.memories.extract import ExtractionConfig, estimate_extraction, run_extraction


@click.group()
def memories() -> None:
    """Structured user memories (AlpsBench MemoryItem format): extraction and evidence checks.

    Example: prefkit memories check-evidence --source gold
    """


@memories.command("extract")
@click.option(
    "--backend", type=click.Choice(["offline", "openai"]), help="LLM backend (default: [llm] backend)."
)
@shown("--origin", None, "wildchat", "Extract from dialogues of this origin ('all' for every dialogue).")
@click.option(
    "--cap-per-label", type=POSITIVE_INT, help="Kept memories per taxonomy label across the project."
)
@flag("--keep-without-implicit", "Keep dialogues with no indirect memory (AlpsBench leaves them out).")
@click.option("--limit", type=POSITIVE_INT, help="At most this many dialogues in this run.")
@shown("--attempts", POSITIVE_INT, 2, "Asks per stage before giving up.")
@click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Seed of the offline backend.")
@click.option("--estimate", is_flag=True, help="Price the run with the configured models; make no call.")
@click.option("--no-tasks", is_flag=True, help="Do not create memory_verify tasks for the kept candidates.")
@click.option(
    "--overlap", type=POSITIVE_INT, help="Annotators per memory_verify task (default: annotation.overlap)."
)
@click.option("--batch", default="default", show_default=True, help="Batch the new tasks go to.")
@json_option
@project_option
def extract(
    project: Project, backend, origin, estimate, no_tasks, overlap, batch, as_json, seed, **flags
) -> None:
    """Extract candidate memories from dialogues with an LLM, validate them, and queue them for people.

    Stage 1 proposes memories (AlpsBench MemoryItem format, high recall); stage 2 keeps or rejects each
    one and recalibrates its confidence (0.95/0.80/0.65/0.50; rejected 0.10 with a reason). Dialogues
    without an indirect memory are left out, and --cap-per-label bounds each taxonomy label. Kept
    candidates become memory_verify tasks. A rerun resumes where the last one stopped.

    Example: prefkit memories extract --backend openai --cap-per-label 200 --estimate
    """
    cfg = ExtractionConfig(
        origin=None if origin == "all" else origin,
        cap_per_label=flags["cap_per_label"],
        require_implicit=not flags["keep_without_implicit"],
        attempts=flags["attempts"],
        limit=flags["limit"],
    )
    cfg.check()
    if estimate:
        result = estimate_extraction(project.store, project.config.llm, cfg, seed=seed)
        if as_json:
            echo_json(result)
            return
        click.echo(
            f"estimate for {result['dialogues']} dialogues: {result['calls']} calls "
            f"({result['cached']} cached), {result['prompt_tokens']} prompt + "
            f"{result['completion_tokens']} completion tokens, ${result['cost_usd']:.4f}"
        )
        return
    backend = backend or project.config.llm.backend
    with llm_layer(project, backend, seed, as_json) as layer:
        report = run_extraction(project.store, layer, cfg)
    if not no_tasks and report.kept:
        report.tasks_created = create_tasks(project, memory_verify.KIND, overlap=overlap, batch=batch)
    if as_json:
        echo_json({"backend": backend, **report.as_dict()})
        return
    click.echo(f"{report.source} ({backend}): {report.dialogues} dialogues, {report.skipped} done before")
    click.echo(
        f"  {report.candidates} candidates: {report.kept} kept, {report.rejected} rejected, "
        f"{report.capped} over the label cap; {report.no_implicit} dialogues without an implicit memory"
    )
    if report.flagged_evidence:
        click.echo(f"  {report.flagged_evidence} candidates quote text not found in the dialogue (flagged)")
    if report.failed:
        click.echo(f"  {len(report.failed)} dialogues failed (see `prefkit status`); run again to retry them")
    click.echo(f"  {report.tasks_created} memory_verify tasks created")


@memories.command("check-evidence")
@shown("--source", None, "all", "'gold', a model name (as imported or extracted), or 'all'.")
@json_option
@project_option
def check_evidence(project: Project, source: str, as_json: bool) -> None:
    """Check that each memory's evidence quote is in the dialogue turn it cites.

    pass: found in the cited turn (elided quotes piece by piece, in order; case, Unicode form,
    invisible characters and punctuation ignored). near_miss: found in another turn. fail: empty
    quote, index outside the dialogue, or found nowhere. Model extractions that cite no turn pass when
    the quote is in any turn. --json prints one row per memory, then a summary per source. The release
    gate `gold_evidence` runs the same check.

    Example: prefkit memories check-evidence --source gpt-5.2 --json
    """
    known = sources(project.store)
    if source != "all" and source not in known:
        raise click.UsageError(f"no memories from source {source!r}; known: {', '.join(known) or '(none)'}")
    rows = evidence_rows(project.store, source)
    summary = summarize(rows)
    if as_json:
        echo_json({"memories": rows, "summary": summary})
        return
    echo_table(summary, ["source", "memories", "pass", "near_miss", "fail", "pass_rate"])
    shown = [r for r in rows if r["status"] != "pass"][:20]
    for r in shown:
        click.echo(f"{r['status']:<9} {r['source']} {r['session_id']}/{r['memory_id']}: {r['reason']}")
    rest = sum(r["status"] != "pass" for r in rows) - len(shown)
    if rest > 0:
        click.echo(f"... and {rest} more (--json lists all)")
