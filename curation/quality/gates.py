"""Release gates: the checks a project must pass before ``prefkit release cut`` lets data out.

Each gate is a small function ``(GateContext) -> GateResult`` registered in :data:`GATES`, in the
order ``prefkit release check`` prints them. A failing gate names the items, fields or annotators
behind it. The policy comes from the ``[release]`` table of ``prefkit.toml``; agreement and gold
accuracy come from :mod:`prefkit.curation.quality.agreement` and :mod:`prefkit.curation.annotation.workflow`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, feeding, item_name
from prefkit.curation.annotation.workflow import gold_accuracy as project_gold_accuracy
from prefkit.curation.quality.agreement import agreement_rows as project_agreement_rows
from prefkit.curation.quality.consensus import (
    disagreements,
    effective_adjudications,
    labels_needed,
    live_flags,
    live_labels,
)
from prefkit.curation.quality.evidence import check_memory, evidence_rows
from prefkit.curation.quality.suggestions import arm_events, assist_report
from prefkit.curation.quality.verification import verified_gold_evidence
from prefkit.schemas.common import PrefkitError
from prefkit.schemas.config import FINAL_ALPHA_MIN, LABEL_CONFIGS, TENTATIVE_ALPHA_MIN, ReleasePolicy

if TYPE_CHECKING:
    from prefkit.curation.store import DialogueTurn, ProjectStore

#: Culprits printed per failing gate; the JSON report carries all of them.
SHOWN_CULPRITS = 10


class GateUnavailable(PrefkitError):
    """A gate's input (agreement, gold accuracy) cannot be computed: raised by a provider passed to
    :func:`run_gates`, reported as that gate's failure."""


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
    applies_to: list[str] = field(default_factory=list)  # the release configs this gate guards

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_policy(policy: ReleasePolicy) -> ReleasePolicy:
    """The ``[release]`` policy, checked: α below 0.800 needs ``policy = "tentative"``, never below 0.667.
    (Its closed choices, ``policy``, ``adjudicate`` and ``alpsbench_reference``, are checked when
    ``prefkit.toml`` is read.)"""
    floor = FINAL_ALPHA_MIN if policy.policy == "final" else TENTATIVE_ALPHA_MIN
    values = policy.alpha_min.values() if isinstance(policy.alpha_min, dict) else [policy.alpha_min]
    for v in values:
        if float(v) < floor - 1e-9:
            raise PolicyError(
                f"[release] alpha_min {v} is below {floor:.3f}, the floor of policy {policy.policy!r}"
                + ('; set policy = "tentative" to allow down to 0.667' if policy.policy == "final" else "")
            )
    return policy


# -- the evidence check (one implementation: prefkit.curation.quality.evidence) ------------------------------------------
def evidence_problem(memory: dict[str, Any], turns: list[DialogueTurn]) -> str | None:
    """Why a gold memory's evidence is not where it says (a near miss included), or ``None``."""
    verdict = check_memory(memory, turns, cite_required=True)
    return None if verdict.status == "pass" else verdict.reason


def gold_evidence_failures(store: ProjectStore) -> list[dict[str, Any]]:
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
class ConfigPlan:
    """What a gate needs to know of one release config: its name, the task kinds whose labels decide
    its rows, and how many rows it has and had to leave out."""

    name: str
    needs: tuple[str, ...]
    count: int
    dropped: dict[str, int] = field(default_factory=dict)


@dataclass
class GateContext:
    store: Any
    policy: ReleasePolicy
    agreement_rows: Callable[..., list[dict[str, Any]]] | None = None
    gold_accuracy: Callable[..., list[dict[str, Any]]] | None = None
    configs: list[ConfigPlan] = field(default_factory=list)
    #: ``() -> (test gold objects looked for, where one is public)``: the release's planner (exports)
    #: provides it, since only it knows what a release publishes.
    test_gold: Callable[[], tuple[int, list[str]]] | None = None
    _cache: dict[str, Any] = field(default_factory=dict)

    def agreement(self) -> list[dict[str, Any]]:
        if "agreement" not in self._cache:
            fn = self.agreement_rows or project_agreement_rows
            self._cache["agreement"] = fn(self.store)
        return self._cache["agreement"]

    def needed(self) -> dict[str, list[str]]:
        """``{task kind: [configs that need its labels]}`` over the configs of this release."""
        out: dict[str, list[str]] = {}
        for c in self.configs:
            for kind in c.needs:
                out.setdefault(kind, []).append(c.name)
        return out

    def labelled(self) -> list[str]:
        """Configs whose rows depend on labels (the label gates guard them)."""
        return [c.name for c in self.configs if c.needs]

    def named(self, task_id: str) -> str:
        """A task as a report names it: its id, and its item's id and summary (:func:`item_name`)."""
        return f"{task_id} [{item_name(self.store.labels.task(task_id))}]"

    def superseded(self) -> set[str]:
        if "superseded" not in self._cache:
            self._cache["superseded"] = set().union(
                *(kind.superseded(self.store) for kind in TASK_KIND_REGISTRY.values())
            )
        return self._cache["superseded"]


def _needs_text(kind: str, configs: list[str]) -> str:
    # A message names the data configs first (the label configs depend on every kind).
    data = [c for c in configs if c not in LABEL_CONFIGS]
    configs = data or configs
    names = ", ".join(f"`{c}`" for c in configs)
    return f"the {names} config{'s' if len(configs) > 1 else ''} need{'' if len(configs) > 1 else 's'} them"


def _not_applicable(gate: str, threshold: Any) -> GateResult:
    return GateResult(
        gate, True, None, threshold, "not applicable: no config of this release depends on labels"
    )


def _result(gate: str, culprits: list[str], value, threshold, ok_text: str, fail_text: str) -> GateResult:
    passed = not culprits
    return GateResult(gate, passed, value, threshold, ok_text if passed else fail_text, culprits)


def gate_alpha(ctx: GateContext) -> GateResult:
    """α of every labelled field (human vs human) against α_min; an undefined α fails, and so does a
    task kind a released config depends on that has no labelled field at all."""
    needed = ctx.needed()
    if not needed:
        return _not_applicable("alpha", ctx.policy.alpha_min)
    rows = [
        r
        for r in ctx.agreement()
        if r.get("n_units") and r.get("comparison", "human-vs-human") == "human-vs-human"
    ]
    culprits, lowest = [], None
    have = {r["task_kind"] for r in rows}
    for kind, configs in sorted(needed.items()):
        if kind not in have:
            culprits.append(f"no labels for {kind}: {_needs_text(kind, configs)}")
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
    fail = culprits[0] if len(culprits) == 1 else f"{len(culprits)} problem(s) over {len(rows)} field(s)"
    return _result(
        "alpha", culprits, value, ctx.policy.alpha_min, f"min α {value} over {len(rows)} field(s)", fail
    )


def _live_tasks(ctx: GateContext, kinds) -> list:
    skip = ctx.superseded()
    return [
        t for t in ctx.store.labels.tasks() if t.kind in kinds and not t.is_gold and t.task_id not in skip
    ]


def gate_min_labels(ctx: GateContext) -> GateResult:
    """Live labels per non-gold task (of the kinds the release depends on) against what the task
    needs: ``[release] min_labels_per_item`` when set, else the overlap the task was created with; a
    task under adaptive overlap needs the labels of its current target (its labels were certain
    there, or the target reached ``max``). The figure is the fewest labels a task has; the threshold
    what those tasks need (one number, or the range of their overlaps)."""
    set_to = ctx.policy.min_labels_per_item
    needed = ctx.needed()
    if not needed:
        return _not_applicable("min_labels", set_to)
    labels = live_labels(ctx.store)
    tasks = _live_tasks(ctx, needed)
    short = [
        f"no {kind} tasks: {_needs_text(kind, configs)}"
        for kind, configs in sorted(needed.items())
        if not any(t.kind == kind for t in tasks)
    ]
    short += [
        f"{t.task_id} [{item_name(t)}] ({len(labels.get(t.task_id, {}))} of {labels_needed(t, set_to)})"
        for t in tasks
        if len(labels.get(t.task_id, {})) < labels_needed(t, set_to)
    ]
    fewest = min((len(labels.get(t.task_id, {})) for t in tasks), default=None)
    needs = sorted({labels_needed(t, set_to) for t in tasks}) or ([set_to] if set_to else [])
    threshold = (needs[0] if len(needs) == 1 else f"{needs[0]}-{needs[-1]}") if needs else None
    return _result(
        "min_labels",
        short,
        fewest,
        threshold,
        f"every one of {len(tasks)} task(s) has ≥ {threshold} labels"
        + (" (their overlap)" if set_to is None else ""),
        short[0] if len(short) == 1 else f"{len(short)} problem(s) over {len(tasks)} task(s)",
    )


def gate_adjudicated(ctx: GateContext) -> GateResult:
    """Ties (or, with ``adjudicate = "all"``, every disagreement) must have an adjudication."""
    needed = ctx.needed()
    if not needed:
        return _not_applicable("adjudicated", 0)
    skip = ctx.superseded()
    rows = [d for d in disagreements(ctx.store) if d.kind in needed and d.task_id not in skip]
    must = [d for d in rows if ctx.policy.adjudicate == "all" or d.decided_by == "undecided"]
    open_ = [f"{ctx.named(d.task_id)} ({d.kind})" for d in must if not d.adjudicated]
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
    needed = ctx.needed()
    if not needed:
        return _not_applicable("flags", 0)
    decided = effective_adjudications(ctx.store)
    skip = ctx.superseded()
    open_ = [
        f"{ctx.named(ev.task_id)} flagged by {ev.annotator}: {ev.comment or '(no comment)'}"
        for ev in live_flags(ctx.store)
        if ev.task_id not in decided and ev.kind in needed and ev.task_id not in skip
    ]
    return _result("flags", open_, len(open_), 0, "no unresolved flags", f"{len(open_)} unresolved flag(s)")


def gate_gold_accuracy(ctx: GateContext) -> GateResult:
    """Every annotator's accuracy on gold items, per task kind, against ``gold_accuracy_min``; a kind
    the release depends on with no labelled gold item fails unless ``require_gold = false``."""
    need = ctx.policy.gold_accuracy_min
    needed = ctx.needed()
    if not needed:
        return _not_applicable("gold_accuracy", need)
    fn = ctx.gold_accuracy or project_gold_accuracy
    rows = [r for r in fn(ctx.store) if r.get("n_gold") and r["task_kind"] in needed]
    low = []
    if ctx.policy.require_gold:
        have = {r["task_kind"] for r in rows}
        low += [
            f"no labelled gold items for {kind}: {_needs_text(kind, configs)} (or set require_gold = false)"
            for kind, configs in sorted(needed.items())
            if kind not in have
        ]
    low += [
        f"{r['annotator']} on {r['task_kind']}: {r['accuracy']:.3f} over {r['n_gold']} gold"
        for r in rows
        if r["accuracy"] < need
    ]
    worst = min((round(r["accuracy"], 3) for r in rows), default=None)
    ok = f"{len(rows)} annotator/kind pair(s) ≥ {need}" + (
        "" if ctx.policy.require_gold else " (gold not required)"
    )
    return _result(
        "gold_accuracy",
        low,
        worst,
        need,
        ok,
        low[0] if len(low) == 1 else f"{len(low)} problem(s) with gold accuracy",
    )


def gate_offline(ctx: GateContext) -> GateResult:
    """Released records made by the offline backend, refused unless ``allow_offline = true``."""
    refs = ctx.store.releases.offline_references()
    culprits = [] if ctx.policy.allow_offline else [f"{r.table}:{r.id}" for r in refs]
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
    """Every gold memory's evidence quote must be in the turn its ``utterance_index`` names: the
    verified gold when the AlpsBench configs depend on ``memory_verify``, else the imported gold."""
    alps = [c for c in ctx.configs if APPLIES["gold_evidence"](c)]
    if not alps:
        return GateResult(
            "gold_evidence", True, None, 0, "not applicable: no AlpsBench config in this release"
        )
    # the kinds whose labels verify the packets' gold (memory_verify: no hook; task_qc's judges built rows)
    verifier = ", ".join(k.name for k in feeding("alpsbench_*") if not k.release_hook("alpsbench_*"))
    if any(verifier in c.needs for c in alps):
        n, fails = verified_gold_evidence(ctx.store)
        what = "verified gold memories"
        if n == 0:
            names = [c.name for c in alps if verifier in c.needs and not c.name.endswith("_gold")]
            reason = f"no verified gold memories: {_needs_text(verifier, names)}"
            return GateResult("gold_evidence", False, 0, 0, reason, [reason])
    else:
        fails, n = gold_evidence_failures(ctx.store), ctx.store.count("memories", origin="gold")
        what = "gold memories"
    culprits = [f"{f['dialogue_id']}/{f['memory_id']}: {f['problem']}" for f in fails]
    return _result(
        "gold_evidence",
        culprits,
        len(fails),
        0,
        f"all {n} {what} grounded",
        f"{len(fails)} of {n} {what} fail the evidence check",
    )


def gate_assist_anchoring(ctx: GateContext) -> GateResult:
    """Labels made with a suggestion on screen (``[release] assisted``): ``forbid`` fails on any;
    ``control_only`` leaves them out of the release; ``allow`` fails for a kind whose anchoring rate
    is significantly above the control arm's (:mod:`prefkit.curation.quality.suggestions`), or that cannot
    be measured (no gold unit with a wrong suggestion in one of the arms) while its assisted labels
    would ship."""
    gate, mode = "assist_anchoring", ctx.policy.assisted
    needed = ctx.needed()
    if not needed:
        return _not_applicable(gate, mode)
    assisted = [e for e in arm_events(ctx.store) if e.assist_arm == "assisted" and e.kind in needed]
    kinds = sorted({e.kind for e in assisted})
    per_kind = ", ".join(f"{k}: {sum(e.kind == k for e in assisted)}" for k in kinds)
    if not assisted:
        return GateResult(gate, True, 0, mode, "no released label was made with a suggestion on screen")
    if mode == "control_only":
        return GateResult(
            gate,
            True,
            len(assisted),
            mode,
            f"{len(assisted)} assisted label(s) left out of the release ({per_kind})",
        )
    if mode == "forbid":
        culprits = [f"{k}: {sum(e.kind == k for e in assisted)} assisted label(s)" for k in kinds]
        return GateResult(
            gate,
            False,
            len(assisted),
            mode,
            f'{len(assisted)} label(s) made with a suggestion on screen; assisted = "forbid"',
            culprits,
        )
    report = assist_report(ctx.store)
    culprits = []
    for k in kinds:
        ka = report.kinds[k]
        a, c = ka.arms["assisted"].anchoring_rate, ka.arms["control"].anchoring_rate
        if ka.significantly_worse is None:
            empty = [arm for arm, est in (("assisted", a), ("control", c)) if est.value is None]
            culprits.append(
                f"{k}: nothing to measure: no gold unit with a wrong suggestion in the "
                f"{' and '.join(empty)} arm; {_needs_text(k, needed[k])}"
            )
        elif ka.significantly_worse:
            d = ka.anchoring_difference
            culprits.append(
                f"{k}: anchoring {a.value:.3f} assisted vs {c.value:.3f} control, difference "
                f"{d.value:+.3f} [{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
            )
    return _result(
        gate,
        culprits,
        len(assisted),
        "anchoring not above control (one-sided 5%)",
        f"{len(assisted)} assisted label(s); anchoring not significantly above control ({per_kind})",
        f"{len(culprits)} kind(s) with assisted labels fail the anchoring check",
    )


def gate_test_gold_private(ctx: GateContext) -> GateResult:
    """No test-split reference (AlpsBench's gold, a declared kind's private test answers) in anything the
    release publishes. A release with such a split but no test gold to look for fails."""
    gate = "test_gold_private"
    if not [c for c in ctx.configs if APPLIES[gate](c)]:
        return GateResult(gate, True, None, 0, "not applicable: no AlpsBench track in this release")
    if ctx.test_gold is None:
        raise GateUnavailable(f"{gate}: the release planner gave no test gold to look for")
    checked, leaks = ctx.test_gold()
    if checked == 0:
        reason = "nothing to measure: no test-split gold (every AlpsBench track, and each declared kind with [release] splits, needs a decided test item)"
        return GateResult(gate, False, 0, 0, reason, [reason])
    return _result(
        gate,
        leaks,
        len(leaks),
        0,
        f"none of {checked} test-split gold objects is in a public file",
        f"{len(leaks)} public place(s) hold test-split gold",
    )


GATES: tuple[tuple[str, Callable[[GateContext], GateResult]], ...] = (
    ("alpha", gate_alpha),
    ("min_labels", gate_min_labels),
    ("adjudicated", gate_adjudicated),
    ("flags", gate_flags),
    ("gold_accuracy", gate_gold_accuracy),
    ("offline", gate_offline),
    ("gold_evidence", gate_gold_evidence),
    ("assist_anchoring", gate_assist_anchoring),
    ("test_gold_private", gate_test_gold_private),
)


#: Which configs each gate guards: the label gates those that depend on labels; ``offline`` every one.
APPLIES: dict[str, Callable[[ConfigPlan], bool]] = {
    "alpha": lambda c: bool(c.needs),
    "min_labels": lambda c: bool(c.needs),
    "adjudicated": lambda c: bool(c.needs),
    "flags": lambda c: bool(c.needs),
    "gold_accuracy": lambda c: bool(c.needs),
    "offline": lambda c: True,
    "gold_evidence": lambda c: (
        c.name.startswith("alpsbench") and not c.name.startswith("alpsbench_unverified")
    ),
    "assist_anchoring": lambda c: bool(c.needs),
    "test_gold_private": lambda c: c.name.startswith("alpsbench_task") or c.name.endswith("_test_answers"),
}


def run_gates(
    store: ProjectStore,
    policy: ReleasePolicy,
    configs,
    agreement_rows=None,
    gold_accuracy=None,
    test_gold=None,
) -> list[GateResult]:
    """Every gate's result, in order, for a release holding ``configs`` (:class:`ConfigPlan` or
    ``prefkit.exports.release_data.ConfigData``: ``exports`` owns the configs, so it plans them and passes them
    in). ``agreement_rows`` / ``gold_accuracy`` default to the project's; ``test_gold`` (see
    :class:`GateContext`) comes from the planner."""
    policy = check_policy(policy)
    plans = [
        c if isinstance(c, ConfigPlan) else ConfigPlan(c.name, c.needs, c.count, dict(c.dropped))
        for c in configs
    ]
    ctx = GateContext(store, policy, agreement_rows, gold_accuracy, plans, test_gold)
    results = []
    for name, fn in GATES:
        try:
            result = fn(ctx)
        except GateUnavailable as exc:
            result = GateResult(name, False, None, None, str(exc), [str(exc)])
        result.applies_to = [c.name for c in plans if APPLIES[name](c)]
        results.append(result)
    return results


def config_report(results: list[GateResult], configs) -> list[str]:
    """Lines listing, per release config, its rows, what it dropped and which gates apply to it."""
    lines = ["configs (rows, dropped) and the gates that apply to each:"]
    for c in configs:
        gates = [r.gate for r in results if c.name in r.applies_to]
        dropped = sum(c.dropped.values())
        lines.append(
            f"  {c.name:<22} {c.count:>6} rows  {dropped:>5} dropped  gates: {', '.join(gates) or 'none'}"
        )
        for reason, n in sorted(c.dropped.items()):
            lines.append(f"       - {n} {reason}")
    return lines


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
