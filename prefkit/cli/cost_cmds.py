"""``prefkit cost``: LLM dollars and annotator minutes per verified instance, and the forecast."""

from __future__ import annotations

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, json_option
from prefkit.curation.project import Project
from prefkit.curation.quality.cost import CostReport, cost_report


def _n(x, digits: int = 2) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def cost_lines(report: CostReport) -> None:
    """Print the report as the tables ``prefkit cost`` shows."""
    click.echo("LLM calls per stage (from the call ledger):")
    echo_table(
        [
            {
                "stage": s.stage,
                "calls": s.calls,
                "cached": s.cached,
                "failed": s.failed,
                "offline": s.offline,
                "tokens": s.prompt_tokens + s.completion_tokens,
                "usd": f"{s.cost_usd:.4f}",
            }
            for s in report.stages
        ]
    )
    click.echo("")
    click.echo(f"Annotator time per task kind (an item counts at most {report.time_cap_s:g} s):")
    echo_table(
        [
            {
                "kind": t.kind,
                "items": t.items,
                "minutes": _n(t.minutes),
                "median_s": _n(t.median_s, 1),
                "capped": t.capped,
                "untimed": t.untimed,
            }
            for t in report.times
        ]
    )
    click.echo("")
    click.echo("Per verified unit:")
    echo_table(
        [
            {
                "verified": v.unit,
                "count": v.count,
                "usd": f"{v.cost_usd:.4f}",
                "usd_each": _n(v.usd_per_unit, 4),
                "minutes": _n(v.minutes),
                "minutes_each": _n(v.minutes_per_unit),
                "stages": "+".join(v.stages),
                "kind": v.kind,
            }
            for v in report.verified
        ]
    )
    if report.studies:
        click.echo("")
        click.echo("Crowd studies (rewards of approved submissions and bonuses, per verified item):")
        echo_table(
            [
                {
                    "study": s.study_id,
                    "kind": s.kind,
                    "batch": s.batch_id,
                    "participants": s.participants,
                    "approved": s.approved,
                    "paid": f"{s.currency} {s.cost:.2f}",
                    "verified": s.verified_items,
                    "paid_each": "—"
                    if s.cost_per_verified_item is None
                    else f"{s.currency} {s.cost_per_verified_item:.4f}",
                }
                for s in report.studies
            ]
        )
    click.echo("")
    until = report.paced_until or "no finished item yet"
    click.echo(
        f"Forecast per batch (pace of the last {report.pace_days:g} days of labelling, until {until}):"
    )
    echo_table(
        [
            {
                "kind": f.kind,
                "batch": f.batch_id,
                "tasks": f.tasks,
                "labels_left": f.remaining_labels,
                "per_day": _n(f.labels_per_day, 1),
                "days_left": _n(f.days_left, 1),
            }
            for f in report.forecast
        ]
    )


@click.command()
@json_option
@project_option
def cost(project: Project, as_json: bool) -> None:
    """LLM dollars and tokens per stage, annotator minutes per task kind (capped at
    [annotation] time_cap_s), both per verified unit (CUPID instances, sessions, gold memories,
    matching pairs), and per batch the days the remaining labels take at the team's recent pace.

    Example: prefkit cost --json
    """
    report = cost_report(project.store, project.config.annotation)
    if as_json:
        echo_json(report)
    else:
        cost_lines(report)
