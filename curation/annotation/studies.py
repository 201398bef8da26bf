"""Crowd studies: participants recruited on a platform (Prolific, or one that works the same way)
arrive through an entry link, label a fixed share of one batch, and leave with a completion code.

:func:`create_study` makes a study, :func:`arrive` admits a participant through the entry URL (its
secret must be the study's; a refused URL writes nothing) and :func:`participant_view` decides after
each item: screened out, incomplete, completed or timed out, each an event in ``study_events``. What
the platform id proves and what the study secret and session binding add: docs/crowd.md.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.assignment import QueuePolicy
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.store import CROWD_PREFIX, Participant, Study, StudyFull
from prefkit.schemas.common import PrefkitError, utcnow

if TYPE_CHECKING:
    from prefkit.curation.project import Project
    from prefkit.curation.store import Account

STUDY_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
PLAIN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
CODE = re.compile(r"[A-Za-z0-9_-]{1,40}")
SECRET = re.compile(r"[A-Za-z0-9_-]{20,100}")


@dataclass(frozen=True)
class Platform:
    """A recruiting platform's conventions: the query parameters its study URL fills in, how a
    placeholder is written in the URL, and where a participant goes back with a code."""

    title: str
    participant: str
    study: str
    session: str
    placeholder: str  # how a placeholder is written, ``NAME`` for the parameter's name
    return_url: str | None  # ``{code}`` for the completion code


PLATFORMS = {
    # Prolific's study URL: "Record Prolific IDs via URL parameters" fills these three in.
    "prolific": Platform(
        "Prolific",
        "PROLIFIC_PID",
        "STUDY_ID",
        "SESSION_ID",
        "{{%NAME%}}",
        "https://app.prolific.com/submissions/complete?cc={code}",
    ),
    # Any other platform: replace each {NAME} with the platform's own placeholder for it.
    "generic": Platform("a recruiting platform", "PARTICIPANT_ID", "STUDY_ID", "SESSION_ID", "{NAME}", None),
}


@dataclass(frozen=True)
class Rules:
    """How participants are paid and reviewed (kept with the study): the reward of one approved
    submission, a bonus per agreed item (an item whose final label is the participant's), scaled by
    the participant's reliability or flat, and the flags that make a submission suspect."""

    reward: float = 0.0
    currency: str = "GBP"
    bonus_per_item: float = 0.0
    bonus_scale: str = "reliability"  # or "flat"
    #: A minimum median of seconds per item, stated to participants on their first page (None: none
    #: stated; speed then counts only as a statistical outlier of the study, as Prolific allows).
    too_fast_s: float | None = None
    straight_line: float = 0.9  # note: the same answer on at least this share of items (5 or more)
    method: str = "dawid_skene"  # the reliability model: dawid_skene or mace
    places: int = 0  # participants the study takes (0: no limit); a timed-out one frees a place
    #: The share of the regular items served that must be answered (not skipped or flagged).
    min_answered: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class StudyError(PrefkitError):
    """A study setting or command that cannot be done (one clear line)."""


class EntryRefused(PrefkitError):
    """An entry URL that opens nothing: the one line the participant's page shows."""


def _hash(secret: str) -> str:
    return hashlib.sha256(b"prefkit study\0" + secret.encode("ascii")).hexdigest()


# -- a study ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreatedStudy:
    """A new study and its entry URL (with the secret: printed once, never stored)."""

    study: Study
    entry_url: str
    n_gold: int
    return_url: str | None


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise StudyError(message)


def create_study(
    project: Project,
    study_id: str,
    *,
    kind: str,
    batch: str,
    items: int,
    gold_share: float,
    screen_below: float,
    completion_code: str,
    screened_out_code: str,
    time_limit_minutes: float,
    platform: str = "prolific",
    completion_url: str | None = None,
    base_url: str = "http://localhost:8501",
    rules: Rules | None = None,
    name: str | None = None,
    actor: str | None = None,
) -> CreatedStudy:
    """A new study over ``batch`` of ``kind`` (see the module docstring); refused with one line when a
    setting is out of range, the batch has no items of the kind, or gold items are asked for and the
    batch has too few. ``actor``: who creates it, for the audit log (a maintainer, ``shell:<login>``)."""
    rules = rules or Rules()
    _check(
        bool(STUDY_ID.fullmatch(study_id)), f"a study id is 1-40 of a-z, 0-9, '_' and '-' (not {study_id!r})"
    )
    _check(platform in PLATFORMS, f"unknown platform {platform!r}; expected one of {', '.join(PLATFORMS)}")
    kind = get_kind(kind).name
    _check(1 <= items <= 1000, "items per participant must be 1 to 1000")
    _check(0 <= gold_share < 1, "the gold share must be at least 0 and below 1")
    _check(0 <= screen_below <= 1, "the screening accuracy must be 0 to 1")
    _check(0 < time_limit_minutes <= 7 * 24 * 60, "the time limit must be above 0 and at most a week")
    for what, code in (("completion", completion_code), ("screened-out", screened_out_code)):
        _check(bool(CODE.fullmatch(code)), f"the {what} code is 1-40 of letters, digits, '_' and '-'")
    _check(completion_code != screened_out_code, "the completion and screened-out codes must differ")
    for what, url in (("completion URL", completion_url), ("base URL", base_url)):
        _check(
            url is None or bool(re.fullmatch(r"https?://[^\s<>\"']+", url)),
            f"the {what} must be an http(s) URL",
        )
    _check(rules.bonus_scale in ("reliability", "flat"), "the bonus scale is 'reliability' or 'flat'")
    _check(rules.method in ("dawid_skene", "mace"), "the reliability model is 'dawid_skene' or 'mace'")
    _check(rules.reward >= 0 and rules.bonus_per_item >= 0, "rewards and bonuses cannot be negative")
    _check(rules.places >= 0, "places cannot be negative")
    _check(rules.too_fast_s is None or rules.too_fast_s > 0, "the stated seconds per item must be above 0")
    _check(0 <= rules.min_answered <= 1, "the share of items to answer (--min-answered) must be 0 to 1")
    _check(bool(re.fullmatch(r"[A-Z]{3}", rules.currency)), "the currency is a three-letter code (GBP, USD)")
    tasks = project.store.labels.tasks(kind=kind, batch=batch)
    regular, gold = sum(not t.is_gold for t in tasks), sum(t.is_gold for t in tasks)
    _check(regular > 0, f"batch {batch!r} has no {kind} items")
    n_gold = QueuePolicy(chunk=items, gold_rate=gold_share).n_gold
    _check(
        gold >= n_gold,
        f"batch {batch!r} has {gold} gold item(s) of {kind}; {n_gold} per participant are asked for "
        "(add gold items, or lower --gold-share)",
    )
    secret = secrets.token_urlsafe(24)
    study = Study(
        study_id,
        name or get_kind(kind).title,
        kind,
        batch,
        platform,
        items,
        gold_share,
        screen_below,
        completion_code,
        screened_out_code,
        completion_url,
        time_limit_minutes,
        rules.as_dict(),
        _hash(secret),
        utcnow(),
    )
    project.store.studies.add_study(study)
    if actor is not None:  # the settings, never the secret
        detail = {
            "kind": kind,
            "batch": batch,
            "items": items,
            "gold_share": gold_share,
            "platform": platform,
        }
        project.store.audit.record(actor, "study.create", study_id, detail)
    return CreatedStudy(study, entry_url(study, secret, base_url), n_gold, return_url(study, completion_code))


def new_link(
    project: Project, study_id: str, base_url: str = "http://localhost:8501", actor: str | None = None
) -> str:
    """A new secret for the study (the old entry URL stops working at once) and its entry URL."""
    study = get_study(project, study_id)
    _check(bool(re.fullmatch(r"https?://[^\s<>\"']+", base_url)), "the base URL must be an http(s) URL")
    secret = secrets.token_urlsafe(24)
    project.store.studies.set_secret_hash(study.study_id, _hash(secret))
    if actor is not None:
        project.store.audit.record(actor, "study.new_link", study.study_id)
    return entry_url(study, secret, base_url)


def entry_url(study: Study, secret: str, base_url: str) -> str:
    """The URL to paste into the platform: the study's part, then the platform's placeholders."""
    p = PLATFORMS[study.platform]
    params = "&".join(
        f"{name}={p.placeholder.replace('NAME', name)}" for name in (p.participant, p.study, p.session)
    )
    return f"{base_url.rstrip('/')}/?study={study.study_id}.{secret}&{params}"


def return_url(study: Study, code: str) -> str | None:
    """Where a participant goes back with ``code``: the study's completion URL (``{code}`` in it is
    replaced by the code), else the platform's own; None for a platform without one."""
    if study.completion_url:
        return study.completion_url.replace("{code}", quote(code))
    template = PLATFORMS[study.platform].return_url
    return None if template is None else template.format(code=quote(code))


def get_study(project: Project, study_id: str) -> Study:
    found = project.store.studies.study(study_id)
    if found is None:
        raise StudyError(f"no study {study_id!r} (prefkit crowd study list)")
    return found


def n_gold(study: Study) -> int:
    return QueuePolicy(chunk=study.items, gold_rate=study.gold_share).n_gold


# -- arrival ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Arrival:
    """Who arrived: the study, the participant (as it stands now) and the account the app signs in."""

    study: Study
    participant: Participant
    account: Account
    returning: bool


def username_for(study_id: str, platform_id: str) -> str:
    """The participant's account name: derived from (study, platform id), not the id itself (an id
    is the platform's, in any case; a name is folded to lower case and could merge two)."""
    digest = hashlib.sha256(f"{study_id}\0{platform_id}".encode()).hexdigest()[:24]
    return f"{CROWD_PREFIX}{digest}"


def _plain(params: dict[str, str], name: str, required: bool = True) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        if required:
            raise EntryRefused(f"This link has no {name}: open the study from the platform's page again.")
        return None
    if not PLAIN_ID.fullmatch(value):
        raise EntryRefused(
            f"This link's {name} is not a valid id: open the study from the platform's page again."
        )
    return value


def _study_of(project: Project, token: str | None) -> Study:
    """The study whose secret ``token`` carries, or :class:`EntryRefused` (the same words for an
    unknown study and a wrong secret: the page says nothing about which studies exist)."""
    refused = EntryRefused("This study link is not valid: open the study from the platform's page again.")
    study_id, _, secret = (token or "").partition(".")
    if not STUDY_ID.fullmatch(study_id) or not SECRET.fullmatch(secret):
        raise refused
    study = project.store.studies.study(study_id)
    if study is None or not hmac.compare_digest(study.secret_hash, _hash(secret)):
        raise refused
    return study


def arrive(project: Project, params: dict[str, str]) -> Arrival:
    """The participant an entry URL's query ``params`` opens (see the module docstring): a new one
    (account, row and ``arrived`` event in one transaction) or a return (``resumed`` event). Refused
    (:class:`EntryRefused`, nothing written): a wrong or missing study secret, a missing or malformed
    participant or session id, a participant id already bound to another session id, a new
    participant when every place is taken (``Rules.places``; a timed-out participant frees one), a
    participant whose account a maintainer disabled."""
    study = _study_of(project, params.get("study"))
    p = PLATFORMS[study.platform]
    pid = _plain(params, p.participant)
    session = _plain(params, p.session)
    platform_study = _plain(params, p.study, required=False)
    assert pid is not None and session is not None  # required: refused above when missing
    store = project.store.studies
    found = store.participant(study.study_id, pid)
    if found is None:
        release_expired(project, study)  # the items of participants out of time go to the newcomers
        new = Participant(
            study.study_id,
            pid,
            username_for(study.study_id, pid),
            session,
            platform_study,
            "active",
            utcnow(),
            None,
        )
        try:  # a leaked URL cannot make accounts without end: the places are counted in the write
            added = store.add_participant(
                new,
                {"session": session, "platform_study": platform_study},
                places=int(study.rules.get("places", 0)),
            )
        except StudyFull:
            raise EntryRefused(
                "This study is full: every place has been taken. Please return it on the platform."
            ) from None
        if added:
            return Arrival(study, new, _account(project, new), returning=False)
        found = store.participant(study.study_id, pid)  # arrived meanwhile, in another tab
        assert found is not None
    if found.platform_session != session:
        raise EntryRefused(
            f"This {PLATFORMS[study.platform].title} id already started this study in another session; "
            "open the study from the platform's page with your own account."
        )
    account = _account(project, found)
    if not account.active:  # disabled by a maintainer: no session, no event (it would only end again)
        raise EntryRefused(
            "Your place in this study was closed by the researchers: please return it on the platform."
        )
    store.log(study.study_id, pid, "resumed")
    return Arrival(study, found, account, returning=True)


def _account(project: Project, participant: Participant) -> Account:
    account = project.store.accounts.user(participant.username)
    assert account is not None  # written with the participant, in one transaction
    return account


def is_participant(username: str) -> bool:
    return username.startswith(CROWD_PREFIX)


def session_hours(study: Study) -> float:
    """How long a participant's sign-in lasts: the time limit and an hour to spare (a session that
    outlived the study's time would only show the time-out page)."""
    return study.time_limit_minutes / 60 + 1


# -- work ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GoldScore:
    """A participant's attention checks so far: gold items in their queue, done, and the score summed
    over those done (a skipped or flagged gold item scores 0)."""

    total: int
    done: int
    right: float
    regular: int = 0  # regular (not gold) items in the queue
    answered: int = 0  # of those, labelled (a skip or a flag is not an answer)

    @property
    def accuracy(self) -> float | None:
        return None if not self.done else self.right / self.done

    def best_possible(self) -> float:
        """The accuracy if every gold item left is answered right."""
        return 1.0 if not self.total else (self.right + self.total - self.done) / self.total


@dataclass(frozen=True)
class ParticipantView:
    """What the participant's page shows: their status (``active``, ``completed``, ``screened_out``,
    ``timed_out``, ``incomplete``, or ``no_items``: nothing left in the study's batch for them), their item, how far
    they are, and the code and link to go back with."""

    status: str
    item: workflow.ShownItem | None = None
    done: int = 0
    total: int = 0
    draft: dict[str, Any] | None = None
    code: str | None = None
    back_url: str | None = None
    gold: GoldScore = field(default_factory=lambda: GoldScore(0, 0, 0.0))


def gold_score(project: Project, study: Study, username: str) -> GoldScore:
    """The participant's attention checks (their queue's gold items and their live labels on them)
    and their work on the regular items (served, answered, still open)."""
    queue = project.store.studies.queue(username, study.kind)
    gold = {q.task_id for q in queue if q.is_gold}
    done = {q.task_id for q in queue if q.is_gold and q.done}
    regular = {q.task_id for q in queue if not q.is_gold}
    events, _ = project.store.labels.live_events_of(username, study.kind, limit=5 * len(queue) + 10)
    kind, right = get_kind(study.kind), 0.0
    for ev in events:
        if ev.task_id in done and ev.action == "label":
            task = project.store.labels.task(ev.task_id)
            right += kind.gold_score(ev.values, task.gold_answer or {}, task)
    answered = len({ev.task_id for ev in events if ev.task_id in regular and ev.action == "label"})
    return GoldScore(len(gold), len(done), right, len(regular), answered)


def min_answered(study: Study) -> float:
    """The study's share of regular items to answer (1.0 for a study made before the setting)."""
    return float(study.rules.get("min_answered", 1.0))


def time_over(study: Study, participant: Participant, now: str | None = None) -> bool:
    return (now or utcnow()) > participant.deadline(study.time_limit_minutes)


def _finished(project: Project, study: Study, participant: Participant, status: str, detail: dict) -> str:
    """Mark the participant ``status`` (once: a second tab's run finds it done) and, for a time-out,
    give their unfinished items back to the pool. Returns the status as it now stands."""
    if project.store.studies.finish(study.study_id, participant.platform_id, status, detail):
        if status != "completed":
            workflow.release_stale(project, 0, annotator=participant.username, kind=study.kind)
        return status
    now = project.store.studies.participant(study.study_id, participant.platform_id)
    return now.status if now is not None else status


def release_expired(project: Project, study: Study) -> list[str]:
    """Time out every active participant of ``study`` past its time limit (their unfinished items go
    back to the pool); the platform ids timed out."""
    now = utcnow()
    out = []
    for p in project.store.studies.participants(study.study_id):
        if p.status == "active" and time_over(study, p, now):
            _finished(project, study, p, "timed_out", {"time_limit_minutes": study.time_limit_minutes})
            out.append(p.platform_id)
    return out


def _ended(study: Study, status: str, progress: tuple[int, int], gold: GoldScore) -> ParticipantView:
    """The page of a participant who is done: the code and link to go back with (none after a
    time-out: the platform times the submission out itself)."""
    code = {"completed": study.completion_code, "screened_out": study.screened_out_code}.get(status)
    back = return_url(study, code) if code else None
    return ParticipantView(status, None, progress[0], progress[1], code=code, back_url=back, gold=gold)


def participant_view(
    project: Project, study: Study, username: str, session: str | None = None
) -> ParticipantView:
    """Where the participant stands now, deciding it after each item (see the module docstring): one
    status, and while ``active`` their item (assigned from the study's batch on the first visit)."""
    participant = project.store.studies.participant_by_username(username)
    if participant is None or participant.study_id != study.study_id:
        raise workflow.AuthError("this account is not a participant of this study")
    queue = project.store.studies.queue(username, study.kind)
    progress = (sum(q.done for q in queue), len(queue))
    gold = gold_score(project, study, username) if queue else GoldScore(0, 0, 0.0)
    status = participant.status
    if status == "active" and time_over(study, participant):
        status = _finished(project, study, participant, "timed_out", {"done": progress[0]})
    if status == "active" and gold.total and gold.best_possible() < study.screen_below:
        detail = {"gold_done": gold.done, "gold_right": gold.right, "gold_total": gold.total}
        status = _finished(project, study, participant, "screened_out", detail)
    if status == "active" and queue and progress[0] == progress[1]:
        # items handed back to the pool (``prefkit tasks release``, or idle past [annotation]
        # stale_after_hours) leave a queue that looks done: that participant ran out of time instead
        if project.store.stale.assignment_releases(annotator=username):
            status = _finished(project, study, participant, "timed_out", {"done": progress[0]})
        elif gold.answered < min_answered(study) * gold.regular - 1e-9:  # work done decides, after the checks
            detail = {"answered": gold.answered, "regular": gold.regular, "min_answered": min_answered(study)}
            status = _finished(project, study, participant, "incomplete", detail)
        elif not project.store.assignments.open_repeat(username, study.kind, workflow.repeat_rule(project)):
            # a repeat due (repeat_share) comes before the code; it counts for neither items nor completion
            status = _finished(project, study, participant, "completed", {"done": progress[0]})
    if status != "active":
        return _ended(study, status, progress, gold)
    policy = QueuePolicy(chunk=study.items, gold_rate=study.gold_share)
    view = workflow.annotator_view(
        project, username, study.kind, session, policy=policy, batch=study.batch_id
    )
    if not view.active:
        raise workflow.SessionEnded("this participant's session has ended")
    if view.item is None:  # nothing in the batch for them (yet): they should return the study
        return ParticipantView("no_items", gold=gold)
    total = progress[1] or len(project.store.studies.queue(username, study.kind))
    return ParticipantView("active", view.item, progress[0], total, view.draft, gold=gold)


def estimated_minutes(project: Project, study: Study) -> int:
    """What the study's first page says it takes: its items × the median seconds people spent on an
    item of its kind in this project (20 labels or more; else 40 s), in whole minutes, at least 1."""
    secs = sorted(
        e.time_spent_s
        for e in project.store.labels.events(kind=study.kind)
        if e.action == "label" and e.time_spent_s and e.source != "judge"
    )
    per_item = secs[len(secs) // 2] if len(secs) >= 20 else 40.0
    return max(1, math.ceil(study.items * per_item / 60))
