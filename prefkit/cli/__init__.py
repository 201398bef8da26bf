"""The ``prefkit`` command line: nouns with verb subcommands, a thin shell over library functions.

Each command's module is imported only when that command (or its --help) runs: ``prefkit --help``
lists the commands from :data:`COMMANDS` alone.
"""

from __future__ import annotations

import click

from prefkit import __version__
from prefkit.cli.group import PrefkitGroup

#: Every command of ``prefkit``: where it lives in prefkit/cli/ (``module:attribute``) and its summary,
#: the first sentence of its help, which ``prefkit --help`` lists (tests/test_startup.py keeps each
#: the command's own).
COMMANDS = {
    "adjudicate": ("release_cmds:adjudicate", "The adjudication queue and a maintainer's decisions."),
    "agreement": (
        "agreement_cmds:agreement",
        "Krippendorff's α with a bootstrap CI, AC1, percent agreement and pairwise κ per task kind and "
        "field.",
    ),
    "annotate": ("annotate_cmds:annotate", "The browser annotation app."),
    "audit": (
        "audit_cmds:audit",
        "The audit log: who added, disabled, unlocked people, changed work and cut releases, and when.",
    ),
    "batches": ("annotate_cmds:batches", "Batches of tasks: only tasks of open batches are handed out."),
    "cost": (
        "cost_cmds:cost",
        "LLM dollars and tokens per stage, annotator minutes per task kind (capped at [annotation] "
        "time_cap_s), both per verified unit (CUPID instances, sessions, gold memories, matching pairs), "
        "and per batch the days the remaining labels take at the team's recent pace.",
    ),
    "crowd": (
        "crowd_cmds:crowd",
        "Crowd studies: participants from a recruiting platform, paid by what they did and how well.",
    ),
    "demo": (
        "demo_cmds:demo",
        "Build a demo project offline (no API key) and serve the annotation app on it.",
    ),
    "eval": (
        "eval_cmds:eval_",
        "Evaluate models on a release: CUPID inference/generation and AlpsBench tasks 1-4.",
    ),
    "examples": (
        "demo_cmds:examples",
        "Copy the example inputs into DEST (default: examples): AlpsBench packets (alpsbench/), a small "
        "synthetic WildChat-format file (wildchat/sample.jsonl), the labels of the README's tour "
        "(labels.jsonl) and the inputs of docs/agreement.md (agreement/) and docs/release.md (release/).",
    ),
    "export": ("exchange_cmds:export", "Export project content in the published formats."),
    "generate": (
        "generate_cmds:generate",
        "Synthesize a CUPID-style benchmark into the project: every stage, or only STAGE.",
    ),
    "import": (
        "exchange_cmds:import_",
        "Import data in the real published formats (all-or-nothing; re-import is a no-op).",
    ),
    "ingest": ("ingest_cmds:ingest", "Ingest raw dialogue datasets into the project."),
    "init": (
        "project_cmds:init",
        "Create a project directory (config, database, guidelines) at PATH ($PREFKIT_PROJECT, else the "
        "current directory), like every other command finds it.",
    ),
    "kinds": (
        "kinds:kinds",
        "Task kinds: built in, from installed packages, and declared by the project in kinds/NAME.toml.",
    ),
    "labels": ("agreement_cmds:labels", "Label events in and out of a project as JSONL or CSV."),
    "labelstudio": (
        "labelstudio_cmds:labelstudio",
        "Use a Label Studio server for labelling; labels come back as prefkit label events.",
    ),
    "llm": ("llm_cmds:llm", "The LLM layer's ledger: calls, cache hits, failures, tokens, cost, batches."),
    "memories": (
        "memories_cmds:memories",
        "Structured user memories (AlpsBench MemoryItem format): extraction and evidence checks.",
    ),
    "release": (
        "release_cmds:release",
        "Gate, cut, verify and compare releases (releases/X.Y.Z/ in the project).",
    ),
    "schema": ("project_cmds:schema", "JSON Schemas of prefkit's record types."),
    "status": (
        "status_cmds:status",
        "Counts per stage: personas, sessions, turns, instances, memories, tasks, labels.",
    ),
    "store": (
        "store_cmds:store",
        "The project's database: move it to PostgreSQL (or back to a SQLite file).",
    ),
    "suggest": (
        "assist_cmds:suggest",
        "Suggest a label for every task of KIND, shown to annotators on the assisted arm only.",
    ),
    "tasks": ("annotate_cmds:tasks", "Annotation tasks built from the project's content."),
    "users": (
        "annotate_cmds:users",
        "Accounts that sign in to the annotation app (annotators and maintainers).",
    ),
}


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
