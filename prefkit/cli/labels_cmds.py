"""``prefkit labels``: label events in and out of a project as JSONL or CSV."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import flag
from prefkit.cli.types import SafePath
from prefkit.curation.annotation import overlap
from prefkit.curation.annotation.labels_io import export_labels, import_labels
from prefkit.curation.project import Project


@click.group()
def labels() -> None:
    """Label events in and out of a project as JSONL or CSV."""


@labels.command("import")
@click.argument("file", type=SafePath(dir_okay=False))
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv"]), help="Default: from the file's extension."
)
@click.option("--judge", is_flag=True, help="The labels come from an LLM judge (recorded with source=judge).")
@project_option
def labels_import(project: Project, file: str, fmt: str | None, judge: bool) -> None:
    """Import label rows from FILE; all-or-nothing, and re-importing the same file writes nothing.

    Columns: annotator, task_kind, item_id, values, time_spent_s, timestamp, action, comment,
    guidelines_version (default: the kind's current guidelines).

    Example: prefkit labels import labels.jsonl
    """
    source = "judge" if judge else "import"
    result = import_labels(project.store, Path(file), fmt=fmt, source=source, guidelines=project.guidelines)
    click.echo(
        f"{file}: {result.rows} row(s); {result.written} new event(s), {result.already_recorded} already recorded"
    )
    if result.written:  # labels from elsewhere: items under adaptive overlap may need another annotator
        store = project.store
        raised = overlap.review_tasks(
            store,
            store.submits.adaptive_tasks(),
            project.config.annotation.overlap,
            overlap.model_method(store),
        )
        if raised:
            click.echo(
                f"adaptive overlap: {len(raised)} item(s) uncertain, each handed to one more annotator"
            )


@labels.command("export")
@click.argument("out", type=SafePath(dir_okay=False, allow_dash=True), default="-")
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv"]), help="Default: from OUT's extension, else jsonl."
)
@flag("--all", "Every event (edits, withdrawals), not only live labels.", "all_events")
@click.option("--kind", help="Only this task kind.")
@project_option
def labels_export(project: Project, out: str, fmt: str | None, all_events: bool, kind: str | None) -> None:
    """Write the project's live labels (or every event with --all) to OUT (default: stdout).

    Example: prefkit labels export --format csv labels.csv
    """
    fmt = fmt or ("csv" if out.lower().endswith(".csv") else "jsonl")
    if out == "-":
        export_labels(project.store, sys.stdout, fmt=fmt, all_events=all_events, kind=kind)
        return
    with open(out, "w", encoding="utf-8", newline="") as fh:
        n = export_labels(project.store, fh, fmt=fmt, all_events=all_events, kind=kind)
    click.echo(f"wrote {n} label row(s) to {out}")
