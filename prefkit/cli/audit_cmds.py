"""``prefkit audit``: the maintainers' actions on people, work and releases, from the app's console
pages and from commands alike (who, when, what)."""

from __future__ import annotations

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, json_option, shown
from prefkit.cli.types import POSITIVE_INT
from prefkit.curation.project import Project


@click.group()
def audit() -> None:
    """The audit log: who added, disabled, unlocked people, changed work and cut releases, and when."""


@audit.command("list")
@click.option("--actor", help="Only this actor (a maintainer's user name, or shell:<login>).")
@click.option("--action", help="Only this action, or a family of them (user, tasks, gold, batch, release).")
@shown("--limit", POSITIVE_INT, 50, "How many events, newest first.")
@project_option
@json_option
def audit_list(project: Project, actor: str | None, action: str | None, limit: int, as_json: bool) -> None:
    """The newest audited actions first: when, who, what, on what, and the details.

    Example: prefkit audit list --action user --limit 20
    """
    rows = project.store.audit.events(actor=actor, action=action, limit=limit)
    if as_json:
        echo_json(rows)
        return
    echo_table(
        [
            {
                "created_at": r.created_at,
                "actor": r.actor,
                "action": r.action,
                "target": r.target,
                "detail": ", ".join(f"{k}={v}" for k, v in r.detail.items() if v is not None),
            }
            for r in rows
        ],
        ["created_at", "actor", "action", "target", "detail"],
    )
