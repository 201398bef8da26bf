"""What a verified instance cost: LLM dollars and tokens per stage from the call ledger, annotator
minutes per task kind from the label events, both divided by what the project has verified, and a
forecast of the time each batch still needs at the team's recent pace.

One function, :func:`cost_report`, answers ``prefkit cost``, the dataset card's *Cost* section and the
dashboard. It reads the store and never writes it, and reads no clock: the pace is measured over the
``pace_days`` before the last finished item, so the same logs give the same report (the card holds no
timestamp). The protocol of the numbers is in docs/release.md (*Cost per verified instance*).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from statistics import median
from typing import TYPE_CHECKING

from prefkit.curation.annotation.declared import DeclaredKind
from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, feeding
from prefkit.curation.quality.consensus import final_labels
from prefkit.curation.quality.study_report import study_reports
from prefkit.curation.quality.verification import (
    instance_verification,
    session_statuses,
    status_counts,
    verified_gold,
)
from prefkit.schemas.common import parse_utc

if TYPE_CHECKING:
    from prefkit.curation.store import LedgerRow, ProjectStore, SubmitTime
    from prefkit.schemas.config import AnnotationSection

STAGE_GROUPS = ("generation", "repair", "extraction", "evaluation", "evaluation judges", "other")
GENERATION_STAGES = ("personas", "factors", "sessions", "checklists", "dialogues", "instances")

#: What each verified unit is divided into: (LLM stage groups that made it, task kind that verified it).
VERIFIED_BY: dict[str, tuple[tuple[str, ...], str]] = {
    "CUPID instances": (("generation", "repair"), "preference_expressed"),
    "sessions": (("generation", "repair"), "preference_expressed"),
    "gold memories": (("extraction",), "memory_verify"),
    "matching pairs": (("evaluation judges",), "preference_match"),
}


def stage_group(stage: str, item: str) -> str:
    """The group of one ledger row (see the module's protocol)."""
    first = stage.split("+")[0]
    if first in GENERATION_STAGES:
        return "repair" if "#retry" in item or "#attempt" in item else "generation"
    if first.startswith(("memories.", "alpsbench.")):
        return "extraction"
    if first.startswith("eval."):
        last = first.rsplit(".", 1)[-1]
        return "evaluation judges" if last.startswith(("judge", "match")) else "evaluation"
    return "other"


@dataclass(frozen=True, slots=True)
class StageCost:
    """LLM calls of one stage group: answered calls, cache hits, failures, offline answers, tokens, US$."""

    stage: str
    calls: int = 0
    cached: int = 0
    failed: int = 0
    offline: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class KindTime:
    """Annotator time on one task kind: items finished, timed, total minutes (capped), median seconds,
    how many were capped and how many had no time."""

    kind: str
    items: int
    timed: int
    minutes: float
    median_s: float | None
    capped: int
    untimed: int


@dataclass(frozen=True, slots=True)
class VerifiedCost:
    """One kind of verified unit with the dollars and minutes divided into it (None: nothing verified)."""

    unit: str
    count: int
    stages: tuple[str, ...]
    kind: str
    cost_usd: float
    usd_per_unit: float | None
    minutes: float
    minutes_per_unit: float | None


@dataclass(frozen=True, slots=True)
class BatchForecast:
    """Labels a (kind, batch) still needs and how long they take at the kind's pace (None: no pace)."""

    kind: str
    batch_id: str
    tasks: int
    remaining_labels: int
    labels_per_day: float | None
    days_left: float | None


@dataclass(frozen=True)
class CostReport:
    stages: list[StageCost]
    times: list[KindTime]
    verified: list[VerifiedCost]
    forecast: list[BatchForecast]
    time_cap_s: float
    pace_days: float
    paced_until: str | None  # the last finished item: the pace window ends there
    #: per kind, the items and days the pace is measured on (``ENOUGH_PACE`` says when it is enough)
    paced: dict[str, tuple[int, float]] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)
    studies: list[StudyCost] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StudyCost:
    """A crowd study's cost (``prefkit crowd report``): participants, approved submissions, what they
    cost (rewards and bonuses) and the verified items it is divided into."""

    study_id: str
    kind: str
    batch_id: str
    participants: int
    approved: int
    currency: str
    cost: float
    verified_items: int
    cost_per_verified_item: float | None


# -- LLM ---------------------------------------------------------------------------------------------
def llm_costs(store: ProjectStore) -> list[StageCost]:
    """Per stage group (in :data:`STAGE_GROUPS` order, groups without calls left out)."""
    rows: list[LedgerRow] = store.llm.ledger()
    offline = {k for k, a in store.llm.cache_get({r.key for r in rows}).items() if a.meta.get("offline")}
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        g = acc[stage_group(r.stage, r.item)]
        g["calls"] += r.status == "done" and not r.from_cache
        g["cached"] += bool(r.from_cache)
        g["failed"] += r.status == "failed"
        g["offline"] += r.status == "done" and r.key in offline
        g["prompt_tokens"] += r.prompt_tokens
        g["completion_tokens"] += r.completion_tokens
        g["cost_usd"] += r.cost_usd
    return [_stage_cost(name, acc[name]) for name in STAGE_GROUPS if name in acc]


def _stage_cost(name: str, g: dict[str, float]) -> StageCost:
    counts = {
        k: int(g[k]) for k in ("calls", "cached", "failed", "offline", "prompt_tokens", "completion_tokens")
    }
    return StageCost(name, **counts, cost_usd=round(g["cost_usd"], 6))


# -- annotator time -----------------------------------------------------------------------------------
def kind_times(submits: list[SubmitTime], cap_s: float) -> list[KindTime]:
    """Per task kind, from the finished items (:meth:`Labels.submit_times`)."""
    by_kind: dict[str, list[SubmitTime]] = defaultdict(list)
    for s in submits:
        by_kind[s.kind].append(s)
    out = []
    for kind in sorted(by_kind):
        secs = [s.time_spent_s for s in by_kind[kind] if s.time_spent_s is not None]
        capped = [min(x, cap_s) for x in secs]
        out.append(
            KindTime(
                kind,
                items=len(by_kind[kind]),
                timed=len(secs),
                minutes=round(sum(capped) / 60, 4),
                median_s=round(median(capped), 3) if capped else None,
                capped=sum(x > cap_s for x in secs),
                untimed=len(by_kind[kind]) - len(secs),
            )
        )
    return out


# -- what is verified ---------------------------------------------------------------------------------
def verified_counts(store: ProjectStore) -> dict[str, int]:
    """How many CUPID instances, sessions, gold memories and matching pairs are verified now (the
    rules of the release: :mod:`prefkit.curation.quality.verification`, the ``matching`` config)."""
    statuses = session_statuses(store)
    links = store.content.instance_links()
    instances = sum(
        instance_verification(links.get(i.instance_id, []), statuses)[0] for i in store.content.instances()
    )
    pairs = sum(_decided(store, kind.name) for kind in feeding("matching"))
    memories = sum(len(v["memories"]) for v in verified_gold(store).values())
    declared = {f"{k} items": _decided(store, k, enough=True) for k in _declared_units()}
    return {
        "CUPID instances": instances,
        "sessions": status_counts(statuses)["verified"],
        "gold memories": memories,
        "matching pairs": pairs,
        **declared,
    }


def _declared_units() -> list[str]:
    """The project's declared kinds: each item people decided is a verified unit of its own."""
    return [k.name for k in TASK_KIND_REGISTRY.values() if isinstance(k, DeclaredKind) and not k.release]


def _decided(store: ProjectStore, kind: str, enough: bool = False) -> int:
    """Non-gold items decided (``enough``: on the labels they needed, as a declared kind's release)."""
    finals = final_labels(store, kind)
    return sum(
        1
        for t in store.labels.tasks(kind=kind)
        if not t.is_gold
        and finals[t.task_id].values is not None
        and (not enough or finals[t.task_id].enough(t))
    )


def _per_unit(stages: list[StageCost], times: list[KindTime], counts: dict[str, int]) -> list[VerifiedCost]:
    usd = {s.stage: s.cost_usd for s in stages}
    minutes = {t.kind: t.minutes for t in times}
    out = []
    units = {**VERIFIED_BY, **{f"{k} items": ((), k) for k in _declared_units()}}
    for unit, (groups, kind) in units.items():
        n, dollars, mins = counts.get(unit, 0), sum(usd.get(g, 0.0) for g in groups), minutes.get(kind, 0.0)
        out.append(
            VerifiedCost(
                unit,
                n,
                groups,
                kind,
                round(dollars, 6),
                round(dollars / n, 6) if n else None,
                round(mins, 4),
                round(mins / n, 4) if n else None,
            )
        )
    return out


# -- forecast -----------------------------------------------------------------------------------------
#: A pace a forecast is shown from (the dashboard): this many items over at least this many days.
ENOUGH_PACE = (20, 1.0)


def _pace(submits: list[SubmitTime], days: float) -> tuple[dict[str, float], str | None]:
    """Items finished per day per kind over the ``days`` before the last finished item."""
    return {kind: n / span for kind, (n, span) in _paced(submits, days).items()}, (
        max(s.created_at for s in submits) if submits else None
    )


def _paced(submits: list[SubmitTime], days: float) -> dict[str, tuple[int, float]]:
    """Per kind: the items finished over the ``days`` before the last finished item, and the days
    from the first of them to the last (at least an hour): what a pace is measured on."""
    if not submits:
        return {}
    last = max(s.created_at for s in submits)
    start = parse_utc(last) - timedelta(days=days)
    recent: dict[str, list[str]] = defaultdict(list)
    for s in submits:
        if parse_utc(s.created_at) >= start:
            recent[s.kind].append(s.created_at)
    out = {}
    for kind, times in recent.items():
        span = (parse_utc(max(times)) - parse_utc(min(times))).total_seconds() / 86_400
        out[kind] = (len(times), max(span, 1 / 24))
    return out


def forecast(store: ProjectStore, submits: list[SubmitTime], pace: dict[str, float]) -> list[BatchForecast]:
    finished: dict[str, set[str]] = defaultdict(set)
    for s in submits:
        finished[s.task_id].add(s.annotator)
    remaining: dict[tuple[str, str], list[int]] = {}
    for t in store.labels.tasks():
        if t.is_gold:
            continue
        row = remaining.setdefault((t.kind, t.batch), [0, 0])
        row[0] += 1
        row[1] += max(0, t.overlap - len(finished.get(t.task_id, ())))
    out = []
    for (kind, batch), (tasks, left) in sorted(remaining.items()):
        per_day = pace.get(kind)
        days = None if not per_day else round(left / per_day, 3)
        out.append(BatchForecast(kind, batch, tasks, left, round(per_day, 3) if per_day else None, days))
    return out


def cost_report(store: ProjectStore, annotation: AnnotationSection) -> CostReport:
    """Everything ``prefkit cost``, the card and the dashboard show (see the module's protocol)."""
    submits = store.labels.submit_times()
    stages = llm_costs(store)
    times = kind_times(submits, annotation.time_cap_s)
    pace, last = _pace(submits, annotation.pace_days)
    totals = {
        "cost_usd": round(sum(s.cost_usd for s in stages), 6),
        "tokens": sum(s.prompt_tokens + s.completion_tokens for s in stages),
        "minutes": round(sum(t.minutes for t in times), 4),
        "items": sum(t.items for t in times),
    }
    return CostReport(
        stages=stages,
        times=times,
        verified=_per_unit(stages, times, verified_counts(store)),
        forecast=forecast(store, submits, pace),
        time_cap_s=annotation.time_cap_s,
        pace_days=annotation.pace_days,
        paced_until=last,
        paced=_paced(submits, annotation.pace_days),
        totals=totals,
        studies=[
            StudyCost(
                r.study_id,
                r.kind,
                r.batch_id,
                r.totals["participants"],
                r.totals["approve"],
                r.currency,
                r.totals["cost"],
                r.totals["verified_items"],
                r.totals["cost_per_verified_item"],
            )
            for r in study_reports(store)
        ],
    )
