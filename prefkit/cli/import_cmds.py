"""``prefkit import``: a project's content in from the published formats (CUPID, AlpsBench)."""

from __future__ import annotations

from pathlib import Path

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import flag
from prefkit.cli.types import SafePath
from prefkit.curation.project import Project
from prefkit.pipelines.ingest import alpsbench, cupid


def _report(result, what: str, path: str) -> None:
    if result.already_imported:
        click.echo(f"{path}: already imported ({result.source_id}); nothing written")
        return
    parts = ", ".join(f"{n} {k}" for k, n in result.counts.items() if n)
    click.echo(f"imported {what} from {path}: {parts}")


@click.group("import")
def import_() -> None:
    """Import data in the real published formats (all-or-nothing; re-import is a no-op)."""


@import_.command("cupid")
@click.argument("file", type=SafePath(dir_okay=False))
@click.option("--licence", help="Licence of the data, recorded in provenance and the release card.")
@project_option
def import_cupid(project: Project, file: str, licence: str | None) -> None:
    """Import CUPID benchmark rows from a JSONL or Parquet FILE.

    Example: prefkit import cupid cupid_test.jsonl --licence MIT
    """
    _report(
        project.store.content.import_bundle(cupid.build_bundle(Path(file), licence)), "CUPID instances", file
    )


@import_.command("alpsbench")
@click.argument("path", type=SafePath())
@flag(
    "--follow-symlinks",
    "Read packets reached through symbolic links that lead out of PATH (refused by default).",
)
@project_option
def import_alpsbench(project: Project, path: str, follow_symlinks: bool) -> None:
    """Import AlpsBench annotation packets from PATH (a folder of sess_*.json, searched recursively).

    Example: prefkit import alpsbench annotation_packets_sample/
    """
    bundle = alpsbench.build_bundle(Path(path), follow_symlinks)
    _report(project.store.content.import_bundle(bundle), "AlpsBench packets", path)
