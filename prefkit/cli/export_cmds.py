"""``prefkit export``: a project's content out in the published formats (CUPID, AlpsBench)."""

from __future__ import annotations

from pathlib import Path

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import flag, project_path_option
from prefkit.cli.types import SafePath
from prefkit.curation.project import Project
from prefkit.exports.alpsbench import export_packets
from prefkit.exports.cupid import export_cupid, export_per_instance, export_release_per_instance


@click.group()
def export() -> None:
    """Export project content in the published formats."""


@export.command("cupid")
@click.argument("out", type=SafePath(dir_okay=False), required=False)
@flag("--verified", "Only instances whose every relevant session annotators verified.")
@click.option(
    "--per-instance",
    "per_instance",
    type=SafePath(file_okay=False),
    help="Write one JSON file per instance into this new folder (CUPID's evaluation/run.py --data_dir).",
)
@click.option(
    "--release",
    "release_dir",
    type=SafePath(file_okay=False, exists=True),
    help="With --per-instance: the verified instances of this release directory (its cupid rows), "
    "read from the release alone, not the project.",
)
@project_path_option(help_="Project directory (not opened with --release).")
def export_cupid_cmd(
    project_path: str, out: str | None, verified: bool, per_instance: str | None, release_dir: str | None
) -> None:
    """Write the project's benchmark instances as CUPID rows to OUT (.jsonl or .parquet), rebuilt from
    their sessions as they stand now (annotators' turn rewrites applied), or with --per-instance DIR one
    file per instance named <persona_id>+<instance_type>.json as CUPID's synthesis names them (unique, no
    "." before .json: CUPID's evaluator names results after the file). With --release RELEASE_DIR the
    files come from that release's verified cupid rows, the same files as its cupid_instances/ folder.

    Example: prefkit export cupid --per-instance instances/ --release releases/1.0.0
    """
    if release_dir is not None:
        if per_instance is None or out is not None:
            raise click.UsageError(
                "--release writes --per-instance DIR only (a release has its rows as JSONL)"
            )
        written = export_release_per_instance(Path(release_dir), Path(per_instance))
        click.echo(
            f"wrote {len(written)} verified CUPID instances of {release_dir} to {per_instance}/, one file each"
        )
        return
    kind = f"{'verified ' if verified else ''}CUPID instances"
    if (out is None) == (per_instance is None):
        raise click.UsageError("give OUT (a .jsonl or .parquet file) or --per-instance DIR, not both")
    project = Project.locate(project_path)
    try:
        if per_instance is not None:
            written = export_per_instance(project.store, Path(per_instance), verified_only=verified)
            click.echo(f"wrote {len(written)} {kind} to {per_instance}/, one file each")
        elif out is not None:
            n = export_cupid(project.store, Path(out), verified_only=verified)
            click.echo(f"wrote {n} {kind} to {out}")
    finally:
        project.close()


@export.command("alpsbench")
@click.argument("out_dir", type=SafePath(file_okay=False))
@click.option("--revised", is_flag=True, help="Use dialogue turns as revised by annotators.")
@project_option
def export_alpsbench_cmd(project: Project, out_dir: str, revised: bool) -> None:
    """Write the project's AlpsBench packets to OUT_DIR, in the layout they were imported from.

    Example: prefkit export alpsbench packets-out/
    """
    n = export_packets(project.store, Path(out_dir), revised=revised)
    click.echo(f"wrote {n} AlpsBench packets to {out_dir}")
