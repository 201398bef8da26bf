"""``prefkit tasks``: annotation tasks built from the project's content, their gold items and pairs,
adaptive overlap, idle items handed back, the work per kind and batch, AlpsBench tasks. A thin shell
over :mod:`prefkit.curation.annotation.work` and the pipelines that build tasks."""

from __future__ import annotations

from pathlib import Path

import click
from prefkit.cli.args import KindChoice, project_option
from prefkit.cli.common import echo_json, echo_table, json_option, shell_actor, shown
from prefkit.cli.llm_cmds import llm_layer
from prefkit.cli.types import (
    ANY_INT,
    NON_NEGATIVE_FLOAT,
    POSITIVE_INT,
    SHARE_BELOW_ONE,
    DistinctInts,
    SafePath,
)
from prefkit.curation.annotation import work, workflow
from prefkit.curation.annotation.kinds import task_qc
from prefkit.curation.annotation.task_admin import create_tasks, import_gold, import_pairs, task_rows
from prefkit.curation.project import Project
from prefkit.curation.quality import recalibration
from prefkit.exports.writers import atomic_write_bytes
from prefkit.pipelines.eval import (
    pairs_from_run,
)
from prefkit.pipelines.matching import add_pairs_from_instances
from prefkit.pipelines.memories.tasks import TASKS, BuildConfig
from prefkit.pipelines.memories.tasks import build_alpsbench as build
from prefkit.schemas.common import canonical_json


@click.group()
def tasks() -> None:
    """Annotation tasks built from the project's content."""


@tasks.command("recalibrate")
@click.option("--kind", type=KindChoice(), required=True, help="The task kind whose guidelines changed.")
@click.option("--items", "n", type=POSITIVE_INT, help="Decided items to queue again per active annotator.")
@click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Seed of each annotator's draw.")
@click.option("--report", is_flag=True, help="Compare the answers given so far with the decisions instead.")
@json_option
@project_option
def tasks_recalibrate(
    project: Project, kind: str, n: int | None, seed: int, report: bool, as_json: bool
) -> None:
    """Queue N decided items again for every active annotator after a guidelines change.

    Each gets N decided items (not gold) they never had, at the end of their queue; --report compares
    their answers with the decisions, per annotator. The answers are never votes, edits or decisions.

    Example: prefkit tasks recalibrate --kind preference_match --items 10
    """
    if report:
        echo_table(recalibration.report(project.store, kind), as_json=as_json)
        return
    if n is None:
        raise click.UsageError("give --items N to queue items, or --report to see the answers")
    queued = recalibration.recalibrate(project.store, kind, n, seed)
    echo_table([{"annotator": who, "queued": k} for who, k in queued.items()], as_json=as_json)


@tasks.command("create")
@click.option(
    "--kind",
    type=KindChoice(),
    required=True,
    help="Task kind.",
)
@click.option(
    "--overlap",
    help="Distinct annotators per item: a number, or MIN..MAX for adaptive overlap "
    "(default: config annotation.overlap).",
)
@click.option("--batch", default="default", show_default=True, help="Batch the new tasks go to.")
@click.option(
    "--gold-rate", type=SHARE_BELOW_ONE, help="Share of gold items mixed into queues of this kind (0..1)."
)
@project_option
def tasks_create(
    project: Project, kind: str, overlap: str | None, batch: str, gold_rate: float | None
) -> None:
    """Build tasks of KIND from what the project holds (existing items are left as they are).

    With --overlap 2..4 an item goes to 2 annotators, then one more at a time while its labels are
    uncertain, up to 4 ([annotation] overlap = {min, max, audit_share, confidence, gold_items}).

    Example: prefkit tasks create --kind memory_verify --overlap 3 --batch week1 --gold-rate 0.1
    """
    n = work.create(project, shell_actor(), kind, overlap=overlap, batch=batch, gold_rate=gold_rate)
    total = project.store.count("tasks", kind=kind)
    click.echo(f"created {n} {kind} tasks in batch {batch} ({total} {kind} tasks in the project)")


@tasks.command("import")
@click.option("--kind", type=KindChoice(), required=True, help="A task kind the project declares in kinds/.")
@click.argument("items", type=SafePath(exists=True, dir_okay=False))
@click.option(
    "--overlap",
    help="Distinct annotators per item: a number, or MIN..MAX for adaptive overlap "
    "(default: config annotation.overlap).",
)
@click.option("--batch", default="default", show_default=True, help="Batch the new tasks go to.")
@project_option
def tasks_import(project: Project, kind: str, items: str, overlap: str | None, batch: str) -> None:
    """Add the items of ITEMS (JSON Lines: id, each declared field, optional gold and meta) as tasks
    of a declared KIND; all or nothing, and importing the same items again adds nothing.

    Example: prefkit tasks import --kind response_fit items.jsonl --overlap 3 --batch week1
    """
    n = work.create(project, shell_actor(), kind, overlap=overlap, batch=batch, items=Path(items))
    total = project.store.count("tasks", kind=kind)
    click.echo(f"imported {n} {kind} tasks in batch {batch} ({total} {kind} tasks in the project)")


@tasks.command("list")
@click.option("--kind", help="Only this task kind.")
@project_option
@json_option
def tasks_list(project: Project, kind: str | None, as_json: bool) -> None:
    """Tasks per kind and batch: how many, gold, assigned slots, complete (tasks with as many people's
    labels as their overlap, from the app, label files or Label Studio alike): `tasks status`'s counts.

    Example: prefkit tasks list --kind memory_verify
    """
    echo_table(work.task_list(project, kind), as_json=as_json)


@tasks.command("export")
@click.argument("out", type=SafePath(dir_okay=False, allow_dash=True), default="-")
@click.option("--kind", help="Only this task kind.")
@click.option("--batch", help="Only this batch.")
@project_option
def tasks_export(project: Project, out: str, kind: str | None, batch: str | None) -> None:
    """Write the tasks as JSON Lines to OUT (default: stdout): task_id, task_kind, item_id (what a label
    file names), batch, overlap, is_gold and the payload the annotator sees (a memory_verify task's
    candidates carry the key each decision names). For labelling outside prefkit, then `labels import`.

    Example: prefkit tasks export --kind memory_verify memory_tasks.jsonl
    """
    rows = task_rows(project.store, kind, batch)
    lines = "".join(canonical_json(row) + "\n" for row in rows)
    if out == "-":
        click.echo(lines, nl=False)
        return
    atomic_write_bytes(Path(out), lines.encode("utf-8"))  # a reader never sees half a file
    click.echo(f"wrote {len(rows)} task(s) to {out}")


@tasks.group("pairs")
def tasks_pairs() -> None:
    """Preference pairs (checklist item, candidate) for preference_match tasks."""


@tasks_pairs.command("import")
@click.argument("file", type=SafePath(dir_okay=False))
@project_option
def tasks_pairs_import(project: Project, file: str) -> None:
    """Add pairs from a JSONL FILE: {"checklist_item": ..., "candidate": ..., "pair_id"?, "origin"?}.

    Example: prefkit tasks pairs import pairs.jsonl
    """
    n = import_pairs(project, Path(file))
    click.echo(f"added {n} preference pairs from {file}")


@tasks_pairs.command("from-instances")
@project_option
def tasks_pairs_from_instances(project: Project) -> None:
    """Add pairs built from the project's CUPID instances: each gold checklist item with its own
    preference and with the persona's other (changed or contrastive) preference — a calibration
    matching set until the evaluation harness supplies model-inferred candidates.

    Example: prefkit tasks pairs from-instances --project my-bench
    """
    n, pairs = add_pairs_from_instances(project.store)
    click.echo(
        f"added {n} preference pairs ({len(pairs) - n} already present) from {project.store.count('instances')} instances"
    )


@tasks_pairs.command("from-eval")
@click.argument("run_id", metavar="RUN")
@shown("--per-label", POSITIVE_INT, 50, "Pairs sampled per judge label (fully, partially, not_covered).")
@click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Sampling seed.")
@click.option("--overlap", type=POSITIVE_INT, help="Annotators per task (default: [annotation] overlap).")
@click.option("--batch", help="Batch of the new tasks (default: eval-RUN).")
@json_option
@project_option
def tasks_pairs_from_eval(project: Project, run_id, per_label, seed, overlap, batch, as_json) -> None:
    """Sample a CUPID inference run's (gold item, inferred statement) pairs, stratified by the judge's
    label, into preference_match tasks; the judge's label is recorded as a judge rater on each.

    Once people label them, `prefkit agreement --kind preference_match` shows judge-vs-human α, and
    every eval report using that judge says whether it is validated.

    Example: prefkit tasks pairs from-eval cupid-inference-3f2a9c1b7d10 --per-label 40
    """
    result = pairs_from_run(project, run_id, per_label=per_label, seed=seed, overlap=overlap, batch=batch)
    if as_json:
        echo_json(result.as_dict())
        return
    echo_table(
        [
            {"judge_label": lab, "available": result.available[lab], "sampled": result.sampled[lab]}
            for lab in result.available
        ]
    )
    click.echo(
        f"{result.new_pairs} new pairs, {result.new_tasks} new tasks in batch {result.batch}, "
        f"{result.judge_events} judge labels recorded"
    )


@tasks.group("gold")
def tasks_gold() -> None:
    """Gold items: tasks with a known answer, mixed into queues to measure accuracy."""


@tasks_gold.command("import")
@click.argument("file", type=SafePath(dir_okay=False))
@project_option
def tasks_gold_import(project: Project, file: str) -> None:
    """Set known answers from a JSONL FILE: {"task_id": ..., "answer": {...}} (or kind + item_ref).

    Example: prefkit tasks gold import gold.jsonl
    """
    n = import_gold(project, Path(file))
    click.echo(f"marked {n} tasks as gold from {file}")


@tasks_gold.command("mark")
@click.argument("task_id")
@click.option(
    "--answer", "answer_json", required=True, help="The known answer as JSON, in the task kind's shape."
)
@project_option
def gold_mark(project: Project, task_id: str, answer_json: str) -> None:
    """Make TASK_ID a gold item with its known answer (checked as a label of its kind would be).

    Example: prefkit tasks gold mark preference_match_1a2b --answer '{"coverage": "fully"}'
    """
    work.mark_gold(project, shell_actor(), task_id, work.parse_answer(answer_json))
    click.echo(f"{task_id} is a gold item")


@tasks_gold.command("unmark")
@click.argument("task_id")
@project_option
def gold_unmark(project: Project, task_id: str) -> None:
    """Make the gold item TASK_ID a regular task again.

    Example: prefkit tasks gold unmark preference_match_1a2b
    """
    work.unmark_gold(project, shell_actor(), task_id)
    click.echo(f"{task_id} is no longer a gold item")


@tasks.command("adapt")
@click.option(
    "--kind", type=KindChoice(), help="Only this task kind (default: every kind with adaptive overlap)."
)
@project_option
@json_option
def tasks_adapt(project: Project, kind: str | None, as_json: bool) -> None:
    """Adaptive overlap now: refit the annotators' reliabilities on every label so far and hand each
    item whose labels are no longer certain under them to one more annotator (up to its max).

    The queues do this by themselves as labels come in; run it before a release or after importing
    labels. Example: prefkit tasks adapt --kind preference_match
    """
    raised = workflow.adapt(project, kind)
    if as_json:
        echo_json(raised)
        return
    for name, ids in raised.items():
        click.echo(f"{name}: {len(ids)} item(s) handed to one more annotator")
    if not raised:
        click.echo("no task kind has adaptive overlap")


@tasks.command("release")
@click.option(
    "--idle-hours",
    type=NON_NEGATIVE_FLOAT,
    help="Release queues idle this long (default: config annotation.stale_after_hours).",
)
@click.option("--annotator", help="Only this annotator's open items (with --idle-hours 0: all of them).")
@click.option("--kind", help="Only this task kind.")
@project_option
@json_option
def tasks_release(
    project: Project, idle_hours: float | None, annotator: str | None, kind: str | None, as_json: bool
) -> None:
    """Hand items back to the pool that annotators hold but have not worked on for a while.

    Labels already given stay; the released items can go to other annotators.
    Example: prefkit tasks release --idle-hours 0 --annotator bob
    """
    released = work.hand_back(project, shell_actor(), hours=idle_hours, annotator=annotator, kind=kind)
    if as_json:
        echo_json(released)
        return
    who = sorted({(r.annotator, r.kind) for r in released})
    click.echo(f"released {len(released)} items from {len(who)} idle queue(s)")
    for annotator_, kind_ in who:
        n = sum(1 for r in released if (r.annotator, r.kind) == (annotator_, kind_))
        click.echo(f"  {annotator_}  {kind_}  {n}")


@tasks.command("status")
@project_option
@json_option
def tasks_status(project: Project, as_json: bool) -> None:
    """Per kind and batch: open or closed, tasks, gold, overlap (fixed or adaptive min..max), assigned
    slots, complete tasks, stale items, when the batch was made; then the idle queues `tasks release`
    would hand back (what the app's Work page shows). `tasks list` and `batches list` are views of it.

    Example: prefkit tasks status
    """
    rows, idle = work.rows(project), work.stale_queues(project)
    if as_json:
        echo_json({"batches": rows, "stale_queues": idle})
        return
    echo_table(rows, ["kind", "batch", "status", "tasks", "gold", "overlap", "assigned", "complete", "stale"])
    if idle:
        click.echo("\nidle queues (prefkit tasks release hands them back):")
        echo_table(idle, ["annotator", "kind", "open_items", "last_seen"])


@tasks.command("build-alpsbench")
@click.option(
    "--task",
    "tasks",
    multiple=True,
    type=click.Choice(["task2", "task3", "task4"]),
    help="Tasks to build (repeatable; default all three).",
)
@shown(
    "--distractors",
    DistinctInts(min=1, max=100_000),
    "100,300,500,700,1000",
    "Task 3 distractor counts, comma-separated distinct integers >= 1.",
)
@click.option(
    "--backend", type=click.Choice(["offline", "openai"]), help="LLM backend (default: [llm] backend)."
)
@shown("--seed", ANY_INT, 0, "Seed for sampling and the offline backend.")
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
    with llm_layer(project, backend, seed, as_json) as layer:
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
