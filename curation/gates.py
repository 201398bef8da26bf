"""Release gates: the checks a project must pass before ``prefkit release cut`` lets data out.

Each gate is a small function ``(GateContext) -> GateResult`` registered in :data:`GATES`, in the
order ``prefkit release check`` prints them. A failing gate names the items, fields or annotators
behind it. The policy comes from the ``[release]`` table of ``prefkit.toml``; agreement and gold
accuracy come from :mod:`curation.agreement` and :mod:`curation.workflow`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from curation.consensus import disagreements, effective_adjudications, live_flags, live_labels
from curation.evidence import check_memory, evidence_rows
from schemas.common import PrefkitError

FINAL_ALPHA_MIN = 0.800
TENTATIVE_ALPHA_MIN = 0.667
#: Culprits printed per failing gate; the JSON report carries all of them.
SHOWN_CULPRITS = 10


class GateUnavailable(PrefkitError):
    """A gate's input (agreement, gold accuracy) cannot be computed in this installation."""


class PolicyError(PrefkitError):
    """The ``[release]`` policy in prefkit.toml is invalid."""


@dataclass
class GateResult:
    """One gate's outcome: a measured value against a threshold, and who or what failed it."""

    gate: str
    passed: bool
    value: Any
    threshold: Any
    summary: str
    culprits: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Policy:
    policy: str
    alpha_min: dict[str, float] | float
    min_labels_per_item: int
    gold_accuracy_min: float
    allow_offline: bool
    adjudicate: str

    def alpha_for(self, kind: str, field_name: str) -> float:
        if isinstance(self.alpha_min, dict):
            return float(
                self.alpha_min.get(f"{kind}.{field_name}", self.alpha_min.get("default", FINAL_ALPHA_MIN))
            )
        return float(self.alpha_min)


def load_policy(config: dict[str, Any]) -> Policy:
    """The ``[release]`` policy, checked: α below 0.800 needs ``policy = "tentative"``, never below 0.667."""
    rel = config.get("release", {})
    policy = Policy(
        policy=rel.get("policy", "final"),
        alpha_min=rel.get("alpha_min", FINAL_ALPHA_MIN),
        min_labels_per_item=int(rel.get("min_labels_per_item", 3)),
        gold_accuracy_min=float(rel.get("gold_accuracy_min", 0.8)),
        allow_offline=bool(rel.get("allow_offline", False)),
        adjudicate=rel.get("adjudicate", "ties"),
    )
    if policy.policy not in ("final", "tentative"):
        raise PolicyError(f"[release] policy must be 'final' or 'tentative', not {policy.policy!r}")
    if policy.adjudicate not in ("ties", "all"):
        raise PolicyError(f"[release] adjudicate must be 'ties' or 'all', not {policy.adjudicate!r}")
    floor = FINAL_ALPHA_MIN if policy.policy == "final" else TENTATIVE_ALPHA_MIN
    values = policy.alpha_min.values() if isinstance(policy.alpha_min, dict) else [policy.alpha_min]
    for v in values:
        if float(v) < floor - 1e-9:
            raise PolicyError(
                f"[release] alpha_min {v} is below {floor:.3f}, the floor of policy {policy.policy!r}"
                + ('; set policy = "tentative" to allow down to 0.667' if policy.policy == "final" else "")
            )
    return policy


# -- the evidence check (one implementation: curation.evidence) ------------------------------------------
def evidence_problem(memory: dict[str, Any], turns: list[dict[str, Any]]) -> str | None:
    """Why a gold memory's evidence is not where it says (a near miss included), or ``None``."""
    verdict = check_memory(memory, turns, cite_required=True)
    return None if verdict.status == "pass" else verdict.reason


def gold_evidence_failures(store) -> list[dict[str, Any]]:
    """Gold memories whose evidence check is not ``pass``: ``{dialogue_id, memory_id, status, problem}``."""
    return [
        {
            "dialogue_id": r["session_id"],
            "memory_id": r["memory_id"],
            "status": r["status"],
            "problem": r["reason"],
        }
        for r in evidence_rows(store, "gold")
        if r["status"] != "pass"
    ]


# -- gates ------------------------------------------------------------------------------------------
@dataclass
class GateContext:
    store: Any
    policy: Policy
    agreement_rows: Callable[..., list[dict[str, Any]]] | None = None
    gold_accuracy: Callable[..., list[dict[str, Any]]] | None = None
    _cache: dict[str, Any] = field(default_factory=dict)

    def agreement(self) -> list[dict[str, Any]]:
        if "agreement" not in self._cache:
            fn = self.agreement_rows
            if fn is None:
                fn = _provider("curation.agreement", "agreement_rows")
            self._cache["agreement"] = fn(self.store)
        return self._cache["agreement"]


def _provider(module: str, name: str) -> Callable[..., list[dict[str, Any]]]:
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise GateUnavailable(f"{module}.{name} is not available, so this gate cannot be evaluated") from None


def _result(gate: str, culprits: list[str], value, threshold, ok_text: str, fail_text: str) -> GateResult:
    passed = not culprits
    return GateResult(gate, passed, value, threshold, ok_text if passed else fail_text, culprits)


def gate_alpha(ctx: GateContext) -> GateResult:
    """α of every labelled field (human vs human) against α_min; an undefined α fails."""
    rows = [
        r
        for r in ctx.agreement()
        if r.get("n_units") and r.get("comparison", "human-vs-human") == "human-vs-human"
    ]
    culprits, lowest = [], None
    for r in rows:
        need = ctx.policy.alpha_for(r["task_kind"], r["field"])
        alpha = r.get("alpha")
        lowest = alpha if lowest is None or (alpha is not None and alpha < lowest) else lowest
        if alpha is None or alpha < need:
            shown = "undefined" if alpha is None else f"{alpha:.3f}"
            has_ci = r.get("ci_low") is not None and r.get("ci_high") is not None
            ci = f" [{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if has_ci else ""
            culprits.append(f"{r['task_kind']}.{r['field']}: α {shown}{ci} < {need:.3f}")
    value = None if lowest is None else round(lowest, 3)
    threshold = ctx.policy.alpha_min
    ok = f"min α {value} over {len(rows)} field(s)" if rows else "no labelled fields"
    return _result(
        "alpha", culprits, value, threshold, ok, f"{len(culprits)} of {len(rows)} field(s) below α_min"
    )


def gate_min_labels(ctx: GateContext) -> GateResult:
    """Live labels per non-gold task against ``min_labels_per_item``."""
    need = ctx.policy.min_labels_per_item
    labels = live_labels(ctx.store)
    tasks = [t for t in ctx.store.tasks() if not t.is_gold]
    short = [
        f"{t.task_id} ({len(labels.get(t.task_id, {}))})"
        for t in tasks
        if len(labels.get(t.task_id, {})) < need
    ]
    fewest = min((len(labels.get(t.task_id, {})) for t in tasks), default=None)
    return _result(
        "min_labels",
        short,
        fewest,
        need,
        f"every one of {len(tasks)} task(s) has ≥ {need} labels",
        f"{len(short)} of {len(tasks)} task(s) have < {need} labels",
    )


def gate_adjudicated(ctx: GateContext) -> GateResult:
    """Ties (or, with ``adjudicate = "all"``, every disagreement) must have an adjudication."""
    rows = disagreements(ctx.store)
    must = [d for d in rows if ctx.policy.adjudicate == "all" or d["decided_by"] == "undecided"]
    open_ = [f"{d['task_id']} ({d['kind']})" for d in must if not d["adjudicated"]]
    what = "disagreement(s)" if ctx.policy.adjudicate == "all" else "tie(s)"
    return _result(
        "adjudicated",
        open_,
        len(open_),
        0,
        f"all {len(must)} {what} adjudicated ({len(rows)} disagreement(s) in all)",
        f"{len(open_)} {what} not adjudicated",
    )


def gate_flags(ctx: GateContext) -> GateResult:
    """A flag stays unresolved while it is the annotator's live event and no maintainer decided."""
    decided = effective_adjudications(ctx.store)
    open_ = [
        f"{ev.task_id} flagged by {ev.annotator}: {ev.comment or '(no comment)'}"
        for ev in live_flags(ctx.store)
        if ev.task_id not in decided
    ]
    return _result("flags", open_, len(open_), 0, "no unresolved flags", f"{len(open_)} unresolved flag(s)")


def gate_gold_accuracy(ctx: GateContext) -> GateResult:
    """Every annotator's accuracy on gold items, per task kind, against ``gold_accuracy_min``."""
    fn = ctx.gold_accuracy
    if fn is None:
        fn = _provider("curation.workflow", "gold_accuracy")
    rows = [r for r in fn(ctx.store) if r.get("n_gold")]
    need = ctx.policy.gold_accuracy_min
    low = [
        f"{r['annotator']} on {r['task_kind']}: {r['accuracy']:.3f} over {r['n_gold']} gold"
        for r in rows
        if r["accuracy"] < need
    ]
    worst = min((round(r["accuracy"], 3) for r in rows), default=None)
    return _result(
        "gold_accuracy",
        low,
        worst,
        need,
        f"{len(rows)} annotator/kind pair(s) ≥ {need}",
        f"{len(low)} annotator/kind pair(s) below {need}",
    )


def gate_offline(ctx: GateContext) -> GateResult:
    """Released records made by the offline backend, refused unless ``allow_offline = true``."""
    refs = ctx.store.offline_references()
    culprits = [] if ctx.policy.allow_offline else [f"{r['table']}:{r['id']}" for r in refs]
    ok = f"{len(refs)} offline-generated record(s)" + (" (allowed)" if ctx.policy.allow_offline else "")
    return _result(
        "offline",
        culprits,
        len(refs),
        "allowed" if ctx.policy.allow_offline else 0,
        ok,
        f"{len(refs)} released record(s) made by the offline backend",
    )


def gate_gold_evidence(ctx: GateContext) -> GateResult:
    """Every gold memory's evidence quote must be in the turn its ``utterance_index`` names."""
    fails = gold_evidence_failures(ctx.store)
    n = ctx.store.count("memories", origin="gold")
    culprits = [f"{f['dialogue_id']}/{f['memory_id']}: {f['problem']}" for f in fails]
    return _result(
        "gold_evidence",
        culprits,
        len(fails),
        0,
        f"all {n} gold memories grounded",
        f"{len(fails)} of {n} gold memories fail the evidence check",
    )


GATES: tuple[tuple[str, Callable[[GateContext], GateResult]], ...] = (
    ("alpha", gate_alpha),
    ("min_labels", gate_min_labels),
    ("adjudicated", gate_adjudicated),
    ("flags", gate_flags),
    ("gold_accuracy", gate_gold_accuracy),
    ("offline", gate_offline),
    ("gold_evidence", gate_gold_evidence),
)


def run_gates(store, config: dict[str, Any], agreement_rows=None, gold_accuracy=None) -> list[GateResult]:
    """Every gate's result, in order. ``agreement_rows`` / ``gold_accuracy`` default to the project's."""
    ctx = GateContext(store, load_policy(config), agreement_rows, gold_accuracy)
    results = []
    for name, fn in GATES:
        try:
            results.append(fn(ctx))
        except GateUnavailable as exc:
            results.append(GateResult(name, False, None, None, str(exc), [str(exc)]))
    return results


def format_report(results: list[GateResult]) -> list[str]:
    """Lines of ``prefkit release check``: each gate, its number, pass/fail, then its culprits."""
    lines = []
    for i, r in enumerate(results, start=1):
        lines.append(
            f"{i}. {'PASS' if r.passed else 'FAIL'}  {r.gate:<14} {r.value!s:>8}  (need {r.threshold})  {r.summary}"
        )
        for c in r.culprits[:SHOWN_CULPRITS]:
            lines.append(f"       - {c}")
        if len(r.culprits) > SHOWN_CULPRITS:
            lines.append(f"       ... and {len(r.culprits) - SHOWN_CULPRITS} more (--json lists all)")
    return lines
