"""``prefkit tasks build-alpsbench``: AlpsBench tasks 2-4 from the project's verified memories."""

from __future__ import annotations

import click

from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, json_option
from prefkit.cli.types import ANY_INT, POSITIVE_INT, DistinctInts
from prefkit.curation.annotation.kinds import task_qc
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.memories.tasks import TASKS, BuildConfig
from prefkit.pipelines.memories.tasks import build_alpsbench as build


@click.command("build-alpsbench")
@click.option(
    "--task",
    "tasks",
    multiple=True,
    type=click.Choice(["task2", "task3", "task4"]),
    help="Tasks to build (repeatable; default all three).",
)
@click.option(
    "--distractors",
    type=DistinctInts(min=1, max=100_000),
    default="100,300,500,700,1000",
    show_default=True,
    help="Task 3 distractor counts, comma-separated distinct integers >= 1.",
)
@click.option(
    "--backend", type=click.Choice(["offline", "openai"]), help="LLM backend (default: [llm] backend)."
)
@click.option(
    "--seed", type=ANY_INT, default=0, show_default=True, help="Seed for sampling and the offline backend."
)
@click.option("--limit", type=POSITIVE_INT, help="At most this many dialogues.")
@click.option("--no-qc", is_flag=True, help="Do not create task_qc tasks for the built rows.")
@click.option(
    "--overlap", type=POSITIVE_INT, help="Annotators per task_qc task (default: annotation.overlap)."
)
@json_option
@project_option
def build_alpsbench(
    project: Project, tasks, distractors, backend, seed, limit, no_qc, overlap, as_json
) -> None:
    """Build AlpsBench tasks 2-4 from verified memories (imported gold and memory_verify results).

    Task 2: an LLM continues each dialogue in controlled segments (neutral, one new memory, one
    conflicting memory). Task 3: one positive memory with a query, among N distractors from other
    users' verified memories (seeded, stratified by label, shuffled). Task 4: a query per ability,
    refused when it states the memory. Built rows get task_qc tasks: people check queries and answers
    before a release ships them.

    Example: prefkit tasks build-alpsbench --task task3 --distractors 100,300 --backend openai
    """
    cfg = BuildConfig(tasks=tuple(tasks) or TASKS, distractors=distractors, seed=seed, limit=limit)
    backend = backend or project.config.llm.backend
    with LLMLayer(
        project.store,
        llm_config=project.config.llm,
        backend=backend,
        seed=seed,
        progress=not as_json,
        env=project.env,
    ) as layer:
        report = build(project.store, layer, cfg)
    qc = 0 if no_qc else create_tasks(project, task_qc.KIND, overlap=overlap, batch="task_qc")
    if as_json:
        echo_json({"backend": backend, **report.as_dict(), "qc_tasks_created": qc})
        return
    for track, n in sorted(report.from_packets.items()):
        click.echo(f"kept {n} {track} rows from the packets (not built: the packets are the source)")
    for track, n in sorted(report.built.items()):
        click.echo(f"built {n} {track} rows")
    for why, n in sorted(report.skipped.items()):
        click.echo(f"skipped {n}: {why}")
    if report.failed:
        click.echo(f"{len(report.failed)} items failed (see `prefkit status`); run again to retry them")
    click.echo(f"{qc} task_qc tasks created")
