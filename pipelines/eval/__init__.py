"""Evaluating models on a release: CUPID preference inference and generation, AlpsBench tasks 1-4, and
any declared kind with an ``[evaluation]`` table (``run_declared``).

    from prefkit.pipelines.eval import run_cupid, build_report
    with LLMLayer(project.store, llm_config=with_models(project.config.llm, assistant="my-model"),
                  backend="openai") as layer:
        result = run_cupid(project.store, layer, Path("releases/1.0.0"), config="cupid")
    report = build_report(project.store, result.run.run_id, project.config.release)

Scoring is separate from running (``cupid_metrics``, ``alps_metrics``: pure functions over predictions
and judge labels). Runs go through the LLM layer (cache, resume, concurrency, estimate, provenance,
offline backend) and are stored in the project with everything needed to regenerate their report.
See docs/eval.md. Nothing here writes SQL; prompts live in ``prompts/`` and are hashed into each run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefkit.pipelines.eval.cupid import CupidOptions
    from prefkit.pipelines.eval.judge import judge_annotator, judge_validation
    from prefkit.pipelines.eval.pairs import pairs_from_run
    from prefkit.pipelines.eval.release import EvalInputError, load_cupid
    from prefkit.pipelines.eval.runs import (
        RunResult,
        build_report,
        export_predictions,
        run_alpsbench,
        run_cupid,
        run_declared,
        score_alps_file,
        score_cupid_file,
        write_charts,
    )

#: Each name of the package and the module it comes from, imported on first use: a command that needs
#: only ``pairs_from_run`` (``prefkit tasks``) does not load the runs and their scoring (SciPy ~0.3 s).
_FROM = {
    "CupidOptions": "cupid",
    "judge_annotator": "judge",
    "judge_validation": "judge",
    "pairs_from_run": "pairs",
    "EvalInputError": "release",
    "load_cupid": "release",
    **dict.fromkeys(
        (
            "RunResult",
            "build_report",
            "export_predictions",
            "run_alpsbench",
            "run_cupid",
            "run_declared",
            "score_alps_file",
            "score_cupid_file",
            "write_charts",
        ),
        "runs",
    ),
}
__all__ = [
    "CupidOptions",
    "EvalInputError",
    "RunResult",
    "build_report",
    "export_predictions",
    "judge_annotator",
    "judge_validation",
    "load_cupid",
    "pairs_from_run",
    "run_alpsbench",
    "run_cupid",
    "run_declared",
    "score_alps_file",
    "score_cupid_file",
    "write_charts",
]


def __getattr__(name: str) -> Any:
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_FROM[name]}"), name)
