"""Evaluation runs end to end: run (or read) predictions, judge them, score, store, report.

A run is stored with its configuration, the evaluated and judge models, the hashes of the prompt
templates it used, the backend (offline runs are marked) and the release it evaluated (name, version,
data digest). Its id is a hash of all of that, so the same command resumes the same run — and the LLM
layer's cache answers every call already made. A report is recomputed from the stored items, never
from memory of the run. The library does the whole job; the CLI only prints.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefkit.curation.store import EvalRun
from prefkit.pipelines.eval import alps_metrics as alps_m
from prefkit.pipelines.eval import (
    alps_paper,
    alps_public,
    alpsbench,
    cupid,
    cupid_official,
    cupid_protocol,
    declared,
    declared_metrics,
    protocols,
)
from prefkit.pipelines.eval import cupid_metrics as cupid_m
from prefkit.pipelines.eval.charts import bar_chart, write
from prefkit.pipelines.eval.cupid_prompts import load_prompts
from prefkit.pipelines.eval.judge import judge_validation
from prefkit.pipelines.eval.prompting import prompt_hashes
from prefkit.pipelines.eval.release import EvalInputError, ReleaseRef, load_cupid
from prefkit.schemas.common import PrefkitError, content_hash
from prefkit.schemas.config import ReleasePolicy
from prefkit.schemas.evaluation import CupidPrediction

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore


@dataclass
class RunResult:
    run: EvalRun
    rows: list[dict[str, Any]]
    judge_failures: int = 0
    model_failures: int = 0


def _file_digest(path: Path | None) -> str | None:
    return None if path is None else hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _run_record(
    benchmark: str,
    task: str,
    ref: ReleaseRef,
    layer,
    templates: tuple[str, ...] | dict[str, str],
    settings: dict[str, Any],
    model: str | None,
    judge_model: str | None,
) -> EvalRun:
    offline = bool(layer.backend.offline)
    run = {
        "benchmark": benchmark,
        "task": task,
        "model": model,
        "judge_model": judge_model,
        "backend": layer.backend.name,
        "offline": offline,
        "release_dir": str(ref.path),
        "release_name": ref.name,
        "release_version": ref.version,
        "release_digest": ref.digest,
        "config_name": ref.config,
        "settings": {**settings, "seed": layer.seed},
        "prompts": dict(templates) if isinstance(templates, dict) else prompt_hashes(templates),
    }
    identity = {k: v for k, v in run.items() if k not in ("release_dir",)}
    run["run_id"] = f"{benchmark}-{task}-{content_hash(identity, 12)}"
    return EvalRun(**run)


# -- CUPID -----------------------------------------------------------------------------------------------------
def run_cupid(
    store: ProjectStore,
    layer,
    release: Path,
    config: str = "cupid",
    options: cupid.CupidOptions | None = None,
    predictions: Path | None = None,
    limit: int | None = None,
) -> RunResult:
    """Evaluate the layer's ``assistant`` model (or a predictions file) on a CUPID release config, by
    the steps of ``options.protocol``."""
    options = options or cupid.CupidOptions()
    options.check()
    ref, instances = load_cupid(release, config)
    if limit is not None:
        instances = {k: instances[k] for k in sorted(instances)[:limit]}
    official = options.protocol in protocols.OFFICIAL_CUPID
    model = None if predictions else layer.settings.model_for("assistant")
    judge_model = layer.settings.model_for("judge")
    settings = {
        "oracle": options.oracle,
        "limit": limit,
        "predictions_sha256": _file_digest(predictions),
        "protocol": options.protocol,
    }
    steps = None
    if official:
        steps = cupid_protocol.Steps(
            load_prompts(options.prompts, cupid_protocol.steps(options.task, options.protocol)),
            options.protocol,
        )
        settings["prompts_from"] = steps.prompts.origin
        if options.protocol == "cupid-prefmatcher" and options.task == "inference":
            settings["decomposer_model"] = layer.settings.model_for("writer")
        templates: tuple[str, ...] | dict[str, str] = steps.prompts.hashes
    else:
        templates = cupid.TEMPLATES[options.task]
    run = _run_record("cupid", options.task, ref, layer, templates, settings, model, judge_model)
    preds = None
    if predictions is not None:  # a file is checked whole before the run is recorded
        preds = cupid_m.read_predictions(predictions, options.protocol)
        unknown = sorted(set(preds) - set(instances))
        if unknown:
            raise EvalInputError(
                f"{predictions}: prediction for ({cupid_m.key_name(unknown[0])}), not in the release"
            )
    store.eval.run_start(run)
    with _failing(store, run):
        if steps is not None and preds is not None and options.task == "inference":
            preds = cupid_protocol.decompose(layer, steps, preds)
        elif preds is None and steps is not None:
            preds = cupid_protocol.run_model(layer, steps, instances, options.task, options.oracle)
        elif preds is None:
            preds = cupid.run_model(layer, instances, options)
        model_failures = sum(1 for p in preds.values() if p.error)
        if steps is not None:
            preds, judge_failures = cupid_protocol.judge(layer, steps, instances, preds, options.task)
        else:
            preds, judge_failures = cupid.judge(layer, instances, preds, options.task)
        items: list[tuple[str, str, dict[str, Any]]] = [
            (
                cupid_m.key_name(k),
                inst.instance_type,
                {"gold": _gold_record(inst), "prediction": _pred_record(preds.get(k))},
            )
            for k, inst in sorted(instances.items())
        ]
        rows = score_items(run, items)
        store.eval.run_finish(run.run_id, items, {"rows": rows})
    return RunResult(store.eval.run(run.run_id), rows, judge_failures, model_failures)


@contextmanager
def _failing(store: ProjectStore, run: EvalRun) -> Iterator[None]:
    """A run that stops on an error is marked ``failed`` with its reason (its report says so), not
    left ``running``; an interrupted one (Ctrl-C, kill) stays ``running`` and resumes on rerun."""
    try:
        yield
    except PrefkitError as exc:
        store.eval.run_failed(run.run_id, str(exc))
        raise


def _gold_record(inst) -> dict[str, Any]:
    g = cupid_m.Gold.of(inst)
    return {"instance_type": g.instance_type, "checklist": list(g.checklist), "sessions_ago": g.sessions_ago}


def _pred_record(pred: CupidPrediction | None) -> dict[str, Any] | None:
    return None if pred is None else pred.model_dump(mode="json", exclude_none=True)


def score_cupid_file(
    release: Path,
    config: str,
    predictions: Path,
    labels: Path | None,
    task: str | None = None,
    protocol: str = "cupid-official",
) -> list[dict[str, Any]]:
    """Score a predictions file (and optional judge-labels file) against a release by ``protocol``'s
    arithmetic: no calls."""
    _ref, instances = load_cupid(release, config)
    preds = cupid_m.read_predictions(predictions, protocol)
    if labels is not None:
        preds = cupid_m.apply_labels(preds, labels)
    golds = {k: cupid_m.Gold.of(v) for k, v in instances.items()}
    if task is None:
        task = "generation" if any(p.response is not None for p in preds.values()) else "inference"
    return _cupid_scorer(protocol, task)(golds, preds)


def _cupid_scorer(protocol: str, task: str):
    if protocol in protocols.OFFICIAL_CUPID:
        return cupid_official.score_inference if task == "inference" else cupid_official.score_generation
    return cupid_m.score_inference if task == "inference" else cupid_m.score_generation


# -- AlpsBench ----------------------------------------------------------------------------------------------------
def run_alpsbench(
    store: ProjectStore,
    layer,
    release: Path,
    task: str,
    split: str = "validation",
    config: str = "alpsbench",
    predictions: Path | None = None,
    limit: int | None = None,
    private: Path | None = None,
    protocol: str = "alpsbench-public",
) -> RunResult:
    """Score a predictions.jsonl, or run the layer's ``assistant`` model, on one AlpsBench task."""
    ref, rows, has_gold = alpsbench.load_alps(release, task, split, config, private)
    _require_gold(release, task, split, has_gold, private)
    if limit is not None:
        rows = {b: rows[b] for b in sorted(rows)[:limit]}
    uses_judge = task == "task4" and protocol != "alpsbench-public"  # the public score is the proxy
    model = None if predictions else layer.settings.model_for("assistant")
    judge_model = layer.settings.model_for("judge") if uses_judge else None
    settings = {
        "split": split,
        "limit": limit,
        "predictions_sha256": _file_digest(predictions),
        "protocol": protocol,
    }
    templates = alpsbench.TEMPLATES[task] if uses_judge else alpsbench.TEMPLATES[task][:1]
    run = _run_record("alpsbench", task, ref, layer, templates, settings, model, judge_model)
    # a predictions file is checked whole before the run is recorded: a refused file leaves no run
    contract = task if protocol == "alpsbench-public" else None
    preds = alpsbench.read_predictions(predictions, rows, contract, protocol) if predictions else None
    store.eval.run_start(run)
    with _failing(store, run):
        if preds is None:
            preds = alpsbench.run_model(layer, rows, task)
        model_failures = sum(1 for p in preds.values() if "error" in p)
        if uses_judge:
            preds = alpsbench.judge(layer, rows, preds)
        judge_failures = sum(1 for p in preds.values() if "judge_error" in p)
        items = [(bid, group, rec) for bid, group, rec in alpsbench.score_rows(task, rows, preds, protocol)]
        rows_out = score_items(run, items)
        store.eval.run_finish(run.run_id, items, {"rows": rows_out})
    return RunResult(store.eval.run(run.run_id), rows_out, judge_failures, model_failures)


def _require_gold(release: Path, task: str, split: str, has_gold: bool, private: Path | None) -> None:
    if has_gold:
        return
    if split == "test":
        where = private or alpsbench.private_dir_for(release)
        raise EvalInputError(
            f"no gold for every {task} row of the test split: test gold is read only from the private "
            f"configs ({where}; give --private DIR), never from the public release"
        )
    raise EvalInputError(f"no gold for every {task} row of split {split!r} in {release}")


def score_alps_file(
    release: Path,
    task: str,
    split: str,
    predictions: Path,
    config: str = "alpsbench",
    private: Path | None = None,
    protocol: str = "alpsbench-public",
) -> list[dict[str, Any]]:
    """Score an AlpsBench predictions.jsonl with no calls by ``protocol`` (task 4 under ``prefkit`` and
    ``alpsbench-paper`` needs ``score`` in each line)."""
    _ref, rows, has_gold = alpsbench.load_alps(release, task, split, config, private)
    _require_gold(release, task, split, has_gold, private)
    preds = alpsbench.read_predictions(
        predictions, rows, task if protocol == "alpsbench-public" else None, protocol
    )
    records = [rec for _b, _g, rec in alpsbench.score_rows(task, rows, preds, protocol)]
    return _alps_aggregate(protocol, task, records)


def _alps_aggregate(protocol: str, task: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if protocol == "alpsbench-public":
        return alps_public.aggregate(task, records)
    if protocol == "alpsbench-paper":
        return alps_paper.aggregate(task, records)
    return alps_m.aggregate(task, records)


# -- declared kinds ---------------------------------------------------------------------------------------------
def run_declared(
    store: ProjectStore,
    layer,
    release: Path,
    kind,
    split: str | None = None,
    predictions: Path | None = None,
    limit: int | None = None,
    private: Path | None = None,
) -> RunResult:
    """Score a predictions file, or run the layer's ``assistant`` model, on a declared kind's items in
    a release, as its ``[evaluation]`` table says (protocol ``prefkit-declared-v1``); a private test
    split's answers come from ``private`` (:func:`declared.load_declared`)."""
    kind = declared.evaluated(kind)
    ref, items, split = declared.load_declared(release, kind, split, private)
    if limit is not None:
        items = {i: items[i] for i in sorted(items)[:limit]}
    answers = declared.read_predictions(predictions, kind, items) if predictions else None
    goal = declared.target(kind)
    judged = goal["type"] == "text"  # graded by the judge on the rubric: its hash joins the protocol
    settings = {
        "rubric_sha256": content_hash(kind.rubric(), 12) if judged else None,
        "split": split,
        "limit": limit,
        "predictions_sha256": _file_digest(predictions),
        "protocol": declared.PROTOCOL,
        "declaration": declared.declaration_hash(kind),
        "target": goal,
    }
    model = None if predictions else layer.settings.model_for("assistant")
    judge = layer.settings.model_for("judge") if judged else None
    prompts = (declared.TEMPLATE, declared.JUDGE) if judged else (declared.TEMPLATE,)
    run = _run_record("declared", kind.name, ref, layer, prompts, settings, model, judge)
    store.eval.run_start(run)
    with _failing(store, run):
        if answers is None:
            answers = declared.run_model(layer, kind, items)
        grades = declared.judge(layer, kind, items, answers) if judged else {}
        missing = (None, "no prediction for it in the file")
        items_out = [
            (
                i,
                goal["type"],
                declared.item_record(kind, items[i], *answers.get(i, missing), grades.get(i, (None, None))),
            )
            for i in sorted(items)
        ]
        rows = score_items(run, items_out)
        store.eval.run_finish(run.run_id, items_out, {"rows": rows})
    failed = sum(1 for _i, _g, rec in items_out if rec["error"])
    return RunResult(store.eval.run(run.run_id), rows, 0, failed)


# -- scoring stored items and reports ---------------------------------------------------------------------------
def score_items(run: EvalRun, items: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The report rows of a run, recomputed from its stored items."""
    protocol = protocols.of_run(run)
    if run.benchmark == "alpsbench":
        return _alps_aggregate(protocol, run.task, [rec for _k, _g, rec in items])
    if run.benchmark == "declared":
        return declared_metrics.score(run.task, run.settings["target"], [rec for _k, _g, rec in items])
    # Stored items were validated when the run wrote them: scored in their JSON shape, not re-parsed.
    golds: dict[tuple[str, str], cupid_m.Gold] = {}
    preds: dict[tuple[str, str], Any] = {}
    for key_text, _g, rec in items:
        persona_id, instance_type = key_text.rsplit("|", 1)
        key = (persona_id, instance_type)
        gold = rec["gold"]
        golds[key] = cupid_m.Gold(gold["instance_type"], tuple(gold["checklist"]), gold["sessions_ago"])
        if rec["prediction"] is not None:
            preds[key] = rec["prediction"]
    return _cupid_scorer(protocol, run.task)(golds, preds)


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while many small acyclic dicts are built: its full passes
    over the large live heap, not the arithmetic, were most of the CPU of scoring 10,000 items
    (bench/bench_eval.py: 0.7-0.85 s with it, 0.2 s without). Reference counting still frees them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_report(store: ProjectStore, run_id: str, policy: ReleasePolicy | None = None) -> dict[str, Any]:
    """Everything a report shows: the run's record, its rows and the judge's validation status."""
    run = store.eval.run(run_id)
    if run.status == "failed":
        reason = (run.summary or {}).get("error", "no reason recorded")
        raise EvalInputError(f"run {run.run_id} failed: {reason} (fix that, then run the same command again)")
    if run.status != "complete":
        raise EvalInputError(f"run {run.run_id} has not finished; rerun its command to resume it")
    with no_cyclic_gc():
        items = [(i.item_key, i.group, i.record) for i in store.eval.items(run.run_id)]
        rows = score_items(run, items)
    validation = None
    if run.judge_model and run.benchmark == "declared":
        validation = declared.unchecked(run.judge_model)
    elif run.judge_model:
        validation = judge_validation(store, run.judge_model, (policy or ReleasePolicy()).judge_alpha_min)
    return {"run": run, "protocol": protocols.of_run(run), "rows": rows, "judge": validation}


def export_predictions(store: ProjectStore, run_id: str) -> list[dict[str, Any]]:
    """A run's predictions with their judge labels, one line each, each naming the run's protocol:
    re-scorable with ``eval score --protocol`` of that protocol (another one is refused)."""
    run = store.eval.run(run_id)
    protocol = protocols.of_run(run)
    out = []
    for item in store.eval.items(run.run_id):
        pred = item.record.get("prediction")
        if pred is not None:
            out.append({**pred, "protocol": protocol})
    return out


def write_charts(report: dict[str, Any], out_dir: Path) -> list[Path]:
    """SVG charts of a report: P/R/F1 per instance type and F1 by relevant-session position (CUPID
    inference), mean score per type (generation), the main metric per task group (AlpsBench)."""
    run, rows, paths = report["run"], report["rows"], []
    out_dir = Path(out_dir)
    data = (
        f"{run.release_name} {run.release_version or ''}" if run.release_name else Path(run.release_dir).name
    )
    title = f"{run.model or 'predictions'} on {data.strip()}"
    if run.benchmark == "cupid" and run.task == "inference":
        typed = [r for r in rows if r["task"] == "inference"]
        series = {m: [r[m] for r in typed] for m in ("precision", "recall", "f1")}
        paths.append(
            write(
                out_dir / "prf_by_type.svg",
                bar_chart(f"P/R/F1 per instance type — {title}", [r["group"] for r in typed], series),
            )
        )
        pos = [r for r in rows if r["task"] == "inference_by_position"]
        paths.append(
            write(
                out_dir / "f1_by_position.svg",
                bar_chart(
                    f"F1 by position of the most recent relevant session — {title}",
                    [r["group"] for r in pos],
                    {"f1": [r["f1"] for r in pos]},
                    xlabel="sessions back from the request (1 = the last session; none = no relevant session)",
                ),
            )
        )
    elif run.benchmark == "cupid":
        paths.append(
            write(
                out_dir / "score_by_type.svg",
                bar_chart(
                    f"Judge score (1-10) per instance type — {title}",
                    [r["group"] for r in rows],
                    {"mean": [r["mean"] for r in rows]},
                    ymax=10,
                ),
            )
        )
    elif run.benchmark == "declared":  # its table is the report: metrics of several scales
        return paths
    else:
        metric = {"task1": "f1", "task2": "accuracy", "task3": "accuracy", "task4": "mean_score"}[run.task]
        shown = [r for r in rows if r.get(metric) is not None or metric in r]
        paths.append(
            write(
                out_dir / f"{run.task}_{metric}.svg",
                bar_chart(
                    f"AlpsBench {run.task} {metric} — {title}",
                    [r["group"] for r in shown],
                    {metric: [r.get(metric) for r in shown]},
                    ymax=10 if metric == "mean_score" else 1.0,
                ),
            )
        )
    return paths
