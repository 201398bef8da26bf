"""``prefkit users``: the accounts that sign in to the annotation app, their roles, the door (throttled
sign-ins, the sign-in log). A thin shell over :mod:`prefkit.curation.annotation.people`."""

from __future__ import annotations

import sys

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_table, flag, json_option, shell_actor, shown
from prefkit.cli.types import POSITIVE_INT
from prefkit.curation.annotation import people
from prefkit.curation.project import Project


@click.group()
def users() -> None:
    """Accounts that sign in to the annotation app (annotators and maintainers)."""


@users.command("add")
@click.argument("name")
@click.option(
    "--role", type=click.Choice(["annotator", "maintainer"]), required=True, help="What the user may do."
)
@click.option("--email", help="Optional e-mail address (unique).")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin.")
@flag(
    "--generate-password",
    "Make a one-time password and print it once (stored only hashed); it opens no session, only the "
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
        until = people.one_time_until(project, name)
        click.echo(
            f"one-time password (shown once; works until {until}; {name} chooses their own at the first sign-in): {made}"
        )


@users.command("list")
@project_option
@json_option
def users_list(project: Project, as_json: bool) -> None:
    """Every account with its role and whether it is active.

    Example: prefkit users list --json
    """
    rows = project.store.accounts.users()
    echo_table(rows, ["username", "role", "email", "active", "created_at"], as_json=as_json)


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
@flag(
    "--generate-password",
    "A reset: make a one-time password and print it once; the person chooses their own with it.",
)
@project_option
def users_password(project: Project, name: str, password_stdin: bool, generate_password: bool) -> None:
    """Set a new password for NAME (asked for unless --password-stdin or --generate-password) and
    end every open session of the account: each browser signed in as NAME is signed out at its next
    click. Logged in the sign-in log (outcome password).

    Example: prefkit users password alice --password-stdin < alice.pw
    """
    if password_stdin and generate_password:
        raise click.UsageError("give --password-stdin or --generate-password, not both")
    if generate_password:
        made, ended = people.reset_password(project, shell_actor(), name)
        click.echo(f"reset the password of {name}; {ended} open session(s) ended")
        click.echo(
            f"one-time password (shown once; works until {people.one_time_until(project, name)}): {made}"
        )
        return
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


@users.command("unlock")
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


@users.command("sign-ins")
@click.argument("name", required=False)
@shown("--limit", POSITIVE_INT, 50, "How many attempts, newest first.")
@project_option
@json_option
def users_sign_ins(project: Project, name: str | None, limit: int, as_json: bool) -> None:
    """The sign-in log (ok, fail, throttled, locked, unlock, password), newest first, optionally for NAME only.

    Example: prefkit users sign-ins alice --limit 20
    """
    rows = project.store.accounts.sign_in_log(name, limit)
    echo_table(rows, ["created_at", "username", "client", "outcome"], as_json=as_json)


@users.command("status")
@project_option
@json_option
def users_status(project: Project, as_json: bool) -> None:
    """Every account at the door: role, state (active, disabled, locked, backing off), last sign-in and
    failed sign-ins since (what the app's People page shows).

    Example: prefkit users status
    """
    rows = people.people(project)
    echo_table(rows, ["username", "role", "state", "last_sign_in", "failures", "email"], as_json=as_json)


@users.command("role")
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
