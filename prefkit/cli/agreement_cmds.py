"""``prefkit agreement``: agreement per task kind and field, with the annotators' tables."""

from __future__ import annotations

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, flag, json_option, shown
from prefkit.cli.types import ANY_INT, POSITIVE_INT, FiniteFloat
from prefkit.curation.project import Project
from prefkit.curation.quality.agreement import agreement_rows, annotator_stats, within_rows
from prefkit.curation.quality.suggestions import assist_report, difference_lines, report_rows

_TABLE = """task_kind field comparison judge n_units n_raters alpha ci p_below_min ac1 percent_agreement
    mean_pairwise_kappa""".split()


_ANNOTATOR_TABLE = """annotator task_kind n_labels loo_agreement gold_accuracy mean_time_s reliability
    self_alpha outlier_reason""".split()
_WITHIN_TABLE = "annotator task_kind field n_pairs alpha ci flagged".split()


def _fmt(value) -> str | None:
    return f"{value:.3f}" if isinstance(value, float) else value


def _ci(ci: list[float] | None) -> str | None:
    return None if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _agreement_table(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        shown = {k: _fmt(r.get(k)) for k in _TABLE}
        shown["ci"] = _ci(None if r["ci_low"] is None else [r["ci_low"], r["ci_high"]])
        out.append(shown)
    return out


def echo_confusion(rows: list[dict]) -> None:
    """Each annotator's confusion matrix per field: a row per true value, a column per value said,
    P(said | truth) under the reliability model."""
    for r in rows:
        for field, matrix in sorted(r["confusion"].items()):
            said = list(matrix)  # the true values' order, so the diagonal is the right answers
            said += sorted({k for probs in matrix.values() for k in probs} - set(said))
            click.echo("")
            click.echo(
                f"{r['annotator']} on {r['task_kind']}.{field} (rows: true value; columns: what they said)"
            )
            echo_table(
                [
                    {"truth": truth, **{k: f"{probs.get(k, 0.0):.3f}" for k in said}}
                    for truth, probs in matrix.items()
                ],
                ["truth", *said],
            )


@click.command()
@click.option("--kind", help="Only this task kind (default: every kind with labels).")
@click.option("--batch", help="Only tasks of this batch (default: all batches).")
@shown("--boot", POSITIVE_INT, 1000, "Bootstrap replicates.", "n_boot")
@click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--judge", "judges", multiple=True, help="Annotator name of an LLM judge (repeatable).")
@click.option(
    "--alpha-min",
    type=FiniteFloat(min=-1.0, max=1.0),
    help="α threshold for p_below_min (default: [release] alpha_min).",
)
@flag(
    "--annotators",
    "Per-annotator statistics instead, with the reliability and confusion matrices of a "
    "Dawid-Skene model ([release] consensus = mace: MACE).",
)
@click.option("--assist", is_flag=True, help="Compare labels made with and without a suggestion on screen.")
@flag(
    "--by-guidelines", "Every row once per version of the kind's guidelines, over the labels made under it."
)
@flag(
    "--within",
    "Each annotator's α with their own repeats of items, per kind and field ([release] self_alpha_min).",
)
@json_option
@project_option
def agreement(project: Project, kind, batch, n_boot, seed, judges, alpha_min, as_json, **table: bool) -> None:
    """Krippendorff's α with a bootstrap CI, AC1, percent agreement and pairwise κ per task kind and field.

    Judges (--judge NAME, or labels imported with --judge) get judge-vs-human rows. --assist compares
    the assisted and control arms of suggestions (time on item, agreement with gold and adjudicated
    labels, α, the anchoring rate). --within measures each annotator against themselves on the items
    shown to them again ([annotation] repeat_share).

    --by-guidelines repeats every row per guidelines version (prefkit guidelines list): did a
    clarification help?

    Example: prefkit agreement --kind preference_match --boot 1000 --seed 0 --json
    """
    release = project.config.release
    if table["assist"]:
        echo_assist(assist_report(project.store, kind=kind, n_boot=n_boot, seed=seed), as_json)
        return
    if table["within"]:
        echo_within(within_rows(project.store, kind, n_boot, seed, release.self_alpha_min), as_json, seed)
        return
    if table["annotators"]:
        rows = annotator_stats(
            project.store,
            kind=kind,
            judges=judges,
            gold_min=release.gold_accuracy_min,
            fast_s=project.config.annotation.fast_item_s,
            self_alpha_min=release.self_alpha_min,
        )
        if as_json:
            echo_json(rows)
        else:
            echo_table([{k: _fmt(r[k]) for k in _ANNOTATOR_TABLE} for r in rows], _ANNOTATOR_TABLE)
            if rows:
                click.echo(
                    f"reliability: P(label right) under a {rows[0]['reliability_model']} model fitted on every "
                    "label of the kind, gold included"
                )
                echo_confusion(rows)
        return
    threshold = release.alpha_min if alpha_min is None else alpha_min
    rows = agreement_rows(
        project.store,
        kind=kind,
        batch=batch,
        n_boot=n_boot,
        seed=seed,
        alpha_min=threshold,
        judges=judges,
        by_guidelines=table["by_guidelines"],
    )
    if as_json:
        echo_json(rows)
        return
    head = ["guidelines_version", *_TABLE] if table["by_guidelines"] else _TABLE
    echo_table(
        [
            {"guidelines_version": r.get("guidelines_version") or "none", **t}
            for r, t in zip(rows, _agreement_table(rows), strict=True)
        ],
        head,
    )
    if rows:
        click.echo(
            f"CI: {rows[0]['ci_method']} (seed {seed}); p_below_min = share of replicates with α < "
            + (
                f"{threshold}"
                if not isinstance(threshold, dict)
                else "the row's alpha_min ([release] alpha_min)"
            )
        )


def echo_within(rows: list[dict], as_json: bool, seed: int) -> None:
    """``prefkit agreement --within``: each annotator's α with their own repeats, per kind and field."""
    shown = [
        {**r, "alpha": _fmt(r["alpha"]), "ci": _ci(r["ci"]), "flagged": "flagged" if r["flagged"] else None}
        for r in rows
    ]
    echo_table(rows if as_json else shown, _WITHIN_TABLE, as_json=as_json)
    if rows and not as_json:
        click.echo(
            f"α of each annotator's first answers with their repeats; flagged: α < {rows[0]['alpha_min']} "
            f"([release] self_alpha_min, a flag, not a gate); CI: {rows[0]['ci_method']} (seed {seed})"
        )


def echo_assist(report, as_json: bool) -> None:
    """``prefkit agreement --assist``: both arms per kind, the anchoring difference, the protocol."""
    if as_json:
        echo_json(report.as_dict())
        return
    rows = report_rows(report)
    if not rows:
        click.echo("no label records an arm: no item with a suggestion was labelled (prefkit suggest)")
        return
    echo_table(rows)
    for line in difference_lines(report):
        click.echo(line)
    click.echo(f"protocol: {report.protocol}; {report.n_boot} replicates (seed {report.seed})")
