"""``prefkit ingest``: bring raw real-world dialogues into a project (WildChat-1M)."""

from __future__ import annotations

from pathlib import Path

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, flag, json_option, shown
from prefkit.cli.types import NON_NEGATIVE_INT, POSITIVE_FLOAT, POSITIVE_INT, SafePath
from prefkit.curation.project import Project
from prefkit.pipelines.ingest.wildchat import FILTERS, WildChatFilters, check_work_dir, ingest_wildchat


@click.group()
def ingest() -> None:
    """Ingest raw dialogue datasets into the project.

    Example: prefkit ingest wildchat wildchat/*.parquet --project my-bench
    """


@ingest.command("wildchat")
@click.argument("paths", nargs=-1, required=True, type=SafePath(exists=True))
@click.option(
    "--language",
    "languages",
    multiple=True,
    default=("English",),
    show_default=True,
    help="Keep conversations in this language (repeatable).",
)
@click.option("--any-language", is_flag=True, help="Keep every language.")
@shown("--min-turns", POSITIVE_INT, 6, "Fewest turns per conversation.")
@shown("--max-turns", POSITIVE_INT, 249, "Most turns per conversation.")
@shown(
    "--turn-unit",
    ["messages", "exchanges"],
    "messages",
    "What a turn is: a message (user or assistant; AlpsBench's 6-249) or a user-assistant exchange "
    "(WildChat's `turn` field).",
)
@shown(
    "--min-user-chars",
    NON_NEGATIVE_INT,
    2,
    "Every user message must have at least this many non-blank characters.",
)
@click.option("--keep-toxic", is_flag=True, help="Keep conversations WildChat marks toxic.")
@click.option("--keep-redacted", is_flag=True, help="Keep conversations with redacted PII.")
@flag("--keep-flagged", "Keep conversations with an OpenAI-moderation-flagged turn.")
@click.option("--keep-duplicates", is_flag=True, help="Keep repeated conversations of the same user.")
@shown(
    "--max-gap-hours",
    POSITIVE_FLOAT,
    72.0,
    "A longer pause between a user's conversations starts a new sequence.",
)
@shown("--min-sequence", POSITIVE_INT, 2, "Fewer conversations than this stay one-conversation sequences.")
@flag("--skip-bad", "Skip malformed lines (listed in --rejects) instead of stopping.")
@shown(
    "--rejects",
    SafePath(dir_okay=False),
    "wildchat-rejects.jsonl",
    "Where --skip-bad lists the skipped lines.",
)
@flag(
    "--follow-symlinks", "Read symbolic links in a given directory that lead out of it (refused by default)."
)
@click.option("--no-progress", is_flag=True, help="No progress bars.")
@json_option
@project_option
def wildchat(
    project: Project,
    paths,
    languages,
    any_language,
    skip_bad,
    rejects,
    follow_symlinks,
    no_progress,
    as_json,
    **flags,
) -> None:
    """Import WildChat-1M conversations (JSONL, JSONL.gz or Parquet shards) as user sequences.

    Conversations are filtered (each filter's removals are reported), grouped per user (hashed IP +
    user agent, chronological, split at long pauses) and written as dialogues with their source file,
    row and conversation hash, under the ODC-BY licence. Strict by default: the first malformed line
    stops the run, naming file and line, and nothing is written.

    Example: prefkit ingest wildchat data/train-00000-of-00014.parquet --language English --max-gap-hours 48
    """
    f = WildChatFilters(
        languages=() if any_language else tuple(languages),
        min_turns=flags["min_turns"],
        max_turns=flags["max_turns"],
        turn_unit=flags["turn_unit"],
        min_user_chars=flags["min_user_chars"],
        drop_toxic=not flags["keep_toxic"],
        drop_redacted=not flags["keep_redacted"],
        drop_flagged=not flags["keep_flagged"],
        drop_duplicates=not flags["keep_duplicates"],
        max_gap_hours=flags["max_gap_hours"],
        min_sequence=flags["min_sequence"],
    )
    work_dir = Path(project.env.tmpdir) if project.env.tmpdir else None  # $PREFKIT_TMPDIR
    if work_dir is not None:
        check_work_dir(work_dir, "PREFKIT_TMPDIR")  # checked before anything is read
    report = ingest_wildchat(
        project.store,
        [Path(p) for p in paths],
        f,
        skip_bad=skip_bad,
        rejects_path=Path(rejects),
        progress=not (as_json or no_progress),
        work_dir=work_dir,
        follow_symlinks=follow_symlinks,
    )
    if as_json:
        echo_json(report.as_dict())
        return
    click.echo(f"read {report.rows} rows from {len(report.files)} file(s)")
    if report.rejected:
        click.echo(f"skipped {report.rejected} malformed row(s), listed in {report.rejects_file}")
    echo_table([{"filter": name, "removed": report.removed[name]} for name in FILTERS])
    click.echo(f"(turns counted as {report.turn_unit})")
    click.echo(f"kept {report.kept} conversations in {report.sequences} sequences")
    for formed_by, n in report.formed.items():
        click.echo(f"  {formed_by}: {n}")
    if report.already_imported:
        click.echo(f"already imported as {report.source_id}; nothing written")
    else:
        click.echo(
            f"wrote {report.dialogues_written} dialogues ({report.turns_written} turns) as {report.source_id}"
        )
