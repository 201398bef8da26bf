"""A crowd study's review: per participant what they did and how well, a suggested decision with its
reason, a bonus by the study's rule, the files a platform's bulk approval and bulk bonus take, and
what the study cost per verified item.

Reads the store, never writes it (``prefkit crowd report``; the card's *Cost* section). The protocol
of every column (flags are reasons to reject, notes never are; a speed threshold not stated in
advance is never a reason) is in docs/crowd.md (*Review and pay*).
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import Counter
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from statistics import median
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.annotator_model import annotator_reliability, fit_kind
from prefkit.curation.annotation.studies import get_study, min_answered, time_over
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.quality.agreement import self_alpha_reason, self_alphas
from prefkit.curation.quality.consensus import final_labels
from prefkit.schemas.common import canonical_json, parse_utc
from prefkit.schemas.config import TENTATIVE_ALPHA_MIN
from prefkit.schemas.safe_text import csv_cell

if TYPE_CHECKING:
    from prefkit.curation.project import Project
    from prefkit.curation.store import Participant, ProjectStore, Study
    from prefkit.schemas.curation import LabelEvent

DECISIONS = ("approve", "reject", "none")


@dataclass(frozen=True)
class ParticipantReview:
    """One participant's line of the report (see the module's protocol)."""

    platform_id: str
    status: str
    items: int
    labels: int
    minutes: float
    median_s: float | None
    gold_n: int
    gold_accuracy: float | None
    reliability: float | None
    agreed: int
    flags: tuple[str, ...]
    decision: str
    reason: str
    bonus: float
    self_alpha: float | None = None
    self_flag: str | None = None
    skipped: int = 0
    flagged: int = 0  # items the participant reported (a flag), not the review's flags


@dataclass(frozen=True)
class StudyReport:
    """A study's review: its settings, each participant's line, and the totals with the cost."""

    study_id: str
    name: str
    kind: str
    batch_id: str
    platform: str
    currency: str
    participants: list[ParticipantReview]
    totals: dict[str, Any] = field(default_factory=dict)


def _cents(x: float) -> float:
    return float(Decimal(str(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _minutes(p: Participant, events: list[LabelEvent]) -> float:
    end = p.finished_at or max((e.created_at for e in events), default=p.arrived_at)
    return round((parse_utc(end) - parse_utc(p.arrived_at)).total_seconds() / 60, 2)


#: An exceptionally fast submission: this many standard deviations below the others' mean minutes.
OUTLIER_SD = 3.0
#: The other completed submissions the mean and standard deviation need.
OUTLIER_MIN_OTHERS = 5


def _flags(
    study: Study, labels: list[LabelEvent], minutes: float | None, others: list[float]
) -> tuple[str, ...]:
    """The reasons to reject a completed submission (see the module's protocol); ``minutes`` is
    its time, ``others`` the minutes of the study's other completed submissions."""
    out = []
    if minutes is not None and len(others) >= OUTLIER_MIN_OTHERS:
        mean, sd = statistics.fmean(others), statistics.stdev(others)
        if sd > 0 and minutes < mean - OUTLIER_SD * sd:
            out.append(
                f"exceptionally fast ({minutes:g} min, more than {OUTLIER_SD:g} SD below the mean of "
                f"the study's other {len(others)} submissions, {mean:.1f} ± {sd:.1f} min)"
            )
    stated = study.rules.get("too_fast_s")
    secs = [e.time_spent_s for e in labels if e.time_spent_s is not None]
    if stated and len(secs) >= 3 and median(secs) < stated:
        out.append(
            f"faster than stated (median {median(secs):.1f} s per item < the {stated:g} s its first page states)"
        )
    return tuple(out)


def _notes(study: Study, labels: list[LabelEvent]) -> tuple[str, ...]:
    """What a person should look at before approving (never a reason to reject by itself)."""
    if len(labels) >= 5:
        _, n = Counter(canonical_json(e.values) for e in labels).most_common(1)[0]
        if n / len(labels) >= study.rules["straight_line"]:
            return (f"check: the same answer on {n} of {len(labels)} items",)
    return ()


def _decide(
    study: Study,
    p: Participant,
    gold: tuple[int, float],
    flags: tuple[str, ...],
    notes: tuple[str, ...] = (),
    answered: tuple[int, int, int, int] = (0, 0, 0, 0),  # regular items answered, served, skipped, flagged
) -> tuple[str, str]:
    n, right = gold
    if p.status == "screened_out":
        return "reject", (
            f"failed the attention checks: {right:g} of {n} gold item(s) right "
            f"(screened out below {study.screen_below:g})"
        )
    if p.status == "completed":
        if flags:
            return "reject", "; ".join(flags)
        said = "completed" + (f", {right:g} of {n} gold item(s) right" if n else "")
        return "approve", "; ".join((said, *notes))
    if p.status == "incomplete":
        return "reject", (
            f"answered {answered[0]} of {answered[1]} regular item(s), below the {min_answered(study):g} "
            f"asked for ({answered[2]} skipped, {answered[3]} flagged)"
        )
    if p.status == "timed_out":
        return "none", f"timed out after {study.time_limit_minutes:g} minutes (the platform times it out)"
    if time_over(study, p):  # timed out at their next click or the next arrival
        return "none", f"past the time limit of {study.time_limit_minutes:g} minutes (no submission)"
    return "none", "still working (no submission yet)"


def _bonus(study: Study, decision: str, agreed: int, reliability: float | None) -> float:
    if decision != "approve":
        return 0.0
    amount = study.rules["bonus_per_item"] * agreed
    if study.rules["bonus_scale"] == "reliability":
        amount *= reliability or 0.0
    return _cents(amount)


def _reliabilities(store: ProjectStore, study: Study) -> dict[str, float | None]:
    model = fit_kind(store, study.kind, study.rules.get("method", "dawid_skene"))
    return {a: r["reliability"] for a, r in annotator_reliability(model).items()}


def review(store: ProjectStore, study: Study, self_alpha_min: float = TENTATIVE_ALPHA_MIN) -> StudyReport:
    """The report of ``study`` (see the module's protocol)."""
    participants = store.studies.participants(study.study_id)
    kind = get_kind(study.kind)
    tasks = {t.task_id: t for t in store.labels.tasks(kind=study.kind, batch=study.batch_id)}
    finals = final_labels(store, study.kind) if participants else {}
    reliability = _reliabilities(store, study) if participants else {}
    selves = self_alphas(store, study.kind, self_alpha_min) if participants else {}
    lines, verified = [], set()
    done = {p.username: _minutes(p, []) for p in participants if p.status == "completed" and p.finished_at}
    for p in participants:
        events, _ = store.labels.live_events_of(p.username, study.kind)
        events = [e for e in events if e.task_id in tasks]
        labels = [e for e in events if e.action == "label"]
        gold = [e for e in events if tasks[e.task_id].is_gold]
        right = sum(
            kind.gold_score(e.values, tasks[e.task_id].gold_answer or {}, tasks[e.task_id])
            if e.action == "label"
            else 0.0
            for e in gold
        )
        agreed = 0
        for e in labels:
            final = finals.get(e.task_id)
            task = tasks[e.task_id]
            if task.is_gold or final is None or final.values is None or final.n_labels < task.overlap:
                continue  # a lone label agrees with itself: an item is verified with all its labels
            verified.add(e.task_id)
            agreed += kind.gold_score(e.values, final.values, task) == 1.0
        others = [m for who, m in done.items() if who != p.username]
        flags = _flags(study, labels, done.get(p.username), others) if p.status == "completed" else ()
        regular = [q for q in store.studies.queue(p.username, study.kind) if not q.is_gold]
        actions = Counter(e.action for e in events if not tasks[e.task_id].is_gold)
        work = (actions["label"], len(regular), actions["skip"], actions["flag"])
        decision, reason = _decide(study, p, (len(gold), right), flags, _notes(study, labels), work)
        secs = [e.time_spent_s for e in labels if e.time_spent_s is not None]
        rel = reliability.get(p.username)
        mine = selves.get((p.username, study.kind))
        lines.append(
            ParticipantReview(
                p.platform_id,
                p.status,
                len(events),
                len(labels),
                _minutes(p, events),
                round(median(secs), 1) if secs else None,
                len(gold),
                round(right / len(gold), 4) if gold else None,
                rel,
                agreed,
                flags,
                decision,
                reason,
                _bonus(study, decision, agreed, rel),
                (mine or {}).get("alpha"),
                self_alpha_reason(mine),
                actions["skip"],
                actions["flag"],
            )
        )
    return StudyReport(
        study.study_id,
        study.name,
        study.kind,
        study.batch_id,
        study.platform,
        study.rules["currency"],
        lines,
        _totals(study, lines, len(verified)),
    )


def _totals(study: Study, lines: list[ParticipantReview], verified: int) -> dict[str, Any]:
    approved = sum(r.decision == "approve" for r in lines)
    rewards = _cents(study.rules["reward"] * approved)
    bonuses = _cents(sum(r.bonus for r in lines))
    cost = _cents(rewards + bonuses)
    statuses = Counter(r.status for r in lines)
    return {
        "participants": len(lines),
        **{s: statuses.get(s, 0) for s in ("active", "completed", "screened_out", "incomplete", "timed_out")},
        "approve": approved,
        "reject": sum(r.decision == "reject" for r in lines),
        "rewards": rewards,
        "bonuses": bonuses,
        "cost": cost,
        "verified_items": verified,
        "cost_per_verified_item": round(cost / verified, 4) if verified else None,
    }


def study_report(project: Project, study_id: str) -> StudyReport:
    """``prefkit crowd report STUDY``: the report of the study called ``study_id``."""
    return review(project.store, get_study(project, study_id), project.config.release.self_alpha_min)


def study_reports(store: ProjectStore) -> list[StudyReport]:
    """Every study's report (the card's *Cost* section)."""
    return [review(store, s) for s in store.studies.studies()]


# -- the platform's files -----------------------------------------------------------------------------
def platform_files(report: StudyReport) -> dict[str, str]:
    """The files of the platform's bulk actions, as text by file name: ``decisions.csv`` (a header,
    then ``participant_id,decision,reason`` for every approve and reject; a cell starting with
    ``-``, ``=``, ``+`` or ``@`` gets a leading ``'`` as in ``labels export``), ``approve.txt`` (the approved ids,
    one a line: what Prolific's bulk approve box takes) and ``bonuses.csv`` (``participant_id,amount``
    per bonus above 0, no header: what Prolific's bulk bonus box takes)."""
    decided = [r for r in report.participants if r.decision != "none"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["participant_id", "decision", "reason"])
    writer.writerows(
        [csv_cell(r.platform_id), r.decision, csv_cell(r.reason)] for r in decided
    )  # no formulas
    approve = "".join(f"{r.platform_id}\n" for r in decided if r.decision == "approve")
    bonuses = "".join(f"{r.platform_id},{r.bonus:.2f}\n" for r in decided if r.bonus > 0)
    return {"decisions.csv": out.getvalue(), "approve.txt": approve, "bonuses.csv": bonuses}
