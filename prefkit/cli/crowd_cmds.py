"""``prefkit crowd``: studies whose participants come from a recruiting platform (Prolific), and the
review that decides approval and bonuses from what prefkit measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from prefkit.cli.args import KindChoice, project_option
from prefkit.cli.common import echo_json, echo_table, json_option, shell_actor, shown
from prefkit.cli.types import (
    FRACTION,
    NON_NEGATIVE_FLOAT,
    NON_NEGATIVE_INT,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    SHARE_BELOW_ONE,
    SafePath,
)
from prefkit.curation.annotation import studies
from prefkit.curation.project import Project
from prefkit.curation.quality.study_report import StudyReport, platform_files, study_report

BASE_URL_HELP = "Where participants reach the app (prefkit annotate serve behind your HTTPS proxy)."


@click.group()
def crowd() -> None:
    """Crowd studies: participants from a recruiting platform, paid by what they did and how well.

    Example: prefkit crowd report pilot-1
    """


@crowd.group()
def study() -> None:
    """Create and list studies, and replace a study's entry link.

    Example: prefkit crowd study list
    """


@study.command("create")
@click.argument("study_id")
@click.option("--kind", type=KindChoice(), required=True, help="Task kind participants label.")
@click.option("--batch", required=True, help="Batch the items come from.")
@click.option("--items", type=POSITIVE_INT, required=True, help="Items per participant (gold included).")
@shown("--gold-share", SHARE_BELOW_ONE, 0.2, "Share of the items that are gold items (the attention checks).")
@shown("--screen-below", FRACTION, 0.5, "Gold accuracy below which a participant is screened out.")
@click.option("--completion-code", required=True, help="Code a participant gets after the last item.")
@click.option("--screened-out-code", required=True, help="Code a screened-out participant gets.")
@click.option(
    "--completion-url", help="Where participants go back; {code} is replaced (default: Prolific's)."
)
@shown(
    "--time-limit",
    POSITIVE_FLOAT,
    60,
    "Minutes after arrival when unfinished items go back to the pool.",
    "time_limit_minutes",
)
@click.option(
    "--platform", type=click.Choice(sorted(studies.PLATFORMS)), default="prolific", show_default=True
)
@shown("--reward", NON_NEGATIVE_FLOAT, 0.0, "Pay of one approved submission (for the cost).")
@click.option("--currency", default="GBP", show_default=True, help="Currency of the reward and bonuses.")
@shown(
    "--bonus-per-item",
    NON_NEGATIVE_FLOAT,
    0.0,
    "Bonus per agreed item (an item whose verified label is the participant's).",
)
@shown(
    "--bonus-scale",
    ["reliability", "flat"],
    "reliability",
    "Scale the bonus by the participant's reliability, or not.",
)
@click.option(
    "--too-fast",
    "too_fast_s",
    type=NON_NEGATIVE_FLOAT,
    default=None,
    help="A minimum median of seconds per item, stated to participants on their first page and "
    "then a reason to reject (default: none; speed then only counts as a statistical outlier).",
)
@shown(
    "--straight-line", FRACTION, 0.9, "Flag a participant giving one answer on at least this share of items."
)
@shown("--places", NON_NEGATIVE_INT, 0, "Participants the study takes, as on the platform (0: no limit).")
@shown(
    "--min-answered",
    FRACTION,
    1.0,
    "Share of the regular items served to answer (a skip or flag is none); fewer: incomplete, no code.",
)
@shown("--model", ["dawid_skene", "mace"], "dawid_skene", "The reliability model the review fits.", "method")
@click.option("--base-url", default="http://localhost:8501", show_default=True, help=BASE_URL_HELP)
@click.option("--name", help="The title participants see (default: the task kind's title).")
@project_option
def create(project: Project, study_id: str, **options: Any) -> None:
    """Create a study and print its entry URL, to paste into the platform as the study's URL.

    Example: prefkit crowd study create pilot-1 --kind preference_match --batch week1 --items 20
    --gold-share 0.2 --screen-below 0.5 --completion-code C1A2B3 --screened-out-code S9X8
    --time-limit 45 --reward 2.25 --bonus-per-item 0.05 --base-url https://annotate.example.org
    """
    rules = studies.Rules(**{k: options.pop(k) for k in studies.Rules.__dataclass_fields__})
    made = studies.create_study(project, study_id, rules=rules, actor=shell_actor(), **options)
    s, platform_title = made.study, studies.PLATFORMS[made.study.platform].title
    click.echo(
        f"Study {s.study_id}: {s.kind}, batch {s.batch_id}, {s.items} items per participant "
        f"({made.n_gold} gold as attention checks; screened out below {s.screen_below:g} on them), "
        f"{s.time_limit_minutes:g} minutes."
    )
    click.echo(f"Entry URL (the study's URL on {platform_title}; shown once, the project keeps only a hash):")
    click.echo(f"  {made.entry_url}")
    back = studies.return_url(s, s.completion_code)
    click.echo(f"Completion code {s.completion_code}" + (f" ({back})" if back else ""))
    out = studies.return_url(s, s.screened_out_code)
    click.echo(f"Screened-out code {s.screened_out_code}" + (f" ({out})" if out else ""))


@study.command("list")
@json_option
@project_option
def list_(project: Project, as_json: bool) -> None:
    """The project's studies with their settings and participants.

    Example: prefkit crowd study list --json
    """
    rows = [
        {
            "study": s.study_id,
            "kind": s.kind,
            "batch": s.batch_id,
            "platform": s.platform,
            "items": s.items,
            "gold_share": s.gold_share,
            "screen_below": s.screen_below,
            "time_limit_min": s.time_limit_minutes,
            "participants": len(project.store.studies.participants(s.study_id)),
            "created_at": s.created_at,
        }
        for s in project.store.studies.studies()
    ]
    echo_json(rows) if as_json else echo_table(rows)


@study.command("new-link")
@click.argument("study_id")
@click.option("--base-url", default="http://localhost:8501", show_default=True, help=BASE_URL_HELP)
@project_option
def new_link(project: Project, study_id: str, base_url: str) -> None:
    """Replace the study's entry secret and print the new entry URL (the old one stops working;
    participants who arrived keep their place when they come back through the new one).

    Example: prefkit crowd study new-link pilot-1 --base-url https://annotate.example.org
    """
    click.echo(studies.new_link(project, study_id, base_url, actor=shell_actor()))


def _report_lines(report: StudyReport) -> None:
    click.echo(f"Study {report.study_id}: {report.kind}, batch {report.batch_id} ({report.platform})")
    echo_table(
        [
            {
                "participant": r.platform_id,
                "status": r.status,
                "items": r.items,
                "minutes": f"{r.minutes:.1f}",
                "median_s": r.median_s,
                "gold": "—" if r.gold_accuracy is None else f"{r.gold_accuracy:.2f} of {r.gold_n}",
                "reliability": "—" if r.reliability is None else f"{r.reliability:.3f}",
                "agreed": r.agreed,
                "self_alpha": "—" if r.self_alpha is None else f"{r.self_alpha:.3f}",
                "skipped": r.skipped,
                "flagged": r.flagged,
                "decision": r.decision,
                "bonus": f"{r.bonus:.2f}",
                "reason": r.reason + (f" (flag: {r.self_flag})" if r.self_flag else ""),
            }
            for r in report.participants
        ]
    )
    t, cur = report.totals, report.currency
    per = "—" if t["cost_per_verified_item"] is None else f"{cur} {t['cost_per_verified_item']:.4f}"
    click.echo("")
    click.echo(
        f"{t['participants']} participant(s): {t['completed']} completed, {t['screened_out']} screened out, "
        f"{t['incomplete']} incomplete, {t['timed_out']} timed out, {t['active']} working. Suggested: approve {t['approve']}, "
        f"reject {t['reject']}."
    )
    click.echo(
        f"Cost {cur} {t['cost']:.2f} (rewards {t['rewards']:.2f} + bonuses {t['bonuses']:.2f}) over "
        f"{t['verified_items']} verified item(s): {per} each."
    )


@crowd.command()
@click.argument("study_id")
@click.option(
    "--out", type=SafePath(file_okay=False), help="Write decisions.csv, approve.txt and bonuses.csv here."
)
@json_option
@project_option
def report(project: Project, study_id: str, out: str | None, as_json: bool) -> None:
    """Per participant: items, minutes, gold accuracy, reliability, flags, a suggested decision
    with its reason and a bonus; the study's cost per verified item. With --out, the files the
    platform's bulk approve and bulk bonus take.

    Example: prefkit crowd report pilot-1 --out review/
    """
    found = study_report(project, study_id)
    written = []
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in platform_files(found).items():
            (folder / name).write_text(text, encoding="utf-8")
            written.append(str(folder / name))
    if as_json:
        echo_json(found)
        return
    _report_lines(found)
    for path in written:
        click.echo(f"wrote {path}")
