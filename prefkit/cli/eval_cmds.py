"""``prefkit eval``: run models on a release (CUPID, AlpsBench), score predictions, report runs."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from types import SimpleNamespace

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, flag, json_option, plain, shown
from prefkit.cli.llm_cmds import llm_layer
from prefkit.cli.types import ANY_INT, POSITIVE_INT, SafePath
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.project import Project
from prefkit.exports.writers import write_jsonl
from prefkit.pipelines.eval import (
    CupidOptions,
    build_report,
    contamination,
    cupid_protocol,
    declared,
    export_predictions,
    judge_validation,
    load_cupid,
    run_alpsbench,
    run_cupid,
    run_declared,
    score_cupid_file,
    write_charts,
)
from prefkit.pipelines.eval import alpsbench as alps_mod
from prefkit.pipelines.eval import cupid as cupid_mod
from prefkit.pipelines.eval.cupid_prompts import load_prompts
from prefkit.pipelines.eval.protocols import label, of_run
from prefkit.pipelines.eval.release import EvalInputError
from prefkit.pipelines.eval.report import check_protocols, combined_markdown, judge_line, render_markdown

CUPID_PROTOCOLS = ["cupid-official", "cupid-prefmatcher", "prefkit"]


ALPS_PROTOCOLS = ["alpsbench-public", "alpsbench-paper", "prefkit"]


OFFICIAL_INFERENCE = """task group n_instances n_counted n_model_failed n_judge_failed n_context_length n_empty
    gold_items inferred_items precision recall f1""".split()


OFFICIAL_GENERATION = "task group n_instances n_counted n_model_failed n_judge_failed mean".split()


PAPER_ALPS = """task group n_rows n_failed matched mean_precision mean_recall mean_f1 mean_quality
    algo_score_100""".split()


DECLARED = "task group metric value ci_low ci_high n_items n_scored n_failed".split()


PUBLIC_ALPS = ["task", "group", "n_rows", "n_failed", "main_metric", "main_score", "main_score_strict"]


#: The columns of each table a result prints, by its task.
TABLES = {
    task: columns.split()
    for task, columns in {
        "inference": "task group n_instances n_inferred n_empty n_failed gold_items inferred_items precision "
        "recall f1",
        "generation": "task group n_instances n_scored n_failed n_missing mean",
        "pair_threshold": "task group threshold n_rejected matched_rejected false_match_rate n_accepted "
        "missed_accepted miss_rate",
        "task1": "task group n_rows n_missing n_failed n_pred n_gold matched precision recall f1 mean_pair_score",
        "task2": "task group n_rows n_gold correct accuracy matched precision recall f1",
        "task3": "task group n_rows n_missing n_failed correct accuracy",
        "task4": "task group n_rows n_missing n_failed n_scored mean_score fact_match_rate",
    }.items()
} | {"inference_strict": OFFICIAL_INFERENCE, "generation_strict": OFFICIAL_GENERATION}


@click.group("eval")
def eval_() -> None:
    """Evaluate models on a release: CUPID, AlpsBench tasks 1-4, and declared kinds (`eval run`)."""


RUN_FLAGS = "release model judge_model predictions limit backend seed estimate as_json".split()


def run_options(fn):
    """Flags shared by ``eval cupid`` and ``eval alpsbench``."""
    options = [
        click.option(
            "--release",
            "release",
            required=True,
            type=SafePath(exists=True),
            help="Release directory (releases/X.Y.Z), or a CUPID JSONL file.",
        ),
        click.option(
            "--model", help="Model to evaluate (the `assistant` role); not needed with --predictions."
        ),
        click.option("--judge-model", help="Judge model (default: [llm.models] judge)."),
        click.option(
            "--predictions",
            type=SafePath(dir_okay=False, exists=True),
            help="Score this predictions file instead of running a model.",
        ),
        click.option("--limit", type=POSITIVE_INT, help="Only the first N items (by key)."),
        click.option(
            "--backend",
            type=click.Choice(["offline", "openai"]),
            help="LLM backend (default: [llm] backend); offline results are marked offline.",
        ),
        click.option(
            "--seed", type=ANY_INT, default=0, show_default=True, help="Seed (offline backend, cache key)."
        ),
        click.option(
            "--estimate", is_flag=True, help="Price the run with the configured models; make no call."
        ),
        json_option,
        project_option,
    ]

    @functools.wraps(fn)
    def grouped(project: Project, **kw):  # the shared flags reach the command as one namespace
        return fn(project, SimpleNamespace(**{k: kw.pop(k) for k in RUN_FLAGS}), **kw)

    return functools.reduce(lambda f, opt: opt(f), reversed(options), grouped)


def _cupid_requests(layer, instances, options):
    """The requests a CUPID run would make (answers not known yet: the gold stands in for them)."""
    if options.protocol == "prefkit":
        return cupid_mod.estimate_requests(instances, options)
    steps = cupid_protocol.Steps(
        load_prompts(options.prompts, cupid_protocol.steps(options.task, options.protocol)), options.protocol
    )
    return cupid_protocol.estimate_requests(steps, instances, options.task, options.oracle)


def _print_estimate(est, as_json: bool) -> None:
    if as_json:
        echo_json({"estimate": est.as_dict()})
        return
    d = est.as_dict()
    click.echo(
        f"estimate: {d['calls']} calls ({d['cached']} cached), {d['prompt_tokens']} prompt + "
        f"{d['completion_tokens']} completion tokens, ${d['cost_usd']:.4f}"
    )
    if d["unpriced"]:
        click.echo(f"no price configured for: {', '.join(d['unpriced'])} (add them under [llm.costs])")


def _columns(task: str, rows: list[dict], protocol: str) -> list[str]:
    """The columns of one table: the official accounting's counts under the official protocols."""
    if protocol in ("cupid-official", "cupid-prefmatcher") and task in ("inference", "generation"):
        return OFFICIAL_INFERENCE if task == "inference" else OFFICIAL_GENERATION
    if protocol == "alpsbench-public":
        return PUBLIC_ALPS
    if protocol == declared.PROTOCOL:  # a judged target's rows say whether the judge is validated
        return DECLARED + ["judge"] * any("judge" in r for r in rows)
    if protocol == "alpsbench-paper" and task in ("task1", "task2"):
        return PAPER_ALPS
    return TABLES[task]


def print_tables(rows: list[dict], protocol: str) -> None:
    """Every table of a result, under a line naming the protocol that made the numbers."""
    click.echo(f"protocol {label(protocol)}")
    tasks = list(dict.fromkeys(r["task"] for r in rows if r["task"] != "inference_by_position"))
    for task in tasks:
        shown = [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rows]
        echo_table([r for r in shown if r["task"] == task], _columns(task, rows, protocol))
    by_pos = [r for r in rows if r["task"] == "inference_by_position"]
    if by_pos:
        click.echo(
            "F1 by sessions before the request of the most recent relevant session: "
            + ", ".join(f"{r['group']}: {r['f1']}" for r in by_pos)
        )
    if any(r["task"].endswith("_strict") for r in rows):
        click.echo(
            "strict: every failed call and every missing instance scores 0 (the official line leaves "
            "failed model calls out)"
        )


def _print_result(project: Project, result, as_json: bool) -> None:
    run = result.run
    judge = None
    if run.judge_model and run.benchmark == "declared":
        judge = declared.unchecked(run.judge_model)
    elif run.judge_model:
        judge = judge_validation(project.store, run.judge_model, project.config.release.judge_alpha_min)
    if as_json:
        echo_json(
            {
                "run": run,
                "protocol": of_run(run),
                "rows": result.rows,
                "judge": judge,
                "model_failures": result.model_failures,
                "judge_failures": result.judge_failures,
            }
        )
        return
    print_tables(result.rows, of_run(run))
    if run.offline:
        click.echo("offline backend: deterministic stand-in answers, not a model's score")
    if judge:
        click.echo(judge_line(judge, markdown=False))
    if run.benchmark == "declared" and result.model_failures:
        how = "no call made" if run.model is None else "run the same command again to retry failed calls"
        click.echo(f"{result.model_failures} item(s) without a usable answer, counted as failed ({how})")
    elif result.model_failures or result.judge_failures:
        click.echo(
            f"{result.model_failures} model call(s) and {result.judge_failures} judge call(s) failed "
            "(counted as failed); run the same command again to retry them"
        )
    click.echo(f"run {run.run_id}; report: prefkit eval report {run.run_id}")


@eval_.command("cupid")
@shown(
    "--config",
    None,
    "cupid",
    "Release config to evaluate (the verified instances by default).",
    "config_name",
)
@shown(
    "--task",
    ["inference", "generation"],
    "inference",
    "inference: state the user's preference; generation: answer the request.",
)
@shown(
    "--oracle",
    ["none", "relevant", "gold"],
    "none",
    "relevant: only the relevant sessions; gold: the gold preference given (generation, prefkit).",
)
@shown(
    "--protocol",
    click.Choice(CUPID_PROTOCOLS),
    "cupid-official",
    "Whose steps and arithmetic: CUPID's code, CUPID's with a PrefMatcher model, or prefkit's.",
)
@click.option(
    "--prompts",
    "prompts_dir",
    type=SafePath(file_okay=False, exists=True),
    help="A local checkout of CUPID: use its prompts/ files instead of prefkit's (hashes recorded).",
)
@click.option(
    "--decomposer-model", help="cupid-prefmatcher: the model that decomposes (default: [llm.models] writer)."
)
@run_options
def eval_cupid(
    project: Project, run, config_name, task, oracle, protocol, prompts_dir, decomposer_model
) -> None:
    """Run MODEL on a CUPID release config and score it with the judge (or judge a predictions file).

    The model sees the prior sessions' dialogue text and the current request only. cupid-official (the
    default) follows CUPID's code: analysis then one sentence, a decomposer (<= 4 questions), one matcher
    call per checklist, the 10-label rubric for generation, CUPID's failure accounting beside a strict
    line. Pooled recall, precision and F1 per instance type and overall. Rerunning the same command
    resumes the run without repeating a finished call.

    Example: prefkit eval cupid --release releases/1.0.0 --model gpt-4o-mini --backend openai
    """
    if not run.model and not run.predictions and not run.estimate:
        raise click.UsageError("give --model NAME to run a model, or --predictions FILE to judge one")
    options = CupidOptions(
        task=task, oracle=oracle, protocol=protocol, prompts=Path(prompts_dir) if prompts_dir else None
    )
    options.check()
    with llm_layer(
        project, run.backend, run.seed, run.as_json, run.model, run.judge_model, decomposer_model
    ) as layer:
        if run.estimate or (not run.as_json and not run.predictions):
            _ref, instances = load_cupid(Path(run.release), config_name)
            if run.limit:
                instances = {k: instances[k] for k in sorted(instances)[: run.limit]}
            _print_estimate(layer.estimate(_cupid_requests(layer, instances, options)), run.as_json)
            if run.estimate:
                return
        result = run_cupid(
            project.store,
            layer,
            Path(run.release),
            config_name,
            options,
            Path(run.predictions) if run.predictions else None,
            run.limit,
        )
    _print_result(project, result, run.as_json)


@eval_.command("alpsbench")
@click.option(
    "--task",
    "task_number",
    required=True,
    type=click.Choice(["1", "2", "3", "4"]),
    help="1 extraction, 2 update, 3 retrieval, 4 memory-grounded use.",
)
@shown(
    "--split",
    ["dev", "validation", "test"],
    "validation",
    "Split to evaluate; test gold is read only from the private config.",
)
@shown(
    "--config",
    None,
    "alpsbench",
    "Release configs to read (every config whose name starts with this).",
    "config_name",
)
@click.option(
    "--private",
    "private",
    type=SafePath(file_okay=False, exists=True),
    help="Private configs with the test gold (default: releases-private/VERSION beside the release).",
)
@shown(
    "--protocol",
    click.Choice(ALPS_PROTOCOLS),
    "alpsbench-public",
    "AlpsBench's public scorer, its documented matching formula, or prefkit's variants.",
)
@run_options
def eval_alpsbench(project: Project, run, task_number, split, config_name, private, protocol) -> None:
    """Score a predictions.jsonl, or run MODEL, on one AlpsBench task of a release.

    alpsbench-public (the default) computes what AlpsBench's public scorer computes, per track: exact
    multiset F1 over six normalised memory fields averaged over rows (tasks 1-2), selected-memory
    accuracy (task 3), the used_memory_fact grounding proxy (task 4), plus a strict score where failed
    calls score 0. alpsbench-paper: the documented pair-score matching, with its threshold checked
    against labelled pairs. prefkit: fuzzy pooled matching, update categories, prefkit's task 4 judge.

    Example: prefkit eval alpsbench --release releases/1.0.0 --task 3 --predictions predictions.jsonl
    """
    task = f"task{task_number}"
    if not run.model and not run.predictions and not run.estimate:
        raise click.UsageError("give --model NAME to run a model, or --predictions FILE to score one")
    with llm_layer(project, run.backend, run.seed, run.as_json, run.model, run.judge_model) as layer:
        if run.estimate or (not run.as_json and not run.predictions):
            _ref, rows, _gold = alps_mod.load_alps(Path(run.release), task, split, config_name, private)
            ids = sorted(rows)[: run.limit] if run.limit else sorted(rows)
            _print_estimate(layer.estimate([alps_mod.model_request(rows[b]) for b in ids]), run.as_json)
            if run.estimate:
                return
        result = run_alpsbench(
            project.store,
            layer,
            Path(run.release),
            task,
            split,
            config_name,
            Path(run.predictions) if run.predictions else None,
            run.limit,
            Path(private) if private else None,
            protocol,
        )
    _print_result(project, result, run.as_json)


@eval_.command("run")
@click.option(
    "--config", "config_name", required=True, help="A declared kind: its config and [evaluation] table."
)
@click.option("--split", help="Split to evaluate (default: the config's only split, else validation).")
@click.option(
    "--private",
    "private",
    type=SafePath(file_okay=False, exists=True),
    help="Private configs with the test answers (default: releases-private/VERSION beside the release).",
)
@run_options
def eval_run(project: Project, run, config_name, split, private) -> None:
    """Run MODEL, or score a predictions file, on a declared kind's items in a release.

    The kind's [evaluation] table says what the model is asked (its input template, after the
    messages chat field) and which question it answers (target); the answer is structured output
    shaped by the target, scored against the decided answers by the target's type with bootstrap
    95% CIs, failures counted beside (protocol prefkit-declared-v1). Predictions: one
    {"id": ITEM_ID, "answer": VALUE} line per item. Rerunning the same command resumes the run.

    Example: prefkit eval run --release releases/1.0.0 --config memory_qa --model gpt-4o-mini --backend openai
    """
    if not run.model and not run.predictions and not run.estimate:
        raise click.UsageError("give --model NAME to run a model, or --predictions FILE to score one")
    kind = declared.evaluated(get_kind(config_name))
    with llm_layer(project, run.backend, run.seed, run.as_json, run.model, run.judge_model) as layer:
        if run.estimate or (not run.as_json and not run.predictions):
            _ref, items, _split = declared.load_declared(
                Path(run.release), kind, split, Path(private) if private else None
            )
            ids = sorted(items)[: run.limit] if run.limit else sorted(items)
            _print_estimate(
                layer.estimate([declared.model_request(kind, items[i]) for i in ids]), run.as_json
            )
            if run.estimate:
                return
        predictions = Path(run.predictions) if run.predictions else None
        result = run_declared(
            project.store,
            layer,
            Path(run.release),
            kind,
            split,
            predictions,
            run.limit,
            Path(private) if private else None,
        )
    _print_result(project, result, run.as_json)


@eval_.command("contamination")
@click.option(
    "--release", required=True, type=SafePath(file_okay=False, exists=True), help="Release directory."
)
@click.option("--model", required=True, help="Model to test (the `assistant` role).")
@shown("--sample", POSITIVE_INT, 50, "Test texts cut in half.", "n")
@click.option("--backend", type=click.Choice(["offline", "openai"]), help="Default: [llm] backend.")
@click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Seed of the sample.")
@click.option("--estimate", is_flag=True, help="Price the calls with the configured models; make none.")
@json_option
@project_option
def eval_contamination(project: Project, release, model, n, backend, seed, estimate, as_json) -> None:
    """Has MODEL seen a release? Its canary line completed, and held-out halves of its test texts.

    Only the release's public files are read. The model is asked to complete the canary line (does the
    GUID come back?), then given the first half of a text of --sample public test rows: the longest
    common substring with the held-out half (its share of the half) and the exact prefix (words) are
    reported. The same command again resumes from the LLM layer's cache.

    Example: prefkit eval contamination --release releases/1.0.0 --model gpt-4o-mini --backend openai
    """
    with llm_layer(project, backend, seed, as_json, model) as layer:
        if estimate:
            _print_estimate(layer.estimate(contamination.requests(Path(release), n, seed)), as_json)
            return
        report = contamination.check(layer, Path(release), n, seed)
    if as_json:
        echo_json(report)
        return
    echo_table([{k: v for k, v in report.items() if k not in ("canary", "items", "what_it_shows")}])
    click.echo(report["what_it_shows"])


@eval_.command("score")
@click.argument("predictions", type=SafePath(dir_okay=False, exists=True))
@click.option(
    "--release",
    required=True,
    type=SafePath(exists=True),
    help="Release directory (or CUPID JSONL) holding the gold.",
)
@shown("--config", None, "cupid", "Release config of the gold.", "config_name")
@click.option(
    "--labels",
    type=SafePath(dir_okay=False, exists=True),
    help="Judge labels JSONL (one labelled item or score per line); else the labels in PREDICTIONS.",
)
@click.option(
    "--task",
    type=click.Choice(["inference", "generation"]),
    help="Default: generation when predictions carry responses, else inference.",
)
@shown(
    "--protocol",
    click.Choice(CUPID_PROTOCOLS),
    "cupid-official",
    "Whose arithmetic: CUPID's (with its failure accounting and a strict line) or prefkit's.",
)
@json_option
def eval_score(predictions, release, config_name, labels, task, protocol, as_json) -> None:
    """Score a CUPID PREDICTIONS file against a release without calling any model.

    Lines: {"persona_id", "instance_type", "inferred", "labels": {"gold": [{"item", "coverage"}],
    "inferred": [...]}} (or "response" and "score" for generation). A labels file adds
    {"persona_id", "instance_type", "direction": "gold"|"inferred", "item", "coverage"} lines.

    Example: prefkit eval score predictions.jsonl --release releases/1.0.0 --labels judge_labels.jsonl
    """
    rows = score_cupid_file(
        Path(release), config_name, Path(predictions), Path(labels) if labels else None, task, protocol
    )
    if as_json:
        echo_json([{**r, "protocol": protocol} for r in rows])
        return
    print_tables(rows, protocol)


@eval_.command("report")
@click.argument("run_ids", metavar="RUN...", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@click.option(
    "--out",
    type=SafePath(file_okay=False),
    help="Directory for the report and its SVG charts (default: evals/RUN in the project).",
)
@click.option("--protocol", help="Refuse runs of any other protocol (say which numbers you expect).")
@flag(
    "--mix-protocols", "Allow runs of different protocols in one report; every row then names its protocol."
)
@project_option
def eval_report(project: Project, run_ids, fmt, out, protocol, mix_protocols) -> None:
    """Print the report of one or more runs (tables, protocol, judge validation) and write it with charts.

    Runs of different protocols are refused in one report unless --mix-protocols, which labels every
    row with its protocol: their numbers are not comparable.

    Example: prefkit eval report cupid-inference-3f2a9c1b7d10 --format md
    """
    reports = [build_report(project.store, r, project.config.release) for r in run_ids]
    check_protocols(reports, protocol, mix_protocols)
    name = (
        reports[0]["run"].run_id
        if len(reports) == 1
        else "combined-" + "-".join(r["run"].run_id[-6:] for r in reports)
    )
    out_dir = Path(out) if out else project.root / "evals" / name
    charts = [
        p
        for rep in reports
        for p in write_charts(rep, out_dir / (rep["run"].run_id if len(reports) > 1 else ""))
    ]
    if fmt == "json":
        body = plain(reports[0]) if len(reports) == 1 else {"reports": plain(reports)}
        text = json.dumps({**body, "charts": [str(p) for p in charts]}, indent=2, ensure_ascii=False) + "\n"
    else:
        text = (
            render_markdown(reports[0], charts) if len(reports) == 1 else combined_markdown(reports, charts)
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"report.{fmt}").write_text(text, encoding="utf-8")
    click.echo(text.rstrip("\n"))
    click.echo(f"wrote {out_dir}/report.{fmt} and {len(charts)} chart(s)", err=True)


@eval_.command("list")
@click.option("--protocol", help="Only the runs of this protocol.")
@json_option
@project_option
def eval_list(project: Project, protocol, as_json) -> None:
    """Every evaluation run of the project, with the protocol that made its numbers.

    Example: prefkit eval list --protocol cupid-official --json
    """
    runs = [r for r in project.store.eval.runs() if protocol is None or of_run(r) == protocol]
    if as_json:
        echo_json([{**plain(r), "protocol": of_run(r)} for r in runs])
        return
    echo_table(
        [
            {
                **plain(r),
                "protocol": of_run(r),
                "release": f"{r.release_name or '-'} {r.release_version or ''}".strip(),
            }
            for r in runs
        ],
        "run_id benchmark protocol task model judge_model backend release config_name status".split(),
    )


@eval_.command("export")
@click.argument("run_id", metavar="RUN")
@click.argument("out", type=SafePath(dir_okay=False))
@click.option("--protocol", help="Refuse a run of any other protocol.")
@project_option
def eval_export(project: Project, run_id, out, protocol) -> None:
    """Write a run's predictions with their judge labels as JSONL (re-score it with `prefkit eval score
    --protocol P`, P the run's protocol, which this command prints).

    Example: prefkit eval export cupid-inference-3f2a9c1b7d10 predictions.jsonl
    """
    run = project.store.eval.run(run_id)
    if protocol and of_run(run) != protocol:
        raise EvalInputError(f"run {run.run_id} was made with protocol {of_run(run)}, not {protocol}")
    n = write_jsonl(Path(out), export_predictions(project.store, run_id), sort_keys=False)
    click.echo(f"wrote {n} predictions of run {run.run_id} (protocol {of_run(run)}) to {out}")
