"""Shared pieces of the CLI that load none of the library: the project path, --json, tables.

The options that open a project or read the task-kind registry are in :mod:`prefkit.cli.args`;
``prefkit status`` uses this module alone and starts without the store."""

from __future__ import annotations

import dataclasses
import getpass
import json
from typing import Any

import click
from prefkit.cli.types import SafePath
from prefkit.schemas.environment import Environment
from pydantic import BaseModel


def default_project() -> str:
    """The project a command uses when none is named: ``$PREFKIT_PROJECT`` (read through the one
    environment record, so an empty value counts as unset, as everywhere else), else the current directory."""
    return Environment.read().project or "."


def default_label_studio_url() -> str | None:
    """``$LABEL_STUDIO_URL`` through the environment record (``None`` when unset or empty)."""
    return Environment.read().label_studio_url


def project_path_option(fn=None, *, help_: str = "Project directory."):
    """``--project PATH`` (or ``$PREFKIT_PROJECT``, else the current directory); passes ``project_path``.
    ``@project_path_option`` or ``@project_path_option(help_=...)``."""
    option = click.option(
        "--project",
        "-p",
        "project_path",
        type=SafePath(file_okay=False),
        default=default_project,
        show_default="$PREFKIT_PROJECT or .",
        is_eager=True,  # read before --kind, which takes the kinds the project declares
        help=help_,
    )
    return option(fn) if fn is not None else option


def shown(flag: str, type_: Any, default: Any, help_: str, *decls: str):
    """``click.option(flag, *decls, type=type_, default=default, show_default=True, help=help_)``: an
    option whose help shows its default, in one line; a list of words as ``type_`` is the choice of them."""
    kind = click.Choice(type_) if isinstance(type_, list) else type_
    return click.option(flag, *decls, type=kind, default=default, show_default=True, help=help_)


def flag(name: str, help_: str, *decls: str):
    """``click.option(name, *decls, is_flag=True, help=help_)`` in one line: an on/off switch."""
    return click.option(name, *decls, is_flag=True, help=help_)


def shell_actor() -> str:
    """Who a command acts as in the audit log: ``shell:<login>`` (the operating system's user name;
    whoever runs commands holds the project's files, so the login is the honest name to give)."""
    try:
        return f"shell:{getpass.getuser()}"
    except (OSError, KeyError):  # no login name in a bare container
        return "shell"


def json_option(fn):
    """``--json``: print machine-readable output instead of a table."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def plain(value: Any) -> Any:
    """``value`` with the store's typed records (frozen dataclasses, pydantic contracts) turned into
    the dicts and lists JSON and tables print, field order kept."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def echo_json(value: Any) -> None:
    click.echo(json.dumps(plain(value), indent=2, ensure_ascii=False, default=str))


def echo_table(rows: list[Any], columns: list[str] | None = None, as_json: bool = False) -> None:
    """A plain aligned text table (no colours: output is often piped); rows are dicts or typed records.
    With ``as_json`` (a command's ``--json``), the rows as JSON instead."""
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo("(none)")
        return
    rows = [plain(r) for r in rows]
    columns = columns or list(rows[0])
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for row in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
