"""Store commands: move a project's database (``prefkit store migrate``)."""

from __future__ import annotations

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, flag, json_option
from prefkit.curation.project import Project
from prefkit.curation.store import migrate_store


@click.group()
def store() -> None:
    """The project's database: move it to PostgreSQL (or back to a SQLite file)."""


@store.command("migrate")
@click.option(
    "--to",
    "target",
    required=True,
    help="An EMPTY target database: postgresql://user@host:5432/db (password from PGPASSWORD or "
    "~/.pgpass) or a SQLite file path.",
)
@flag("--dry-run", "Check the target and report what would be copied; write nothing.")
@project_option
@json_option
def migrate(project: Project, target: str, dry_run: bool, as_json: bool) -> None:
    """Copy every table, event and revision into an empty database, verify row counts and content
    hashes, then point prefkit.toml at it. Stop `annotate serve` and pipelines first.

    Example: prefkit store migrate --project my-bench --to postgresql://prefkit@db.example.org/my_bench
    """
    report = migrate_store(project, target, dry_run=dry_run)
    if as_json:
        echo_json(report.to_dict())
        return
    if dry_run:
        click.echo(f"dry run: would copy {report.total_rows} rows from {report.source} to {report.target}")
        echo_table([{"table": t.table, "rows": t.rows} for t in report.tables if t.rows])
        click.echo(f"({len(report.tables)} tables, the empty ones not listed); nothing was written")
        return
    echo_table(
        [
            {"table": t.table, "rows": t.rows, "sha256": t.sha256[:16], "verified": "yes"}
            for t in report.tables
            if t.rows
        ]
    )
    click.echo(f"copied and verified {report.total_rows} rows in {len(report.tables)} tables")
    click.echo(
        f"prefkit.toml now uses {report.target}; the old database ({report.source}) is marked as moved"
    )
