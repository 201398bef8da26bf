"""The CLI's groups: subcommands imported only when they run, and one-line errors.

A command module imports what its commands use at its top, so a command pays for its own module
only: ``prefkit --help`` imports none of them (click only), ``prefkit status`` the project commands.
"""

from __future__ import annotations

import importlib
import sys
from gettext import gettext as _
from typing import Any

import click


class LazyGroup(click.Group):
    """A click group whose subcommands are named in ``lazy`` (``name -> "module:attribute"``) and
    imported when one is asked for (click's "Lazily Loading Subcommands"). With ``summaries``
    (``name -> one-line help``) the group's own --help lists them without importing any."""

    def __init__(
        self,
        *args: Any,
        lazy: dict[str, str] | None = None,
        summaries: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}
        self.summaries = summaries or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _sep, attribute = self.lazy[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not self.summaries:
            return super().format_commands(ctx, formatter)
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        # A command's summary shortened as click shortens its help (the first sentence, to the width).
        rows = [(n, click.Command(n, help=self.summaries[n]).get_short_help_str(limit)) for n in names]
        with formatter.section(_("Commands")):
            formatter.write_dl(rows)


class PrefkitGroup(LazyGroup):
    """The ``prefkit`` group: every :class:`PrefkitError` becomes one line on stderr and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except Exception as exc:
            # Here, not at the top: --help starts without pydantic; a command that raised loaded it.
            from prefkit.schemas.common import PrefkitError, disk_full

            if isinstance(exc, PrefkitError):
                click.echo(f"error: {exc}", err=True)
                sys.exit(1)
            if not disk_full(exc):
                raise
            # Every write is a transaction or a staged directory: what failed was rolled back or removed.
            first = " ".join(str(exc).split())[:160] or type(exc).__name__
            click.echo(
                f"error: a write failed (disk full, file-size limit or I/O error): {first}; nothing of "
                "this command was kept; free space (or set PREFKIT_TMPDIR) and run it again",
                err=True,
            )
            sys.exit(1)
