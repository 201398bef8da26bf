"""An evaluation report as Markdown: the run's identity, the judge's validation status, the tables.

Only formats a report built by :func:`prefkit.pipelines.eval.runs.build_report`. Every text from the
operator or the data (``--model``, ``--judge-model``, release names, settings) goes through
:mod:`prefkit.schemas.safe_text`: rendered with HTML on, a report runs no script and loads no remote image.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefkit.pipelines.eval.protocols import PROTOCOLS, label
from prefkit.pipelines.eval.release import EvalInputError
from prefkit.schemas.safe_text import md_code, md_text

COLUMNS = {
    ("cupid", "inference"): """group n_instances n_inferred n_empty n_failed n_missing gold_items gold_credit
        inferred_items inferred_credit precision recall f1""".split(),
    ("cupid", "generation"): "group n_instances n_scored n_failed n_missing mean distribution".split(),
}


def judge_line(judge: dict[str, Any] | None, markdown: bool = True) -> str | None:
    """The judge's validation status in one line: markdown (escaped), or plain for a terminal."""
    if judge is None:
        return None
    hh = (judge.get("human_vs_human") or {}).get("alpha")
    human = f"; human-vs-human α {hh:.3f}" if hh is not None else ""
    if not markdown:
        mark = "validated" if judge["validated"] else "NOT VALIDATED"
        return f"Judge {judge['judge']}: {mark} — {judge['reason'].replace('`', '')}{human}"
    mark = "validated" if judge["validated"] else "**NOT VALIDATED**"
    return f"Judge {md_code(judge['judge'])}: {mark} — {md_text(judge['reason'])}{human}"


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return md_text(" ".join(f"{k}:{v}" for k, v in value.items() if v))
    if isinstance(value, int):
        return str(value)
    return md_text(value)


def table(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    out += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in rows]
    return out


def check_protocols(reports: list[dict[str, Any]], expected: str | None, mix: bool) -> None:
    """Refuse a report whose runs were made by another protocol than ``expected``, or by several
    protocols unless ``mix`` (then every row is labelled with its protocol)."""
    seen = {r["protocol"] for r in reports}
    if expected is not None:
        if expected not in PROTOCOLS:
            raise EvalInputError(f"--protocol {expected!r}: unknown; choose from {', '.join(PROTOCOLS)}")
        other = next((r for r in reports if r["protocol"] != expected), None)
        if other is not None:
            raise EvalInputError(
                f"run {other['run'].run_id} was made with protocol {other['protocol']}, not {expected}"
            )
    made = {(r["run"].task, r["run"].settings.get("declaration"), r["run"].release_digest) for r in reports}
    if len(made) > 1 and any(r["run"].benchmark == "declared" for r in reports):
        raise EvalInputError("these runs evaluated different declarations or releases: not comparable")
    if len(seen) > 1 and not mix:
        raise EvalInputError(
            f"these runs were made with different protocols ({', '.join(sorted(seen))}): their numbers are not "
            "comparable; report them apart, or give --mix-protocols to label every row with its protocol"
        )


def combined_markdown(reports: list[dict[str, Any]], charts: Sequence[Path] = ()) -> str:
    """Several runs in one report: one table per task, every row naming its run and protocol."""
    seen = sorted({r["protocol"] for r in reports})
    lines = [f"# Evaluation of {len(reports)} runs", ""]
    if len(seen) > 1:
        lines += [
            f"> **Mixed protocols** ({', '.join(seen)}): rows of different protocols are not comparable.",
            "",
        ]
    else:
        lines += [f"Protocol: **{label(seen[0])}**", ""]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for rep in reports:
        for r in rep["rows"]:
            by_task.setdefault(r["task"], []).append(
                {"run": rep["run"].run_id, "protocol": rep["protocol"], **r}
            )
    for task, rows in by_task.items():
        cols = ["run", "protocol"] + [c for c in _columns(reports[0]["run"], task, rows) if c != "task"]
        lines += [f"## {task}", ""] + table(rows, cols) + [""]
    if charts:
        lines += (
            ["## Charts", ""] + [f"![{md_text(p.stem)}](<{p.parent.name}/{p.name}>)" for p in charts] + [""]
        )
    return "\n".join(lines)


def _columns(run, task: str, rows: list[dict[str, Any]]) -> list[str]:
    cols = COLUMNS.get((run.benchmark, task)) or COLUMNS.get((run.benchmark, task.split("_by_")[0]))
    if cols is None:
        cols = ["group"] + [c for c in rows[0] if c not in ("task", "group", "run", "protocol")]
    return cols


def render_markdown(report: dict[str, Any], charts: Sequence[Path] = ()) -> str:
    run = report["run"]
    lines = [
        f"# Evaluation {md_text(run.run_id)}",
        "",
        f"Protocol: **{md_text(label(report['protocol']))}**",
        "",
    ]
    if run.offline:
        lines += ["> **Offline backend**: deterministic stand-in answers, not a model's score.", ""]
    jl = judge_line(report["judge"])
    if jl:
        lines += [jl, ""]
    release = f"{run.release_name or '-'} {run.release_version or '(unreleased)'} (data {run.release_digest})"
    meta = {
        "benchmark / task": f"{run.benchmark} / {run.task}",
        "protocol": report["protocol"],
        "model": run.model or "predictions file",
        "judge": run.judge_model or "-",
        "backend": run.backend + (" (offline)" if run.offline else ""),
        "release": release,
        "config": run.config_name,
        "settings": ", ".join(f"{k}={v}" for k, v in sorted(run.settings.items()) if v is not None),
        "prompts": ", ".join(f"{k}@{v}" for k, v in run.prompts.items()),
        "created": run.created_at,
    }
    lines += ["| | |", "|---|---|"] + [f"| {k} | {md_text(v)} |" for k, v in meta.items()] + [""]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in report["rows"]:
        by_task.setdefault(r["task"], []).append(r)
    for task, rows in by_task.items():
        cols = (
            _columns(run, task, rows)
            if report["protocol"] == "prefkit" or task == "inference_by_position"
            else ["group"] + [c for c in rows[0] if c not in ("task", "group") and not c.endswith("_exact")]
        )
        title = {
            "inference_by_position": "inference by position (sessions before the request of the most recent "
            "relevant session)"
        }.get(task, task)
        lines += [f"## {md_text(title)}", ""] + table(rows, cols) + [""]
    if charts:
        # local files written beside the report, by name only (never a URL)
        lines += ["## Charts", ""] + [f"![{md_text(p.stem)}](<{p.name}>)" for p in charts] + [""]
    return "\n".join(lines)
