"""``prefkit adjudicate``: the adjudication queue and a maintainer's decisions."""

from __future__ import annotations

import json

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, flag, json_option
from prefkit.curation.annotation.task_kinds import item_name
from prefkit.curation.project import Project
from prefkit.curation.quality.consensus import AdjudicationError, disagreements
from prefkit.curation.quality.consensus import adjudicate as decide


@click.group()
def adjudicate() -> None:
    """The adjudication queue and a maintainer's decisions."""


@adjudicate.command("queue")
@click.option("--kind", help="Only this task kind.")
@flag("--all", "Include majority-decided and adjudicated disagreements.", "show_all")
@project_option
@json_option
def adjudicate_queue(project: Project, kind: str | None, show_all: bool, as_json: bool) -> None:
    """Tasks whose annotators disagree; by default only ties not yet adjudicated.

    Example: prefkit adjudicate queue --kind preference_match
    """
    rows = disagreements(project.store, kind)
    if not show_all:
        rows = [d for d in rows if d.decided_by == "undecided"]
    if as_json:
        echo_json(rows)
        return
    echo_table(
        [
            {
                "task_id": d.task_id,
                "kind": d.kind,
                "item": item_name(project.store.labels.task(d.task_id), 40),
                "labels": len(d.labels),
                "decided_by": d.decided_by,
                "tied": ", ".join("/".join(u).strip("/") for u in d.tied),
            }
            for d in rows
        ],
        ["task_id", "kind", "item", "labels", "decided_by", "tied"],
    )


@adjudicate.command("decide")
@click.argument("task_id")
@click.option("--as", "maintainer", required=True, help="Maintainer user name deciding.")
@click.option(
    "--values", "values_json", required=True, help="Final values as JSON, in the task kind's shape."
)
@click.option("--note", default="", help="Why this decision.")
@project_option
def adjudicate_decide(project: Project, task_id: str, maintainer: str, values_json: str, note: str) -> None:
    """Record a maintainer's final label for TASK_ID (a later decision supersedes it).

    Example: prefkit adjudicate decide preference_match_1a2b --as lead --values '{"coverage": "fully"}'
    """
    try:
        values = json.loads(values_json)
    except json.JSONDecodeError as exc:
        raise AdjudicationError(f"--values is not valid JSON: {exc.msg} at column {exc.colno}") from None
    adj = decide(project.store, task_id, maintainer, values, note)
    extra = f" (supersedes {adj.supersedes})" if adj.supersedes else ""
    click.echo(f"adjudicated {task_id}: {json.dumps(adj.values, sort_keys=True)}{extra}")
