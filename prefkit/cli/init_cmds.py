"""``prefkit init``: create a project directory (``status`` is in :mod:`prefkit.cli.status_cmds`)."""

from __future__ import annotations

from pathlib import Path

import click
from prefkit.cli.common import default_project
from prefkit.cli.types import SafePath
from prefkit.curation.project import Project
from prefkit.curation.store import redact


@click.command()
@click.argument("path", type=SafePath(file_okay=False), default=default_project)
@click.option("--name", help="Project name (default: the directory name).")
@click.option(
    "--database",
    help="postgresql://user@host:5432/db to share one database between app replicas (the password "
    "comes from PGPASSWORD or ~/.pgpass and is never written to prefkit.toml). Default: "
    "$PREFKIT_DATABASE_URL, else project.db (SQLite) in the project directory.",
)
def init(path: str, name: str | None, database: str | None) -> None:
    """Create a project directory (config, database, guidelines) at PATH ($PREFKIT_PROJECT, else the
    current directory), like every other command finds it. Safe to re-run.

    Example: prefkit init my-bench --name my-bench --database postgresql://prefkit@localhost/my_bench
    """
    project = Project.init(path, name=name, database=database)
    click.echo(f"project {project.name} ready at {project.root}")
    click.echo(f"  config      {project.root / 'prefkit.toml'}")
    click.echo(f"  database    {redact(project.database)}")
    click.echo(f"  guidelines  {project.guidelines_dir}")
    click.echo(f"  kinds       {project.root / 'kinds'}  (your own task kinds: prefkit kinds new NAME)")
    here = project.root.resolve() == Path.cwd().resolve()
    click.echo(
        f"next: {'' if here else f'cd {path} && '}prefkit generate --personas 2  (or import your own: docs/cli.md)"
    )
    project.close()
