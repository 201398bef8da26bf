"""``prefkit labelstudio``: label prefkit tasks in a Label Studio server and pull the labels back."""

from __future__ import annotations

import click
from prefkit.annotate_app.labelstudio.bridge import pull, push, status
from prefkit.annotate_app.labelstudio.config import pretty_config
from prefkit.cli.args import KindChoice, project_option
from prefkit.cli.common import (
    default_label_studio_url,
    echo_json,
    echo_table,
    json_option,
    project_path_option,
    shown,
)
from prefkit.cli.types import NON_NEGATIVE_FLOAT
from prefkit.curation.project import Project

SHOWN = 5  # lines of a long list printed before "... and N more"
KINDS = KindChoice()


def url_option(required: bool):
    return click.option(
        "--url",
        default=default_label_studio_url,
        required=required,
        show_default="$LABEL_STUDIO_URL",
        help="Label Studio base URL, e.g. http://127.0.0.1:8080 (token from $LABEL_STUDIO_API_KEY).",
    )


@click.group()
def labelstudio() -> None:
    """Use a Label Studio server for labelling; labels come back as prefkit label events.

    Example: prefkit labelstudio push memory_verify --url http://127.0.0.1:8080
    """


@labelstudio.command("config")
@click.argument("kind", type=KINDS)
@project_path_option
def config_cmd(kind: str, project_path: str) -> None:
    """Print the Label Studio labeling config (XML) of a task kind (a kind the project declares in
    kinds/ too: its controls are named after its questions).

    Example: prefkit labelstudio config preference_match > preference_match.xml
    """
    click.echo(pretty_config(kind))


@labelstudio.command("push")
@click.argument("kind", type=KINDS)
@url_option(required=True)
@shown(
    "--wait",
    NON_NEGATIVE_FLOAT,
    600,
    "Seconds to wait while another push of KIND to this server runs (0: fail at once).",
    "wait_s",
)
@project_option
@json_option
def push_cmd(project: Project, kind: str, url: str, wait_s: float, as_json: bool) -> None:
    """Create or update the Label Studio project of KIND and import the tasks it does not have yet.

    One push of a kind to a server runs at a time: a second one waits for the first (see --wait),
    then imports only what is still missing.

    Example: prefkit labelstudio push preference_match --url http://127.0.0.1:8080
    """

    def waiting(holder) -> None:
        click.echo(
            f"waiting for the push of {kind} started at {holder.started_at} ({holder.host}, pid {holder.pid})",
            err=True,
        )

    r = push(project, kind, url, wait_s=wait_s, on_wait=waiting)
    if as_json:
        echo_json(r.__dict__)
        return
    verb = "created" if r.project_created else "updated"
    click.echo(f"{verb} Label Studio project {r.ls_project_id} for {kind} at {url}")
    click.echo(
        f"  imported {r.imported} tasks ({r.gold} gold with ground truth); {r.already} were already there"
    )
    if r.reconciled:
        click.echo(f"  reconciled {r.reconciled} tasks an interrupted push had imported")
    if r.suggestions_added or r.suggestions_withheld:
        click.echo(
            f"  newer suggestions: added to {r.suggestions_added} tasks; {r.suggestions_withheld} tasks "
            "already answered keep what their annotators saw"
        )
    if r.not_pushed:
        click.echo(f"  {len(r.not_pushed)} tasks do not fit the config; label them in the prefkit app:")
        for line in r.not_pushed[:SHOWN]:
            click.echo(f"    {line}")
        if len(r.not_pushed) > SHOWN:
            click.echo(f"    ... and {len(r.not_pushed) - SHOWN} more (all of them with --json)")


@labelstudio.command("pull")
@click.argument("kind", type=KINDS)
@url_option(required=True)
@project_option
@json_option
def pull_cmd(project: Project, kind: str, url: str, as_json: bool) -> None:
    """Record KIND's annotations from Label Studio as label events (new, edited, skipped, deleted).

    Example: prefkit labelstudio pull preference_match --url http://127.0.0.1:8080
    """
    r = pull(project, kind, url)
    if as_json:
        echo_json(r.__dict__)
        return
    click.echo(
        f"pulled {kind} from Label Studio project {r.ls_project_id}: {r.labels} new labels, {r.updated} edits, "
        f"{r.skips} skips, {r.withdrawn} withdrawn, {r.unchanged} unchanged, {len(r.invalid)} invalid"
    )
    for user in r.users_created:
        click.echo(f"  new annotator (from Label Studio): {user}")
    for line in r.invalid:
        click.echo(f"  invalid, not recorded: {line}")  # every one: each needs a look
    for line in r.beyond:
        click.echo(f"  beyond overlap, recorded: {line}")


@labelstudio.command("status")
@url_option(required=False)
@project_option
@json_option
def status_cmd(project: Project, url: str | None, as_json: bool) -> None:
    """Per Label Studio project: tasks, annotations, annotators, pulled labels and completion.

    Example: prefkit labelstudio status --url http://127.0.0.1:8080
    """
    rows = status(project, url)
    echo_table(rows, as_json=as_json)
