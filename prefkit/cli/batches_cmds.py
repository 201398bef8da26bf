"""``prefkit batches``: batches of tasks, opened and closed (only tasks of open batches are handed out)."""

from __future__ import annotations

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_table, json_option, shell_actor
from prefkit.curation.annotation import work
from prefkit.curation.project import Project


@click.group()
def batches() -> None:
    """Batches of tasks: only tasks of open batches are handed out."""


@batches.command("list")
@project_option
@json_option
def batches_list(project: Project, as_json: bool) -> None:
    """Every batch with its kind and status.

    Example: prefkit batches list
    """
    rows = project.store.labels.batches()
    echo_table(rows, ["batch_id", "kinds", "status", "created_at"], as_json=as_json)


@batches.command("open")
@click.argument("batch")
@project_option
def batches_open(project: Project, batch: str) -> None:
    """Open BATCH: its tasks are handed out again.

    Example: prefkit batches open week1
    """
    work.set_batch_status(project, shell_actor(), batch, "open")
    click.echo(f"batch {batch} is open")


@batches.command("close")
@click.argument("batch")
@project_option
def batches_close(project: Project, batch: str) -> None:
    """Close BATCH: its tasks leave every queue (labels already made stay).

    Example: prefkit batches close week1
    """
    work.set_batch_status(project, shell_actor(), batch, "closed")
    click.echo(f"batch {batch} is closed")
