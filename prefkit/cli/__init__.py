"""The ``prefkit`` command line: nouns with verb subcommands, a thin shell over library functions."""

from __future__ import annotations

import click

from prefkit import __version__
from prefkit.cli import (  # noqa: F401  access_cmds adds to the users and tasks groups
    access_cmds,
    agreement_cmds,
    alpsbench_cmds,
    annotate_cmds,
    assist_cmds,
    cost_cmds,
    demo_cmds,
    eval_cmds,
    generate_cmds,
    ingest_cmds,
    labelstudio_cmds,
    llm_cmds,
    memories_cmds,
    project_cmds,
    release_cmds,
    store_cmds,
)
from prefkit.cli.common import PrefkitGroup


@click.group(
    cls=PrefkitGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="prefkit")
def cli() -> None:
    """prefkit: build human-verified personalization benchmarks for LLMs.

    Example: prefkit init my-bench && prefkit status --project my-bench
    """


for command in (
    demo_cmds.demo,
    demo_cmds.examples,
    project_cmds.init,
    project_cmds.status,
    project_cmds.schema,
    project_cmds.import_,
    project_cmds.export,
    annotate_cmds.users,
    annotate_cmds.tasks,
    annotate_cmds.batches,
    annotate_cmds.annotate,
    labelstudio_cmds.labelstudio,
    release_cmds.release,
    release_cmds.adjudicate,
    agreement_cmds.agreement,
    agreement_cmds.labels,
    cost_cmds.cost,
    generate_cmds.generate,
    llm_cmds.llm,
    ingest_cmds.ingest,
    memories_cmds.memories,
    eval_cmds.eval_,
    assist_cmds.suggest,
    store_cmds.store,
):
    cli.add_command(command)

annotate_cmds.tasks.add_command(alpsbench_cmds.build_alpsbench)


def main() -> None:
    cli()
