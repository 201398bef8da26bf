"""``prefkit status``: the project's counts per stage.

It starts without the store (SQLAlchemy): a SQLite project at this version's schema is counted through
:func:`~prefkit.curation.store.glance.glance`; anything else (PostgreSQL, a database to create or
migrate, a bulk import under way) is counted by the store, which the public ``prefkit.Project`` loads
on first use. Both count the same list (``glance.COUNTS``), so the output is the same either way.
"""

from __future__ import annotations

import click
import prefkit
from prefkit.cli.common import echo_json, echo_table, json_option, project_path_option
from prefkit.curation.project_dir import ProjectDir
from prefkit.curation.store import glance_counts


@click.command()
@project_path_option
@json_option
def status(project_path: str, as_json: bool) -> None:
    """Counts per stage: personas, sessions, turns, instances, memories, tasks, labels.

    Example: prefkit status --project my-bench --json
    """
    found = ProjectDir.locate(project_path)
    counts = glance_counts(found.database)
    if counts is None:  # only the store can answer (see the module)
        project = prefkit.Project(found.root, found.env)
        try:
            counts = project.store.status()
        finally:
            project.close()
    if as_json:
        echo_json(counts)
        return
    click.echo(f"project {found.name} ({found.root})")
    echo_table([{"what": k, "count": v} for k, v in counts.items()])
    click.echo(f"next: {next_step(counts)}")


def next_step(counts: dict[str, int]) -> str:
    """What to do next, from the counts: content, then tasks, people, labels, a release."""
    if not any(counts.get(k) for k in ("sessions", "instances", "packets", "preference_pairs")):
        return "prefkit generate --personas 2  (or prefkit import / prefkit ingest: docs/cli.md)"
    if not counts.get("tasks"):
        return "prefkit tasks create --kind preference_expressed  (prefkit kinds list names every kind)"
    if not counts.get("users"):
        return "prefkit users add NAME --role annotator  (and a maintainer)"
    if not counts.get("label_events"):
        return "prefkit annotate serve  (annotators label in the browser)"
    return "prefkit agreement, then prefkit release check"
