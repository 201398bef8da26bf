"""``prefkit guidelines``: the versions of each kind's guidelines, and the text diff between two."""

from __future__ import annotations

from dataclasses import asdict

import click
from prefkit.cli.args import KindChoice, project_option
from prefkit.cli.common import echo_json, echo_table, json_option
from prefkit.curation.annotation.guidelines import diff, versions_now
from prefkit.curation.project import Project

_TABLE = ["kind", "version", "current", "first_seen_at", "first_used_at", "last_used_at", "labels"]


@click.group()
def guidelines() -> None:
    """Versions of each kind's guidelines: which labels were made under which text."""


@guidelines.command("list")
@click.option("--kind", type=KindChoice(), help="Only this task kind.")
@json_option
@project_option
def guidelines_list(project: Project, kind: str | None, as_json: bool) -> None:
    """One row per (kind, version): first seen, first and last label under it, label events naming it.

    A version is the first 12 hex characters of the SHA-256 of guidelines/<kind>.md as annotators
    are shown it; "none" counts the labels made before versions were recorded.

    Example: prefkit guidelines list --kind preference_match
    """
    current = versions_now(project, project.store, [kind] if kind else None)
    rows = [
        {**asdict(v), "current": v.version == current.get(v.kind)}
        for v in project.store.guidelines.versions(kind)
    ]
    if as_json:
        echo_json(rows)
        return
    echo_table(
        [{**r, "version": r["version"] or "none", "current": "yes" if r["current"] else ""} for r in rows],
        _TABLE,
    )


@guidelines.command("diff")
@click.argument("kind", type=KindChoice())
@click.argument("old")
@click.argument("new")
@project_option
def guidelines_diff(project: Project, kind: str, old: str, new: str) -> None:
    """The unified diff of KIND's guidelines from version OLD to version NEW.

    Example: prefkit guidelines diff preference_match 3f2a9c1b7d10 8e41d0c2aa57
    """
    versions_now(project, project.store, [kind])  # the text shown now is a version too
    click.echo(diff(project.store, kind, old, new), nl=False)
