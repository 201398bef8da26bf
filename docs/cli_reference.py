"""Generate docs/cli.md, the CLI reference, from the commands themselves, so it cannot drift.

Run ``python docs/cli_reference.py --write`` after changing a command; ``--check`` (the static step of
``make check`` and ``make test``) exits 1 when docs/cli.md is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

REFERENCE = Path(__file__).resolve().parent / "cli.md"
HEADER = """# CLI reference

Every `prefkit` command with its options, generated from the commands (`python docs/cli_reference.py
--write`; `make check` fails when this page drifts). The tours in the [README](../README.md) show the
commands in use.
"""


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name in sorted(group.list_commands(click.Context(group))):
        cmd = group.get_command(click.Context(group), name)
        assert cmd is not None, f"prefkit {' '.join((*path, name))} is listed but cannot be loaded"
        yield (*path, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))


def render() -> str:
    from prefkit.cli import cli

    parts = [HEADER]
    for path, cmd in _commands(cli):
        if isinstance(cmd, click.Group):
            continue
        ctx = click.Context(
            cmd,
            info_name="prefkit " + " ".join(path),
            help_option_names=["-h", "--help"],
            max_content_width=100,
        )
        parts.append(f"## `prefkit {' '.join(path)}`\n\n```\n{cmd.get_help(ctx)}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    new = render()
    current = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    if "--write" in sys.argv:
        REFERENCE.write_text(new, encoding="utf-8")
    elif new != current:
        sys.exit("docs/cli.md is out of date: run python docs/cli_reference.py --write")
