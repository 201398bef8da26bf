"""The ``prefkit`` command line: nouns with verb subcommands, a thin shell over library functions.

Each command's module is imported only when that command (or its --help) runs: ``prefkit --help``
lists the commands from :data:`COMMANDS` alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from prefkit import __version__
from prefkit.cli.group import PrefkitGroup

#: Every command of ``prefkit``: the module of prefkit/cli/ it lives in (``<name>_cmds``, one per command) with
#: its attribute, and its summary, the first sentence of its docstring, which ``prefkit --help`` lists
#: without importing the command. Generated from the commands by ``python docs/cli_reference.py --write``
#: (``make check`` fails when it drifts).
COMMANDS: dict[str, list[str]] = json.loads(
    (Path(__file__).parent / "commands.json").read_text(encoding="utf-8")
)


@click.group(
    cls=PrefkitGroup,
    lazy={name: f"prefkit.cli.{where}" for name, (where, _summary) in COMMANDS.items()},
    summaries={name: summary for name, (_where, summary) in COMMANDS.items()},
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="prefkit")
def cli() -> None:
    """prefkit: build human-verified personalization benchmarks for LLMs.

    Example: prefkit init my-bench && prefkit status --project my-bench
    """


def main() -> None:
    cli()
