"""``prefkit kinds``: the task kinds a project can use, and the ones it declares in ``kinds/``."""

from __future__ import annotations

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_table, json_option
from prefkit.curation.annotation.declared import declaration_files, describe_kinds, new_declaration
from prefkit.curation.project import Project


@click.group()
def kinds() -> None:
    """Task kinds: built in, from installed packages, and declared by the project in kinds/NAME.toml."""


@kinds.command("new")
@click.argument("name")
@project_option
def kinds_new(project: Project, name: str) -> None:
    """Write a commented example declaration to kinds/NAME.toml (a rating, a multi-label and a text
    question over two fields) to edit into your own task.

    Example: prefkit kinds new response_fit
    """
    path = new_declaration(project.root, name)
    click.echo(f"wrote {path.relative_to(project.root)}: edit it, then run prefkit kinds check")


@kinds.command("list")
@project_option
@json_option
def kinds_list(project: Project, as_json: bool) -> None:
    """Every task kind of the project: where it comes from, its fields and its questions. A bad
    declaration is one line on stderr naming the file and the key, and the exit status is 1.

    Example: prefkit kinds list
    """
    rows, errors = describe_kinds(project.root, project.store)
    echo_table(rows, ["kind", "from", "fields", "questions"], as_json=as_json)
    _fail(errors)


@kinds.command("check")
@project_option
def kinds_check(project: Project) -> None:
    """Check every declaration in kinds/ (its keys, and that it still fits the labels recorded under
    it); one line per problem and exit status 1 when there is any. An entry of kinds/ that is not a
    declaration (a folder, an editor's lock file, a name no kind can take) is one line saying it is
    skipped, and never fails the check.

    Example: prefkit kinds check
    """
    rows, errors = describe_kinds(project.root, project.store)
    for row in rows:
        if row["from"].startswith("kinds/"):
            click.echo(f"{row['from']}: ok ({row['kind']}: {row['questions']})")
    for line in declaration_files(project.root)[1]:
        click.echo(line)
    _fail(errors)


def _fail(errors: list[str]) -> None:
    for line in errors:
        click.echo(line, err=True)
    if errors:
        raise SystemExit(1)
