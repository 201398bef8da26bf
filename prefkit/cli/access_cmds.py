"""Commands at the door and on the queues: unlock a throttled sign-in, read the sign-in log, hand idle
items back to the pool. The ``users`` and ``tasks`` groups of :mod:`annotate_cmds` name them."""

from __future__ import annotations

import click

from prefkit.cli.common import KindChoice, echo_json, echo_table, json_option, project_option
from prefkit.cli.types import NON_NEGATIVE_FLOAT, POSITIVE_INT
from prefkit.curation.annotation import workflow
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
    project.store.accounts.unlock_sign_in(username=name, client=client)
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
    released = workflow.release_stale(project, hours=idle_hours, annotator=annotator, kind=kind)
    if as_json:
        echo_json(released)
        return
    who = sorted({(r.annotator, r.kind) for r in released})
    click.echo(f"released {len(released)} items from {len(who)} idle queue(s)")
    for annotator_, kind_ in who:
        n = sum(1 for r in released if (r.annotator, r.kind) == (annotator_, kind_))
        click.echo(f"  {annotator_}  {kind_}  {n}")
