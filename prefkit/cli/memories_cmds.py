"""``prefkit memories``: extract candidate memories from dialogues and check memories' evidence."""

from __future__ import annotations

import click

from prefkit.cli.common import echo_json, echo_table, json_option, project_option


@click.group()
def memories() -> None:
    """Structured user memories (AlpsBench MemoryItem format): extraction and evidence checks.

    Example: prefkit memories check-evidence --source gold
    """


@memories.command("check-evidence")
@click.option(
    "--source",
    default="all",
    show_default=True,
    help="'gold', a model name (as imported or extracted), or 'all'.",
)
@json_option
@project_option
def check_evidence(project, source: str, as_json: bool) -> None:
    """Check that each memory's evidence quote is in the dialogue turn it cites.

    pass: found in the cited turn (elided quotes piece by piece, in order; case, Unicode form,
    invisible characters and punctuation ignored). near_miss: found in another turn. fail: empty
    quote, index outside the dialogue, or found nowhere. Model extractions that cite no turn pass when
    the quote is in any turn. --json prints one row per memory, then a summary per source. The release
    gate `gold_evidence` runs the same check.

    Example: prefkit memories check-evidence --source gpt-5.2 --json
    """
    from curation.evidence import evidence_rows, sources, summarize

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
