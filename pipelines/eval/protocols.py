"""Evaluation protocols: which steps and which arithmetic produced a number, named.

A number is comparable with a paper's table only when it was made the way the paper's own code makes
it. Every run records its protocol (``settings["protocol"]``), every report and export names it, and
``prefkit eval report`` refuses to put runs of different protocols in one table unless asked to
(then each row says its protocol). docs/eval.md has the table of what each protocol computes and
where it differs from the papers. Runs stored before protocols existed were ``prefkit`` runs.
This module only describes; it never scores.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefkit.pipelines.eval.release import EvalInputError


@dataclass(frozen=True)
class Protocol:
    name: str
    benchmarks: tuple[str, ...]
    summary: str  # one line: what it computes
    source: str  # whose definition it follows


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol(
            "cupid-official",
            ("cupid",),
            "CUPID's evaluation code: analysis-then-answer inference, decomposer (<= 4 questions), one matcher "
            "call per checklist, the 10-label generation rubric, the official failure accounting, plus a strict "
            "line where every failure scores 0",
            "kixlab/CUPID evaluation/",
        ),
        Protocol(
            "cupid-prefmatcher",
            ("cupid",),
            "cupid-official with a PrefMatcher-style model (e.g. kixlab/prefmatcher-7b on vLLM) as the matcher, "
            "in its own prompt format",
            "kixlab/CUPID evaluation/ with --use_matcher",
        ),
        Protocol(
            "alpsbench-public",
            ("alpsbench",),
            "AlpsBench's public scorer: exact multiset F1 over six normalised memory fields per row, averaged "
            "(tasks 1-2), selected-memory id/value match (task 3), used_memory_fact grounding proxy (task 4)",
            "ThisIsCosine/AlpsBench src/benchmark/metrics.py",
        ),
        Protocol(
            "alpsbench-paper",
            ("alpsbench",),
            "AlpsBench's documented matching formula (pair score, Hungarian, threshold 0.30) per row, with the "
            "constants its documentation leaves open stated as prefkit's choices and the threshold checked "
            "against labelled pairs",
            "ThisIsCosine/AlpsBench docs/evaluation_metric.md (+ prefkit's constants)",
        ),
        Protocol(
            "prefkit",
            ("cupid", "alpsbench"),
            "prefkit's own variants: JSON inference, claims split by the judge, failures left out of "
            "precision; AlpsBench fuzzy pooled matching, update categories, prefkit's task 4 judge",
            "prefkit",
        ),
    )
}
DEFAULTS = {"cupid": "cupid-official", "alpsbench": "alpsbench-public"}
OFFICIAL_CUPID = ("cupid-official", "cupid-prefmatcher")


def resolve(benchmark: str, protocol: str | None) -> str:
    """The protocol a run of ``benchmark`` uses (its default when ``None``); one clear error when the
    protocol is unknown or belongs to the other benchmark."""
    if protocol is None:
        return DEFAULTS[benchmark]
    if protocol not in PROTOCOLS:
        raise EvalInputError(f"--protocol {protocol!r}: unknown; choose from {', '.join(PROTOCOLS)}")
    if benchmark not in PROTOCOLS[protocol].benchmarks:
        usable = ", ".join(p.name for p in PROTOCOLS.values() if benchmark in p.benchmarks)
        raise EvalInputError(f"--protocol {protocol!r} is not a {benchmark} protocol; use one of {usable}")
    return protocol


def of_run(run) -> str:
    """The protocol of a stored run (runs from before protocols were named are ``prefkit`` runs)."""
    return (run.settings or {}).get("protocol") or "prefkit"


def label(protocol: str) -> str:
    """How reports name a protocol: its name and whose definition it follows."""
    p = PROTOCOLS.get(protocol)
    return f"{protocol} ({p.source})" if p else protocol
