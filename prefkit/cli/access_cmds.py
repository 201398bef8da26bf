"""Commands at the door and on the queues: unlock a throttled sign-in, read the sign-in log, people's
state at the door, roles, hand idle items back to the pool, the work per kind and batch, gold items
one at a time. The ``users`` and ``tasks`` groups of :mod:`annotate_cmds` name them. Each is a thin
shell over :mod:`prefkit.curation.annotation.people` or :mod:`~prefkit.curation.annotation.work`,
which the app's People and Work pages call too."""

from __future__ import annotations

import click

from prefkit.cli.args import KindChoice, project_option
from prefkit.cli.common import echo_json, echo_table, json_option, shell_actor
from prefkit.cli.types import NON_NEGATIVE_FLOAT, POSITIVE_INT
from prefkit.curation.annotation import people, work, workflow
from prefkit.curation.project import Project


@click.command("unlock")
@click.argument("name", required=False)
@click.option("--client", help="Unlock a client address instead of (or as well as) a user name.")
@project_option
def users_unlock(project: Project, name: str | None, client: str | None) -> None:
    """End a sign-in lockout or backoff of NAME (or of a client address) after too many wrong passwords.

    Example: prefkit users unlock alice
    """
    if not name and not client:
        raise click.UsageError("give a user NAME or --client ADDRESS")
    people.unlock(project, shell_actor(), name, client)
    click.echo("unlocked " + " and ".join(x for x in (name, client and f"client {client}") if x))


@click.command("sign-ins")
@click.argument("name", required=False)
@click.option(
    "--limit", type=POSITIVE_INT, default=50, show_default=True, help="How many attempts, newest first."
)
@project_option
@json_option
def users_sign_ins(project: Project, name: str | None, limit: int, as_json: bool) -> None:
    """The sign-in log (ok, fail, throttled, locked, unlock, password), newest first, optionally for NAME only.

    Example: prefkit users sign-ins alice --limit 20
    """
    rows = project.store.accounts.sign_in_log(name, limit)
    if as_json:
        echo_json(rows)
    else:
        echo_table(rows, ["created_at", "username", "client", "outcome"])


@click.command("adapt")
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


@click.command("release")
@click.option("--idle-hours", type=NON_NEGATIVE_FLOAT,
              help="Release queues idle this long (default: config annotation.stale_after_hours).")  # fmt: skip
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


@click.command("status")
@project_option
@json_option
def users_status(project: Project, as_json: bool) -> None:
    """Every account at the door: role, state (active, disabled, locked, backing off), last sign-in and
    failed sign-ins since (what the app's People page shows).

    Example: prefkit users status
    """
    rows = people.people(project)
    if as_json:
        echo_json(rows)
    else:
        echo_table(rows, ["username", "role", "state", "last_sign_in", "failures", "email"])


@click.command("role")
@click.argument("name")
@click.argument("role", type=click.Choice(["annotator", "maintainer"]))
@project_option
def users_role(project: Project, name: str, role: str) -> None:
    """Make NAME an annotator or a maintainer; their open sessions end, so the new role holds from
    their next sign-in. The last active maintainer cannot be demoted.

    Example: prefkit users role alice maintainer
    """
    ended = people.set_role(project, shell_actor(), name, role)
    click.echo(f"{name} is now a {role}; {ended} open session(s) ended")


@click.command("status")
@project_option
@json_option
def tasks_status(project: Project, as_json: bool) -> None:
    """Per kind and batch: open or closed, tasks, gold, overlap (fixed or adaptive min..max), assigned
    slots, complete tasks and stale items; then the idle queues `tasks release` would hand back (what
    the app's Work page shows).

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


@click.command("mark")
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


@click.command("unmark")
@click.argument("task_id")
@project_option
def gold_unmark(project: Project, task_id: str) -> None:
    """Make the gold item TASK_ID a regular task again.

    Example: prefkit tasks gold unmark preference_match_1a2b
    """
    work.unmark_gold(project, shell_actor(), task_id)
    click.echo(f"{task_id} is no longer a gold item")
