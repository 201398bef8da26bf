"""``prefkit eval``: run models on a release (CUPID, AlpsBench), score predictions, report runs; and
``prefkit tasks pairs from-eval``: a run's judged pairs back to annotators."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from prefkit.cli.annotate_cmds import tasks_pairs
from prefkit.cli.common import echo_json, echo_table, json_option, plain, project_option
from prefkit.cli.types import ANY_INT, POSITIVE_INT, SafePath

if TYPE_CHECKING:
    from prefkit.curation.project import Project

TABLES = {
    "inference": ["task", "group", "n_instances", "n_inferred", "n_empty", "n_failed", "gold_items",
                  "inferred_items", "precision", "recall", "f1"],
    "generation": ["task", "group", "n_instances", "n_scored", "n_failed", "n_missing", "mean"],
    "task1": ["task", "group", "n_rows", "n_missing", "n_failed", "n_pred", "n_gold", "matched", "precision",
              "recall", "f1", "mean_pair_score"],
    "task2": ["task", "group", "n_rows", "n_gold", "correct", "accuracy", "matched", "precision", "recall", "f1"],
    "task3": ["task", "group", "n_rows", "n_missing", "n_failed", "correct", "accuracy"],
    "task4": ["task", "group", "n_rows", "n_missing", "n_failed", "n_scored", "mean_score", "fact_match_rate"],
}  # fmt: skip


@click.group("eval")
def eval_() -> None:
    """Evaluate models on a release: CUPID inference/generation and AlpsBench tasks 1-4."""


def run_options(fn):
    """Flags shared by ``eval cupid`` and ``eval alpsbench``."""
    options = [
        click.option("--release", "release", required=True, type=SafePath(exists=True),
                     help="Release directory (releases/X.Y.Z), or a CUPID JSONL file."),
        click.option("--model", help="Model to evaluate (the `assistant` role); not needed with --predictions."),
        click.option("--judge-model", help="Judge model (default: [llm.models] judge)."),
        click.option("--predictions", type=SafePath(dir_okay=False, exists=True),
                     help="Score this predictions file instead of running a model."),
        click.option("--limit", type=POSITIVE_INT, help="Only the first N items (by key)."),
        click.option("--backend", type=click.Choice(["offline", "openai"]),
                     help="LLM backend (default: [llm] backend); offline results are marked offline."),
        click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Seed (offline backend, cache key)."),
        click.option("--estimate", is_flag=True, help="Price the run with the configured models; make no call."),
        json_option,
        project_option,
    ]  # fmt: skip
    return functools.reduce(lambda f, opt: opt(f), reversed(options), fn)


def _layer(project: Project, model, judge_model, backend, seed, as_json):
    from prefkit.pipelines.eval import eval_llm_config
    from prefkit.pipelines.llm import LLMLayer

    backend = backend or project.config.llm.backend
    cfg = eval_llm_config(project.config.llm, model, judge_model)
    return LLMLayer(
        project.store, llm_config=cfg, backend=backend, seed=seed, progress=not as_json, env=project.env
    )


def _print_estimate(est, as_json: bool) -> None:
    if as_json:
        echo_json({"estimate": est.as_dict()})
        return
    d = est.as_dict()
    click.echo(f"estimate: {d['calls']} calls ({d['cached']} cached), {d['prompt_tokens']} prompt + "
               f"{d['completion_tokens']} completion tokens, ${d['cost_usd']:.4f}")  # fmt: skip
    if d["unpriced"]:
        click.echo(f"no price configured for: {', '.join(d['unpriced'])} (add them under [llm.costs])")


def _print_result(project: Project, result, as_json: bool) -> None:
    from prefkit.pipelines.eval import judge_validation
    from prefkit.pipelines.eval.report import judge_line

    run = result.run
    judge = None
    if run.judge_model:
        judge = judge_validation(project.store, run.judge_model, project.config.release.judge_alpha_min)
    if as_json:
        echo_json({"run": run, "rows": result.rows, "judge": judge,
                   "model_failures": result.model_failures, "judge_failures": result.judge_failures})  # fmt: skip
        return
    tasks = {r["task"] for r in result.rows}
    for task in [t for t in TABLES if t in tasks]:
        echo_table([r for r in result.rows if r["task"] == task], TABLES[task])
    by_pos = [r for r in result.rows if r["task"] == "inference_by_position"]
    if by_pos:
        click.echo("F1 by sessions before the request of the most recent relevant session: "
                   + ", ".join(f"{r['group']}: {r['f1']}" for r in by_pos))  # fmt: skip
    if run.offline:
        click.echo("offline backend: deterministic stand-in answers, not a model's score")
    if judge:
        click.echo(judge_line(judge, markdown=False))
    if result.model_failures or result.judge_failures:
        click.echo(f"{result.model_failures} model call(s) and {result.judge_failures} judge call(s) failed "
                   "(counted as failed); run the same command again to retry them")  # fmt: skip
    click.echo(f"run {run.run_id}; report: prefkit eval report {run.run_id}")


@eval_.command("cupid")
@click.option("--config", "config_name", default="cupid", show_default=True,
              help="Release config to evaluate (the verified instances by default).")  # fmt: skip
@click.option("--task", type=click.Choice(["inference", "generation"]), default="inference", show_default=True,
              help="inference: state the user's preference; generation: answer the request.")  # fmt: skip
@click.option("--oracle", type=click.Choice(["none", "relevant", "gold"]), default="none", show_default=True,
              help="relevant: only the relevant sessions; gold: the gold preference given (generation).")  # fmt: skip
@run_options
def eval_cupid(project: Project, release, config_name, task, oracle, model, judge_model, predictions, limit, backend, seed,
               estimate, as_json) -> None:  # fmt: skip
    """Run MODEL on a CUPID release config and score it with the judge (or judge a predictions file).

    The model sees the prior sessions' dialogue text and the current request only. Inference is matched
    both ways by the judge (fully / partially / not covered = 1 / 0.5 / 0): pooled recall, precision
    and F1 per instance type and overall, and F1 by position of the relevant sessions. Generation is
    scored 1-10. Rerunning the same command resumes the run without repeating a finished call.

    Example: prefkit eval cupid --release releases/1.0.0 --model gpt-4o-mini --backend openai
    """
    from prefkit.pipelines.eval import CupidOptions, load_cupid, run_cupid
    from prefkit.pipelines.eval import cupid as cupid_mod

    if not model and not predictions and not estimate:
        raise click.UsageError("give --model NAME to run a model, or --predictions FILE to judge one")
    options = CupidOptions(task=task, oracle=oracle)
    with _layer(project, model, judge_model, backend, seed, as_json) as layer:
        if estimate:
            options.check()
            _ref, instances = load_cupid(Path(release), config_name)
            if limit:
                instances = {k: instances[k] for k in sorted(instances)[:limit]}
            _print_estimate(cupid_mod.estimate(layer, instances, options), as_json)
            return
        if not as_json and not predictions:
            _ref, instances = load_cupid(Path(release), config_name)
            if limit:
                instances = {k: instances[k] for k in sorted(instances)[:limit]}
            _print_estimate(cupid_mod.estimate(layer, instances, options), False)
        result = run_cupid(project.store, layer, Path(release), config_name, options,
                           Path(predictions) if predictions else None, limit)  # fmt: skip
    _print_result(project, result, as_json)


@eval_.command("alpsbench")
@click.option("--task", "task_number", required=True, type=click.Choice(["1", "2", "3", "4"]),
              help="1 extraction, 2 update, 3 retrieval, 4 memory-grounded use.")  # fmt: skip
@click.option("--split", default="validation", show_default=True, type=click.Choice(["dev", "validation", "test"]),
              help="Split to evaluate; test gold is read only from the private config.")  # fmt: skip
@click.option("--config", "config_name", default="alpsbench", show_default=True,
              help="Release configs to read (every config whose name starts with this).")  # fmt: skip
@click.option("--private", "private", type=SafePath(file_okay=False, exists=True),
              help="Private configs with the test gold (default: releases-private/VERSION beside the release).")  # fmt: skip
@run_options
def eval_alpsbench(project: Project, release, task_number, split, config_name, private, model, judge_model, predictions,
                   limit, backend, seed, estimate, as_json) -> None:  # fmt: skip
    """Score a predictions.jsonl, or run MODEL, on one AlpsBench task of a release.

    Task 1: predicted memories matched 1-to-1 to gold (pair score 0.4 label + 0.4 value + 0.1 type +
    0.1 confidence, threshold 0.30): precision, recall, F1. Task 2: accuracy on retained, added and
    modified memories. Task 3: accuracy per distractor level. Task 4: the judge's 1-10 score per ability.

    Example: prefkit eval alpsbench --release releases/1.0.0 --task 3 --predictions predictions.jsonl
    """
    from prefkit.pipelines.eval import alpsbench as alps_mod
    from prefkit.pipelines.eval import run_alpsbench

    task = f"task{task_number}"
    if not model and not predictions and not estimate:
        raise click.UsageError("give --model NAME to run a model, or --predictions FILE to score one")
    with _layer(project, model, judge_model, backend, seed, as_json) as layer:
        if estimate or (not as_json and not predictions):
            _ref, rows, _gold = alps_mod.load_alps(Path(release), task, split, config_name, private)
            ids = sorted(rows)[:limit] if limit else sorted(rows)
            _print_estimate(layer.estimate([alps_mod.model_request(rows[b]) for b in ids]), as_json)
            if estimate:
                return
        result = run_alpsbench(project.store, layer, Path(release), task, split, config_name,
                               Path(predictions) if predictions else None, limit,
                               Path(private) if private else None)  # fmt: skip
    _print_result(project, result, as_json)


@eval_.command("score")
@click.argument("predictions", type=SafePath(dir_okay=False, exists=True))
@click.option("--release", required=True, type=SafePath(exists=True),
              help="Release directory (or CUPID JSONL) holding the gold.")  # fmt: skip
@click.option(
    "--config", "config_name", default="cupid", show_default=True, help="Release config of the gold."
)
@click.option("--labels", type=SafePath(dir_okay=False, exists=True),
              help="Judge labels JSONL (one labelled item or score per line); else the labels in PREDICTIONS.")  # fmt: skip
@click.option("--task", type=click.Choice(["inference", "generation"]),
              help="Default: generation when predictions carry responses, else inference.")  # fmt: skip
@json_option
def eval_score(predictions, release, config_name, labels, task, as_json) -> None:
    """Score a CUPID PREDICTIONS file against a release without calling any model.

    Lines: {"persona_id", "instance_type", "inferred", "labels": {"gold": [{"item", "coverage"}],
    "inferred": [...]}} (or "response" and "score" for generation). A labels file adds
    {"persona_id", "instance_type", "direction": "gold"|"inferred", "item", "coverage"} lines.

    Example: prefkit eval score predictions.jsonl --release releases/1.0.0 --labels judge_labels.jsonl
    """
    from prefkit.pipelines.eval import score_cupid_file

    rows = score_cupid_file(
        Path(release), config_name, Path(predictions), Path(labels) if labels else None, task
    )
    if as_json:
        echo_json(rows)
        return
    for t in [t for t in TABLES if any(r["task"] == t for r in rows)]:
        echo_table([r for r in rows if r["task"] == t], TABLES[t])
    by_pos = [r for r in rows if r["task"] == "inference_by_position"]
    if by_pos:
        click.echo("F1 by sessions before the request of the most recent relevant session: "
                   + ", ".join(f"{r['group']}: {r['f1']}" for r in by_pos))  # fmt: skip


@eval_.command("report")
@click.argument("run_id", metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@click.option("--out", type=SafePath(file_okay=False),
              help="Directory for the report and its SVG charts (default: evals/RUN in the project).")  # fmt: skip
@project_option
def eval_report(project: Project, run_id, fmt, out) -> None:
    """Print a run's report (tables, judge validation) and write it with its charts.

    Example: prefkit eval report cupid-inference-3f2a9c1b7d10 --format md
    """
    from prefkit.pipelines.eval import build_report, write_charts
    from prefkit.pipelines.eval.report import render_markdown

    report = build_report(project.store, run_id, project.config.release)
    out_dir = Path(out) if out else project.root / "evals" / report["run"].run_id
    charts = write_charts(report, out_dir)
    if fmt == "json":
        text = (
            json.dumps(plain({**report, "charts": [str(p) for p in charts]}), indent=2, ensure_ascii=False)
            + "\n"
        )
        (out_dir / "report.json").write_text(text, encoding="utf-8")
    else:
        text = render_markdown(report, charts)
        (out_dir / "report.md").write_text(text, encoding="utf-8")
    click.echo(text.rstrip("\n"))
    click.echo(f"wrote {out_dir}/report.{fmt} and {len(charts)} chart(s)", err=True)


@eval_.command("list")
@json_option
@project_option
def eval_list(project: Project, as_json) -> None:
    """Every evaluation run of the project.

    Example: prefkit eval list --json
    """
    runs = project.store.eval.runs()
    if as_json:
        echo_json(runs)
        return
    echo_table(
        [{**plain(r), "release": f"{r.release_name or '-'} {r.release_version or ''}".strip()} for r in runs],
        [
            "run_id",
            "benchmark",
            "task",
            "model",
            "judge_model",
            "backend",
            "release",
            "config_name",
            "status",
        ],
    )


@eval_.command("export")
@click.argument("run_id", metavar="RUN")
@click.argument("out", type=SafePath(dir_okay=False))
@project_option
def eval_export(project: Project, run_id, out) -> None:
    """Write a run's predictions with their judge labels as JSONL (re-score it with `prefkit eval score`).

    Example: prefkit eval export cupid-inference-3f2a9c1b7d10 predictions.jsonl
    """
    from prefkit.exports.writers import write_jsonl
    from prefkit.pipelines.eval import export_predictions

    n = write_jsonl(Path(out), export_predictions(project.store, run_id), sort_keys=False)
    click.echo(f"wrote {n} predictions to {out}")


@tasks_pairs.command("from-eval")
@click.argument("run_id", metavar="RUN")
@click.option("--per-label", type=POSITIVE_INT, default=50, show_default=True,
              help="Pairs sampled per judge label (fully, partially, not_covered).")  # fmt: skip
@click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Sampling seed.")
@click.option("--overlap", type=POSITIVE_INT, help="Annotators per task (default: [annotation] overlap).")
@click.option("--batch", help="Batch of the new tasks (default: eval-RUN).")
@json_option
@project_option
def tasks_pairs_from_eval(project: Project, run_id, per_label, seed, overlap, batch, as_json) -> None:
    """Sample a CUPID inference run's (gold item, inferred statement) pairs, stratified by the judge's
    label, into preference_match tasks; the judge's label is recorded as a judge rater on each.

    Once people label them, `prefkit agreement --kind preference_match` shows judge-vs-human α, and
    every eval report using that judge says whether it is validated.

    Example: prefkit tasks pairs from-eval cupid-inference-3f2a9c1b7d10 --per-label 40
    """
    from prefkit.pipelines.eval import pairs_from_run

    result = pairs_from_run(project, run_id, per_label=per_label, seed=seed, overlap=overlap, batch=batch)
    if as_json:
        echo_json(result.as_dict())
        return
    echo_table([{"judge_label": lab, "available": result.available[lab], "sampled": result.sampled[lab]}
                for lab in result.available])  # fmt: skip
    click.echo(f"{result.new_pairs} new pairs, {result.new_tasks} new tasks in batch {result.batch}, "
               f"{result.judge_events} judge labels recorded")  # fmt: skip
