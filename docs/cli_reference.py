"""Generate docs/cli.md, the CLI reference, and prefkit/cli/commands.json, the command list ``prefkit
--help`` prints without importing a command, from the commands themselves, so neither can drift.

Run ``python docs/cli_reference.py --write`` after changing a command; ``--check`` (the static step of
``make check`` and ``make test``) exits 1 when either is out of date. Each command lives in
``prefkit/cli/<name>_cmds.py`` as the attribute ``<name>`` (``<name>_`` where that is a Python word).
"""

from __future__ import annotations

import importlib
import json
import keyword
import sys
from pathlib import Path

import click

REFERENCE = Path(__file__).resolve().parent / "cli.md"
CLI = Path(__file__).resolve().parents[1] / "prefkit" / "cli"
LISTING = CLI / "commands.json"
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


def discover() -> dict[str, tuple[str, click.Command]]:
    """Each command found in prefkit/cli/: its name, ``module:attribute`` and the command."""
    found = {}
    for path in sorted(CLI.glob("*_cmds.py")):
        name = path.stem.removesuffix("_cmds")
        attribute = name + "_" if keyword.iskeyword(name) or name == "eval" else name
        cmd = getattr(importlib.import_module(f"prefkit.cli.{path.stem}"), attribute)
        found[cmd.name or name] = (f"{path.stem}:{attribute}", cmd)
    return found


def listing(found: dict[str, tuple[str, click.Command]] | None = None) -> str:
    """commands.json: each command's ``module:attribute`` and its summary (as click shortens its help)."""
    found = discover() if found is None else found
    commands = {name: [where, cmd.get_short_help_str(limit=10**6)] for name, (where, cmd) in found.items()}
    return json.dumps(commands, indent=1, ensure_ascii=False) + "\n"


def render(found: dict[str, tuple[str, click.Command]] | None = None) -> str:
    found = discover() if found is None else found
    parts = [HEADER]
    for path, cmd in _commands(click.Group("prefkit", {name: cmd for name, (_where, cmd) in found.items()})):
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
    found = discover()
    for target, new in ((LISTING, listing(found)), (REFERENCE, render(found))):
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if "--write" in sys.argv:
            target.write_text(new, encoding="utf-8")
        elif new != current:
            sys.exit(f"{target.name} is out of date: run python docs/cli_reference.py --write")
