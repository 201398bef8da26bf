"""Generate the README's CLI reference from the commands themselves, so it cannot drift.

Run ``python docs/cli_reference.py --write`` after changing a command; ``tests/test_docs.py`` fails
when README.md is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

START = "<!-- cli-reference:start -->"
END = "<!-- cli-reference:end -->"
README = Path(__file__).resolve().parent.parent / "README.md"


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name in sorted(group.commands):
        cmd = group.commands[name]
        yield (*path, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))


def render() -> str:
    from prefkit.cli import cli

    parts = []
    for path, cmd in _commands(cli):
        if isinstance(cmd, click.Group):
            continue
        ctx = click.Context(
            cmd,
            info_name="prefkit " + " ".join(path),
            help_option_names=["-h", "--help"],
            max_content_width=100,
        )
        help_text = cmd.get_help(ctx).replace("Usage: prefkit", "Usage: prefkit", 1)
        parts.append(f"#### `prefkit {' '.join(path)}`\n\n```\n{help_text}\n```\n")
    return "\n".join(parts)


def updated_readme(text: str) -> str:
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n\n{render()}\n{END}{tail}"


if __name__ == "__main__":
    current = README.read_text(encoding="utf-8")
    new = updated_readme(current)
    if "--write" in sys.argv:
        README.write_text(new, encoding="utf-8")
    elif new != current:
        sys.exit("README.md CLI reference is out of date: run python docs/cli_reference.py --write")
