"""Project commands: init, status, schema export, import, export."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from prefkit.cli.common import default_project, echo_json, echo_table, json_option, project_option
from prefkit.cli.types import SafePath

if TYPE_CHECKING:
    from prefkit.curation.project import Project


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
    from prefkit.curation.project import Project
    from prefkit.curation.store.backend import redact

    project = Project.init(path, name=name, database=database)
    click.echo(f"project {project.name} ready at {project.root}")
    click.echo(f"  config      {project.root / 'prefkit.toml'}")
    click.echo(f"  database    {redact(project.database)}")
    click.echo(f"  guidelines  {project.guidelines_dir}")
    project.close()


@click.command()
@project_option
@json_option
def status(project: Project, as_json: bool) -> None:
    """Counts per stage: personas, sessions, turns, instances, memories, tasks, labels.

    Example: prefkit status --project my-bench --json
    """
    counts = project.store.status()
    if as_json:
        echo_json(counts)
        return
    click.echo(f"project {project.name} ({project.root})")
    echo_table([{"what": k, "count": v} for k, v in counts.items()])


@click.group()
def schema() -> None:
    """JSON Schemas of prefkit's record types."""


@schema.command("export")
@click.argument("directory", type=SafePath(file_okay=False))
def schema_export(directory: str) -> None:
    """Write the JSON Schema of every record type to DIRECTORY/<Name>.schema.json.

    Example: prefkit schema export schemas-out/
    """
    from prefkit.exports.writers import write_json
    from prefkit.schemas import ALL_SCHEMAS

    out = Path(directory)
    for name, model in ALL_SCHEMAS.items():
        schema_doc = model.model_json_schema()
        schema_doc["$id"] = f"https://prefkit.dev/schemas/{name}-{model.SCHEMA_VERSION}.json"
        write_json(out / f"{name}.schema.json", schema_doc)
    click.echo(f"wrote {len(ALL_SCHEMAS)} schemas to {out}")


@click.group("import")
def import_() -> None:
    """Import data in the real published formats (all-or-nothing; re-import is a no-op)."""


def _report(result, what: str, path: str) -> None:
    if result.already_imported:
        click.echo(f"{path}: already imported ({result.source_id}); nothing written")
        return
    parts = ", ".join(f"{n} {k}" for k, n in result.counts.items() if n)
    click.echo(f"imported {what} from {path}: {parts}")


@import_.command("cupid")
@click.argument("file", type=SafePath(dir_okay=False))
@click.option("--licence", help="Licence of the data, recorded in provenance and the release card.")
@project_option
def import_cupid(project: Project, file: str, licence: str | None) -> None:
    """Import CUPID benchmark rows from a JSONL or Parquet FILE.

    Example: prefkit import cupid cupid_test.jsonl --licence MIT
    """
    from prefkit.pipelines.ingest import cupid

    _report(
        project.store.content.import_bundle(cupid.build_bundle(Path(file), licence)), "CUPID instances", file
    )


@import_.command("alpsbench")
@click.argument("path", type=SafePath())
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Read packets reached through symbolic links that lead out of PATH (refused by default).",
)
@project_option
def import_alpsbench(project: Project, path: str, follow_symlinks: bool) -> None:
    """Import AlpsBench annotation packets from PATH (a folder of sess_*.json, searched recursively).

    Example: prefkit import alpsbench annotation_packets_sample/
    """
    from prefkit.pipelines.ingest import alpsbench

    bundle = alpsbench.build_bundle(Path(path), follow_symlinks)
    _report(project.store.content.import_bundle(bundle), "AlpsBench packets", path)


@click.group()
def export() -> None:
    """Export project content in the published formats."""


@export.command("cupid")
@click.argument("out", type=SafePath(dir_okay=False), required=False)
@click.option(
    "--verified", is_flag=True, help="Only instances whose every relevant session annotators verified."
)
@click.option("--per-instance", "per_instance", type=SafePath(file_okay=False),
              help="Write one JSON file per instance into this new folder (CUPID's evaluation/run.py --data_dir).")  # fmt: skip
@click.option("--release", "release_dir", type=SafePath(file_okay=False, exists=True),
              help="With --per-instance: the verified instances of this release directory (its cupid rows), "
              "read from the release alone, not the project.")  # fmt: skip
@click.option("--project", "-p", "project_path", type=SafePath(file_okay=False), default=default_project,
              show_default="$PREFKIT_PROJECT or .", help="Project directory (not opened with --release).")  # fmt: skip
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
    from prefkit.curation.project import Project
    from prefkit.exports.cupid import export_cupid, export_per_instance, export_release_per_instance

    if release_dir is not None:
        if per_instance is None or out is not None:
            raise click.UsageError(
                "--release writes --per-instance DIR only (a release has its rows as JSONL)"
            )
        written = export_release_per_instance(Path(release_dir), Path(per_instance))
        click.echo(f"wrote {len(written)} verified CUPID instances of {release_dir} to {per_instance}/, one file each")  # fmt: skip
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
    from prefkit.exports.alpsbench import export_packets

    n = export_packets(project.store, Path(out_dir), revised=revised)
    click.echo(f"wrote {n} AlpsBench packets to {out_dir}")
