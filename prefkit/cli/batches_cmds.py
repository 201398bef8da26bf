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
    """Every batch with its kinds, status and when it was made: `tasks status` per batch.

    Example: prefkit batches list
    """
    echo_table(work.batch_list(project), as_json=as_json)


def _status_command(name: str, status: str, what: str) -> click.Command:
    @batches.command(name, help=f"{what}\n\nExample: prefkit batches {name} week1")
    @click.argument("batch")
    @project_option
    def command(project: Project, batch: str) -> None:
        work.set_batch_status(project, shell_actor(), batch, status)
        click.echo(f"batch {batch} is {status}")

    return command


batches_open = _status_command("open", "open", "Open BATCH: its tasks are handed out again.")
batches_close = _status_command(
    "close", "closed", "Close BATCH: its tasks leave every queue (labels already made stay)."
)
