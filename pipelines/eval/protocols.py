"""Evaluation protocols: which steps and which arithmetic produced a number, named.

A number is comparable with a paper's table only when it was made the way the paper's own code makes
it. Every run records its protocol (``settings["protocol"]``), every report and export names it, and
``prefkit eval report`` refuses to put runs of different protocols in one table unless asked to
(then each row says its protocol). docs/eval.md has the table of what each protocol computes and
where it differs from the papers. Runs stored before protocols existed were ``prefkit`` runs.
This module only describes; it never scores.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from prefkit.pipelines.eval.release import EvalInputError


@dataclass(frozen=True)
class Protocol:
    name: str
    benchmarks: tuple[str, ...]
    summary: str  # one line: what it computes
    source: str  # whose definition it follows


#: Each protocol, from protocols.toml beside this module (in the order reports list them).
PROTOCOLS: dict[str, Protocol] = {
    name: Protocol(name, tuple(p["benchmarks"]), p["summary"], p["source"])
    for name, p in tomllib.loads(
        resources.files(__package__).joinpath("protocols.toml").read_text("utf-8")
    ).items()
}
DEFAULTS = {"cupid": "cupid-official", "alpsbench": "alpsbench-public", "declared": "prefkit-declared-v1"}
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
