"""``prefkit demo``: build the demo project and serve the annotation app on it."""

from __future__ import annotations

import click
from prefkit.cli.annotate_cmds import annotate_serve
from prefkit.cli.common import shown
from prefkit.cli.types import ANY_INT, PORT, POSITIVE_INT, SafePath
from prefkit.demo import build_demo


@click.command()
@shown(
    "--project",
    SafePath(file_okay=False),
    "demo-project",
    "Where to create (or reuse) the demo project.",
    "-p",
    "path",
)
@shown("--personas", POSITIVE_INT, 3, "Personas to generate offline.")
@click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Seed of the offline generation.")
@click.option("--port", type=PORT, default=8501, show_default=True, help="Port of the annotation app.")
@click.option("--no-serve", is_flag=True, help="Build the project only; do not start the app.")
def demo(path: str, personas: int, seed: int, port: int, no_serve: bool) -> None:
    """Build a demo project offline (no API key) and serve the annotation app on it.

    Example: prefkit demo --project demo-project --port 8501
    """
    project = build_demo(path, personas=personas, seed=seed, log=lambda m: click.echo(m, err=True))
    root = project.root
    project.close()
    if no_serve:
        return

    click.get_current_context().invoke(annotate_serve, project_path=str(root), port=port, host="127.0.0.1")
