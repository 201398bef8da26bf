"""Annotation commands: users, tasks, batches and the annotation server."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import click

from prefkit.cli.args import KindChoice, project_option
from prefkit.cli.common import echo_json, echo_table, json_option, shell_actor
from prefkit.cli.group import LazyGroup
from prefkit.cli.types import PORT, SHARE_BELOW_ONE, SafePath
from prefkit.curation.annotation import people, work
from prefkit.curation.annotation.task_admin import import_gold, import_pairs, task_rows
from prefkit.curation.project import Project
from prefkit.exports.writers import atomic_write_bytes
from prefkit.pipelines.matching import add_pairs_from_instances
from prefkit.schemas.common import canonical_json


# -- users ------------------------------------------------------------------------------------------
@click.group(
    cls=LazyGroup,
    lazy={
        "unlock": "prefkit.cli.access_cmds:users_unlock",
        "sign-ins": "prefkit.cli.access_cmds:users_sign_ins",
        "status": "prefkit.cli.access_cmds:users_status",
        "role": "prefkit.cli.access_cmds:users_role",
    },
)
def users() -> None:
    """Accounts that sign in to the annotation app (annotators and maintainers)."""


@users.command("add")
@click.argument("name")
@click.option(
    "--role", type=click.Choice(["annotator", "maintainer"]), required=True, help="What the user may do."
)
@click.option("--email", help="Optional e-mail address (unique).")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin.")
@click.option(
    "--generate-password",
    is_flag=True,
    help="Make a one-time password and print it once (stored only hashed); it opens no session, only the "
    "page where the person chooses their own.",
)
@project_option
def users_add(
    project: Project, name: str, role: str, email: str | None, password_stdin: bool, generate_password: bool
) -> None:
    """Create an account; the password is stored as an argon2 hash (asked for unless --password-stdin
    or --generate-password). Recorded in the audit log (prefkit audit list).

    Example: prefkit users add alice --role annotator --email alice@example.org --password-stdin < alice.pw
    """
    if password_stdin and generate_password:
        raise click.UsageError("give --password-stdin or --generate-password, not both")
    password = None
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif not generate_password:
        password = click.prompt("password", hide_input=True, confirmation_prompt=True)
    made = people.add(project, shell_actor(), name, role, email=email, password=password)
    click.echo(f"added {role} {name}")
    if made:
        click.echo(f"one-time password (shown once; {name} chooses their own at the first sign-in): {made}")


@users.command("list")
@project_option
@json_option
def users_list(project: Project, as_json: bool) -> None:
    """Every account with its role and whether it is active.

    Example: prefkit users list --json
    """
    rows = project.store.accounts.users()
    if as_json:
        echo_json(rows)
    else:
        echo_table(rows, ["username", "role", "email", "active", "created_at"])


@users.command("disable")
@click.argument("name")
@project_option
def users_disable(project: Project, name: str) -> None:
    """Disable an account: it can no longer sign in, its open sessions end; its labels stay. The last
    active maintainer cannot be disabled.

    Example: prefkit users disable alice
    """
    people.disable(project, shell_actor(), name)
    click.echo(f"disabled {name}")


@users.command("password")
@click.argument("name")
@click.option("--password-stdin", is_flag=True, help="Read the new password from the first line of stdin.")
@project_option
def users_password(project: Project, name: str, password_stdin: bool) -> None:
    """Set a new password for NAME (asked for unless --password-stdin) and end every open session of
    the account: each browser signed in as NAME is signed out at its next click. Logged in the
    sign-in log (outcome password).

    Example: prefkit users password alice --password-stdin < alice.pw
    """
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("new password", hide_input=True, confirmation_prompt=True)
    ended = people.set_password(project, shell_actor(), name, password)
    click.echo(f"set a new password for {name}; {ended} open session(s) ended")


@users.command("enable")
@click.argument("name")
@project_option
def users_enable(project: Project, name: str) -> None:
    """Re-enable a disabled account.

    Example: prefkit users enable alice
    """
    people.enable(project, shell_actor(), name)
    click.echo(f"enabled {name}")


# -- tasks ------------------------------------------------------------------------------------------
@click.group(
    cls=LazyGroup,
    lazy={
        "adapt": "prefkit.cli.access_cmds:tasks_adapt",
        "release": "prefkit.cli.access_cmds:tasks_release",
        "status": "prefkit.cli.access_cmds:tasks_status",
        "build-alpsbench": "prefkit.cli.alpsbench_cmds:build_alpsbench",
    },
)
def tasks() -> None:
    """Annotation tasks built from the project's content."""


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
    """Tasks per kind and batch: how many, gold, assigned slots, complete (k finished labels).

    Example: prefkit tasks list --kind memory_verify
    """
    rows = project.store.progress.task_summaries(kind)
    if as_json:
        echo_json(rows)
    else:
        echo_table(rows, ["kind", "batch_id", "tasks", "gold", "assigned", "complete"])


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


@tasks.group("pairs", cls=LazyGroup, lazy={"from-eval": "prefkit.cli.eval_cmds:tasks_pairs_from_eval"})
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


@tasks.group(
    "gold",
    cls=LazyGroup,
    lazy={"mark": "prefkit.cli.access_cmds:gold_mark", "unmark": "prefkit.cli.access_cmds:gold_unmark"},
)
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


# -- batches ----------------------------------------------------------------------------------------
@click.group()
def batches() -> None:
    """Batches of tasks: only tasks of open batches are handed out."""


@batches.command("list")
@project_option
@json_option
def batches_list(project: Project, as_json: bool) -> None:
    """Every batch with its kind and status.

    Example: prefkit batches list
    """
    rows = project.store.labels.batches()
    if as_json:
        echo_json(rows)
    else:
        echo_table(rows, ["batch_id", "kinds", "status", "created_at"])


@batches.command("open")
@click.argument("batch")
@project_option
def batches_open(project: Project, batch: str) -> None:
    """Open BATCH: its tasks are handed out again.

    Example: prefkit batches open week1
    """
    work.set_batch_status(project, shell_actor(), batch, "open")
    click.echo(f"batch {batch} is open")


@batches.command("close")
@click.argument("batch")
@project_option
def batches_close(project: Project, batch: str) -> None:
    """Close BATCH: its tasks leave every queue (labels already made stay).

    Example: prefkit batches close week1
    """
    work.set_batch_status(project, shell_actor(), batch, "closed")
    click.echo(f"batch {batch} is closed")


# -- the server -------------------------------------------------------------------------------------
@click.group()
def annotate() -> None:
    """The browser annotation app."""


def streamlit_argv(port: int, host: str) -> list[str]:
    # the app script beside the installed package (a wheel puts it in site-packages/prefkit/annotate_app)
    spec = importlib.util.find_spec("prefkit.annotate_app")
    if spec is None or spec.origin is None:
        raise click.ClickException("prefkit.annotate_app is not installed: reinstall prefkit")
    app = Path(spec.origin).resolve().parent / "app.py"
    return [
        # Streamlit's CLI with each script run sent to the browser in one piece (annotate_app/server.py).
        sys.executable, "-m", "prefkit.annotate_app.server", "run", str(app),
        "--server.port", str(port),
        "--server.address", host,
        "--server.headless", "true",
        "--server.fileWatcherType", "none",
        "--server.runOnSave", "false",
        "--browser.gatherUsageStats", "false",
        "--global.developmentMode", "false",
        "--client.toolbarMode", "minimal",
        # Streamlit's default forces a full gc.collect(2) after every script run: measured at ~60 of
        # the ~80 ms of server CPU per submit (bench/bench_browser.py). Python's own generational
        # collector still runs; what a run allocates is freed by reference counting.
        "--runner.postScriptGC", "false",
    ]  # fmt: skip


@annotate.command("serve")
@click.option("--port", type=PORT, default=8501, show_default=True, help="Port to listen on.")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (keep 127.0.0.1 behind a proxy)."
)
@project_option
def annotate_serve(project: Project, port: int, host: str) -> None:
    """Serve the annotation app for the project (annotators sign in with `prefkit users add` accounts).

    Example: prefkit annotate serve --port 8501 --project my-bench
    """
    if not project.store.accounts.users():
        click.echo("warning: no users yet; add one with `prefkit users add NAME --role maintainer`", err=True)
    click.echo(f"serving {project.name} at http://{host}:{port}", err=True)
    env = {**os.environ, "PREFKIT_PROJECT": str(project.root)}
    project.close()
    argv = streamlit_argv(port, host)
    # Replace this process so the server's pid is the one that was started (signals reach it directly).
    os.execve(argv[0], argv, env)
