"""The annotator's workflow as library calls: sign in, current item, submit, skip, flag, edit, progress.

The Streamlit pages only render what these functions return and pass the signed-in user in; tests
call them directly. The annotator of every event is the ``user`` argument (the signed-in account),
never a value from a form. A submit's ``event_id`` is the one made when the item was first shown, so
a double click, a rerun or a retry after a dropped connection records it once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation import overlap, people, sessions
from prefkit.curation.annotation.assignment import QueuePolicy, policy_for
from prefkit.curation.annotation.evidence_spans import draft_spans
from prefkit.curation.annotation.guidelines import current_version
from prefkit.curation.annotation.signin import log as signin_log
from prefkit.curation.annotation.signin import wait_s
from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, ContradictoryLabel, get_kind
from prefkit.curation.store import (
    CROWD_PREFIX,
    EXPIRED,
    MAX_NAME,
    BatchCounts,
    KindCounts,
    RepeatRule,
    normalize_username,
)
from prefkit.curation.store import AccountInactive as AccountInactive
from prefkit.curation.store import SessionEnded as SessionEnded
from prefkit.curation.store import StaleSubmit as StaleSubmit
from prefkit.curation.store import TimeUp as TimeUp
from prefkit.schemas.common import PrefkitError, content_hash, parse_utc, utcnow
from prefkit.schemas.curation import AnnotationTask, LabelEvent

if TYPE_CHECKING:
    from prefkit.curation.annotation.suggestions import Exposure
    from prefkit.curation.project import Project
    from prefkit.curation.store import Account, OpenItem, ProjectStore, ReleasedAssignment

SKIP_REASONS = ("cannot judge", "needs context I do not have", "language I do not read", "other")


def flag_reasons(kind: str) -> tuple[str, ...]:
    """What can be broken about an item of ``kind`` (``TaskKind.flag_reasons``): the app's flag menu."""
    return get_kind(kind).flag_reasons


class WorkflowError(PrefkitError):
    """Something the signed-in user asked for is not allowed or not possible (one clear line)."""


class AuthError(WorkflowError):
    """Wrong name or password, a disabled account, or a page the role may not open. ``retry_after_s``:
    how long a throttled sign-in must wait before the next attempt is checked (0 = at once)."""

    def __init__(self, message: str, retry_after_s: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class ShownItem:
    """The item on an annotator's screen and the id its submit will carry."""

    task: AnnotationTask
    event_id: str
    shown_at: str
    position: int
    guidelines_version: str | None = None  # the kind's guidelines when the item was drawn
    recalibration: str | None = None  # queued again after a guidelines change: its answer is no vote
    repeat: bool = False  # an item they labelled, shown again unmarked: its answer is a repeat, no vote


def sign_in(project: Project, username: str, password: str, client: str = "local") -> Account:
    """The account's record when the password is right; throttled per user name and per client.

    Refused without checking the password while a backoff or a lockout runs (see
    :mod:`prefkit.curation.annotation.signin`); every attempt is logged with its outcome."""
    store, policy, now = project.store, project.config.annotation.sign_in, utcnow()
    name = normalize_username(username)[: MAX_NAME + 1]
    by_name = store.accounts.sign_in_failures(username=name)
    by_client = store.accounts.sign_in_failures(client=client)
    scale = policy.client_factor
    wait = max(wait_s(policy, *by_name, now), wait_s(policy, *by_client, now, scale=scale))
    if wait > 0:
        locked = by_name[0] >= policy.lockout_after or by_client[0] >= policy.lockout_after * scale
        outcome = "locked" if locked else "throttled"
        store.accounts.log_sign_in(name, client, outcome)
        signin_log.warning("sign-in %s for %r from %s (%.0f s left)", outcome, name, client, wait)
        if locked:
            raise AuthError(
                f"too many failed sign-ins: locked for {wait / 60:.0f} more minute(s); "
                "a maintainer can unlock it (prefkit users unlock NAME)",
                wait,
            )
        raise AuthError(f"too many failed sign-ins: wait {wait:.0f} s before trying again", wait)
    user = store.accounts.authenticate(name, password)
    expired = user is not None and people.one_time_expired(project, user)
    store.accounts.log_sign_in(name, client, "expired" if expired else "ok" if user else "fail")
    if expired:  # the right one-time password, too late: no failure counted, no way in
        raise AuthError(EXPIRED)
    if user is None:
        signin_log.warning("failed sign-in for %r from %s", name, client)
        # This failure may start (or lengthen) a backoff: say how long before the next try is checked.
        after = max(
            wait_s(policy, by_name[0] + 1, now, now), wait_s(policy, by_client[0] + 1, now, now, scale=scale)
        )
        wrong = "unknown user name or wrong password (or the account is disabled)"
        if by_name[0] + 1 >= policy.lockout_after or by_client[0] + 1 >= policy.lockout_after * scale:
            raise AuthError(
                f"{wrong}; too many failed sign-ins: locked for {after / 60:.0f} minute(s)", after
            )
        if after > 0:
            raise AuthError(f"{wrong}; wait {after:.0f} s before the next try", after)
        raise AuthError(wrong)
    signin_log.info("%s signed in from %s", user.username, client)
    return user


def require_role(user: Account | None, role: str) -> Account:
    """The user when signed in with ``role`` (a maintainer may do what an annotator does)."""
    if user is None:
        raise AuthError("sign in first")
    if role == "maintainer" and user.role != "maintainer":
        raise AuthError(f"{user.username} is not a maintainer")
    return user


# -- the queue --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnnotatorView:
    """One run of the Annotate page: may the account still act, its item, its queue's version, and
    the item's draft (the form state saved for this showing, :func:`save_draft`; None: none)."""

    active: bool
    item: ShownItem | None
    version: tuple[int, int, int]
    draft: dict[str, Any] | None = None


def annotator_view(
    project: Project,
    user: str,
    kind: str,
    session: str | None = None,
    policy: QueuePolicy | None = None,
    batch: str | None = None,
) -> AnnotatorView:
    """Everything the Annotate page reads on a run, in one read when the item is already on screen
    (the usual case after the first item); assigning a new item goes through :func:`current_item`.
    ``session``: the browser session's token; the view is not ``active`` once that session ended
    (signed out in another tab, expired, revoked), checked in the same read. ``policy`` and
    ``batch``: a new chunk's size and gold, and the batch it comes from (a crowd study's; default:
    the project's policy for the kind, any open batch)."""
    get_kind(kind)
    session_id = _session_id(project, session)
    if session is not None and session_id is None:  # the token itself is spent: no read needed
        return AnnotatorView(False, None, (0, 0, 0))
    view = project.store.assignments.annotator_view(user, kind, session_id)
    if not view.active:
        return AnnotatorView(False, None, view.version)
    if view.item is not None and view.item.event_id:
        draft = _restorable(view.item.task, json.loads(view.draft)) if view.draft else None
        return AnnotatorView(True, _shown(view.item), view.version, draft)
    item = _shown(_assign_next(project, user, kind, policy, batch))
    return AnnotatorView(True, item, project.store.progress.queue_version(user))


def _restorable(task: AnnotationTask, draft: dict[str, Any]) -> dict[str, Any]:
    """A draft as a form may take it back: its lists of spans (the words selected as evidence) keep
    only the spans that are valid and still the turn's words (``evidence_spans.draft_spans``)."""
    turns = task.payload.get("turns") or []
    out = {}
    for name, value in draft.items():
        spans = draft_spans(value, turns)
        out[name] = value if spans is None else spans
    return out


#: The largest draft kept, in bytes of its canonical JSON: a form's values (choices, evidence spans,
#: a comment) are a few kilobytes; more is not a form someone is filling in.
MAX_DRAFT_BYTES = 1024 * 1024


def save_draft(project: Project, user: str, item: ShownItem, state: dict[str, Any]) -> None:
    """Keep the half-done form of the item on ``user``'s screen (``state``: the form's values, JSON),
    for the showing ``item.event_id`` only: a reload restores it (:func:`annotator_view`), the
    submit that finishes the item deletes it. A draft is never a label.

    Refused with one line (:class:`WorkflowError`, nothing written): a ``state`` that is not a JSON
    object of finite values (NaN and infinities have no JSON form), one over :data:`MAX_DRAFT_BYTES`,
    and an item that is not ``user``'s open item as shown now (another annotator's, a submitted one)."""
    if not project.store.drafts.save_draft(user, item.task.task_id, item.event_id, _draft_json(state)):
        raise WorkflowError(
            f"no draft kept: item {item.task.task_id} is not {user}'s open item as shown ({item.event_id})"
        )


def save_edit_draft(project: Project, user: str, ev: LabelEvent, state: dict[str, Any]) -> None:
    """Keep the unsaved changes of the editor of ``user``'s label ``ev`` (the *previous item* key, My
    items): :func:`edit_draft` gives them back when it is reopened, the edit that records them
    deletes them. Refused as :func:`save_draft` is, and when ``ev`` is no longer their live label or
    the item is open for them again (a repeat: that showing's draft is the one kept)."""
    if not project.store.drafts.save_draft(user, ev.task_id, ev.event_id, _draft_json(state), edit=True):
        raise WorkflowError(f"no draft kept: {ev.event_id} is not {user}'s live label of a finished item")


def edit_draft(project: Project, user: str, ev: LabelEvent) -> dict[str, Any] | None:
    """The unsaved changes ``user`` left on the editor of their label ``ev`` (None: none)."""
    found = project.store.drafts.draft(user, ev.task_id)
    if found is None or found[0] != ev.event_id:
        return None
    return _restorable(project.store.labels.task(ev.task_id), json.loads(found[1]))


def _draft_json(state: dict[str, Any]) -> str:
    """A draft's canonical JSON, or the one line that says why it is not one."""
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise WorkflowError("a draft is an object of the form's values keyed by name")
    try:
        text = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise WorkflowError("a draft's numbers must be finite (NaN or infinity refused)") from None
    except TypeError as exc:
        raise WorkflowError(f"a draft holds JSON values only ({exc})") from None
    except RecursionError:
        raise WorkflowError("a draft is too deeply nested") from None
    size = len(text.encode("utf-8"))
    if size > MAX_DRAFT_BYTES:
        raise WorkflowError(f"a draft has at most {MAX_DRAFT_BYTES} bytes (this one has {size})")
    return text


def current_item(project: Project, user: str, kind: str) -> ShownItem | None:
    """The annotator's open item of ``kind`` (assigned now if the queue was empty), or None when done.
    The usual case, an item already shown (a submit marks the next one), is one read."""
    get_kind(kind)
    item = project.store.assignments.open_item(user, kind)
    if item is None or not item.event_id:
        item = _assign_next(project, user, kind)
    return _shown(item)


def _assign_next(
    project: Project, user: str, kind: str, policy: QueuePolicy | None = None, batch: str | None = None
) -> OpenItem | None:
    """Show the annotator's next item, assigning a new chunk under the kind's policy (or ``policy``,
    from ``batch`` only: a crowd study's) when needed (under adaptive overlap the kind's reliability
    snapshot is refitted first when it is stale)."""
    if project.store.get_meta(overlap.adaptive_key(kind)):
        overlap.refresh(
            project.store,
            kind,
            overlap.model_method(project.store),
            setting=project.config.annotation.overlap,
        )
    policy = policy or policy_for(project, kind)
    hours = stale_after_hours(project)
    before = _hours_ago(hours) if hours > 0 else None
    version = current_version(project, project.store, kind)
    return project.store.assignments.open_assignment(
        *(user, kind, policy.chunk, policy.n_gold, before, batch, version, repeat_rule(project))
    )


def repeat_rule(project: Project) -> RepeatRule:
    """When labelled items come back to their annotator (``[annotation] repeat_share``, :meth:`Repeats.offer`)."""
    return RepeatRule(project.config.annotation.repeat_share, utcnow()[:10])


def _shown(item: OpenItem | None) -> ShownItem | None:
    if item is None:
        return None
    # open_assignment gives the item it opens its pending event id and the time it was shown.
    assert item.event_id is not None and item.shown_at is not None
    return ShownItem(
        *(
            item.task,
            item.event_id,
            item.shown_at,
            item.position,
            item.guidelines_version,
            item.recalibration,
        ),
        item.repeat,
    )


def stale_after_hours(project: Project) -> float:
    """Config ``annotation.stale_after_hours``: idle queues go back to the pool after this (0 = never)."""
    return project.config.annotation.stale_after_hours


def _hours_ago(hours: float) -> str:
    return (datetime.now(UTC) - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def release_stale(
    project: Project, hours: float | None = None, annotator: str | None = None, kind: str | None = None
) -> list[ReleasedAssignment]:
    """Hand items back to the pool: every open assignment of an annotator's queue of a kind that has
    shown nothing for ``hours`` (default: config ``annotation.stale_after_hours``). The annotator
    keeps every label they gave; the items can go to someone else. Returns what was released.

    This also happens by itself whenever an annotator is given a new chunk of that kind."""
    if kind is not None:
        get_kind(kind)
    if annotator is not None:
        account = project.store.accounts.user(annotator)
        if account is None:
            raise WorkflowError(f"no user {annotator!r}")
        annotator = account.username
    hours = stale_after_hours(project) if hours is None else hours
    if hours < 0:
        raise WorkflowError("hours must be 0 or more")
    return project.store.stale.release_stale(_hours_ago(hours), kind=kind, annotator=annotator)


def adapt(project: Project, kind: str | None = None) -> dict[str, list[str]]:
    """Adaptive overlap now: refit each kind's reliability snapshot on every label so far and decide
    again every item that stopped below its ``max``; those no longer certain go to one more annotator.
    Returns ``{kind: [task ids whose target went up]}`` (``prefkit tasks adapt``). The queues do this
    by themselves as the log grows; run it before a release, or after importing many labels."""
    store, setting = project.store, project.config.annotation.overlap
    kinds = [get_kind(kind).name] if kind else sorted({t.kind for t in store.labels.tasks() if t.overlap_max})
    out = {}
    for name in kinds:
        overlap.refresh(store, name, overlap.model_method(store), force=True)
        out[name] = overlap.review_tasks(
            store, store.submits.adaptive_tasks(name), setting, overlap.model_method(store)
        )
    return out


def _seconds_since(iso: str, now: str) -> float:
    return max(0.0, round((parse_utc(now) - parse_utc(iso)).total_seconds(), 3))


def _session_id(project: Project, token: str | None) -> str | None:
    """The session id of a signed-in browser session's token (None without a token)."""
    return None if token is None else sessions.live_id(project.store, token)


def _checked_session(project: Project, user: str, token: str | None) -> str | None:
    """The session id a write on behalf of ``token``'s session carries; :class:`SessionEnded` at
    once when the token itself is spent (its expiry passed, or it is not this project's)."""
    session_id = _session_id(project, token)
    if token is not None and session_id is None:
        raise SessionEnded(f"the sign-in of {user!r} has ended; nothing was recorded")
    return session_id


def _finish(
    project: Project,
    user: str,
    item: ShownItem,
    action: str,
    values: dict,
    comment: str | None,
    signed_in: bool = False,
    assist: Exposure | None = None,
    session: str | None = None,
) -> bool:
    session_id = _checked_session(project, user, session)
    now, assist = utcnow(), None if item.repeat else assist
    event = LabelEvent(
        event_id=item.event_id,
        task_id=item.task.task_id,
        kind=item.task.kind,
        annotator=user,
        action="repeat"
        if item.repeat
        else ("recalibrate" if item.recalibration and action == "label" else action),
        values=values,
        comment=comment or None,
        time_spent_s=_seconds_since(item.shown_at, now),
        created_at=now,
        assist_arm=assist.arm if assist else None,
        suggestion_id=assist.suggestion_id if assist else None,
        guidelines_version=item.guidelines_version,
    )
    return project.store.submits.record_submit(
        event,
        active_account=signed_in,
        session_id=session_id,
        review=None if item.recalibration else _review(project, item.task),
        next_version=current_version(project, project.store, item.task.kind),  # the next item is drawn now
        until=_deadline(project, user),
    )


def _deadline(project: Project, user: str) -> str | None:
    """A crowd participant's time limit (their arrival plus the study's minutes), which the submit's
    write compares with the clock; None for anyone else."""
    found = project.store.studies.participant_by_username(user) if user.startswith(CROWD_PREFIX) else None
    study = project.store.studies.study(found.study_id) if found is not None else None
    return None if found is None or study is None else found.deadline(study.time_limit_minutes)


def _review(project: Project, task: AnnotationTask):
    """The adaptive-overlap decision a submit of ``task`` makes in its transaction (None: fixed overlap)."""
    if task.overlap_max is None:
        return None
    rule = overlap.rule_for(project.config.annotation.overlap, task)
    return overlap.review_hook(
        project.store, task.task_id, task.kind, rule, overlap.read_snapshot(project.store, task.kind)
    )


def submit(
    project: Project,
    user: str,
    item: ShownItem,
    values: dict[str, Any],
    comment: str | None = None,
    *,
    signed_in: bool = False,
    assist: Exposure | None = None,
    session: str | None = None,
) -> bool:
    """Validate and record a label. True when written now, False when this submit was already recorded.

    ``signed_in``: the click of a signed-in session; the account must still be active when the label
    is written (same transaction), else ``AccountInactive`` and nothing is written. Also for skip/flag.
    ``session``: that browser session's token (:mod:`prefkit.curation.annotation.sessions`); the
    session must still be open when the label is written (same transaction: not signed out in any
    tab, not expired, not revoked, the account active), else ``SessionEnded`` and nothing is written.
    ``assist``: what the item showed of its suggestion (``assist.exposure_for``); the event records
    the arm and the suggestion's id."""
    clean = checked(item.task, values)
    return _finish(project, user, item, "label", clean, comment, signed_in, assist, session)


def checked(task: AnnotationTask, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` validated for ``task`` (``LabelError`` naming the field) and free of contradictions
    (``ContradictoryLabel`` with each one, :meth:`TaskKind.contradictions`): what an annotator's
    submit or edit records. The app asks this before a submit, so it can point at what to fix."""
    kind = get_kind(task.kind)
    clean = kind.validate(values, task)
    found = kind.contradictions(clean, task)
    if found:
        raise ContradictoryLabel(found)
    return clean


def skip(
    project: Project,
    user: str,
    item: ShownItem,
    reason: str,
    *,
    signed_in: bool = False,
    assist: Exposure | None = None,
    session: str | None = None,
) -> bool:
    """Pass on an item with a reason; it counts as done for this annotator (a skip is not a label).
    ``signed_in``, ``session``, ``assist``: as for :func:`submit` (how often each arm skips is part
    of what suggestions do)."""
    if not reason.strip():
        raise WorkflowError("a skip needs a reason")
    return _finish(project, user, item, "skip", {}, reason.strip(), signed_in, assist, session)


def flag(
    project: Project,
    user: str,
    item: ShownItem,
    reason: str,
    *,
    signed_in: bool = False,
    assist: Exposure | None = None,
    session: str | None = None,
) -> bool:
    """Report an item as broken; maintainers see it on the dashboard. ``signed_in``, ``session``,
    ``assist``: as for :func:`submit`."""
    if not reason.strip():
        raise WorkflowError("a flag needs a reason")
    return _finish(project, user, item, "flag", {}, reason.strip(), signed_in, assist, session)


# -- undo: every label of one's own can be reopened ---------------------------------------------------
def undo_depth(project: Project) -> int:
    """Config ``annotation.undo_depth``: how many of an annotator's items *My items* shows at a time."""
    return project.config.annotation.undo_depth


def recent_labels(project: Project, user: str) -> list[LabelEvent]:
    """The annotator's last ``annotation.undo_depth`` live labels, skips and flags, newest first."""
    return project.store.labels.recent_live_events(user, undo_depth(project))


def previous_label(project: Project, user: str, kind: str, back: int = 0) -> LabelEvent | None:
    """The annotator's ``back``-th live label of ``kind`` before the item on screen (0 = the last one
    they finished): what the *previous item* key reopens."""
    events, _ = project.store.labels.live_events_of(user, get_kind(kind).name, limit=1, offset=back)
    return events[0] if events else None


def edit_label(
    project: Project,
    user: str,
    old_event_id: str,
    values: dict[str, Any],
    comment: str | None = None,
    *,
    signed_in: bool = False,
    session: str | None = None,
) -> LabelEvent:
    """Replace one of the annotator's own live labels (any of them: a skip or a flag too) with a new
    event that supersedes it; the old one stays in the log (labels are append-only).

    The new event id is derived from what is replaced and the new values, so a double click records
    the edit once; it is acknowledged again only while the live label is still the one it produced.
    Refused (:class:`WorkflowError`, nothing written) when the live label is no longer the one
    replaced, nor this edit's (changed since it was opened, in another tab or by a later edit). ``signed_in``, ``session``: as for :func:`submit` (an edit from a tab whose
    session ended records nothing)."""
    session_id = _checked_session(project, user, session)
    clean_id = "ev_" + content_hash([old_event_id, values, comment or None], 32)
    old = project.store.labels.event(old_event_id)
    if old is None or old.annotator != user or old.action == "recalibrate":
        raise WorkflowError(f"event {old_event_id!r} is not one of your labels")
    task = project.store.labels.task(old.task_id)
    clean = checked(task, values)
    event = LabelEvent(
        event_id=clean_id,
        task_id=task.task_id,
        kind=task.kind,
        annotator=user,
        values=clean,
        comment=comment or None,
        time_spent_s=None,
        supersedes=old_event_id,
        created_at=utcnow(),
        # an edit of a label made beside a suggestion is still a label of that arm
        assist_arm=old.assist_arm,
        suggestion_id=old.suggestion_id,
        guidelines_version=current_version(project, project.store, task.kind),  # the item drawn again now
    )
    try:  # the live label is checked in the write: a replay is "saved" only while it is still live
        recorded = project.store.submits.record_submit(
            event, active_account=signed_in, session_id=session_id, review=_review(project, task)
        )
    except StaleSubmit as exc:
        raise WorkflowError(str(exc)) from None
    return event if recorded else (project.store.labels.event(clean_id) or event)


# -- turn rewrites ------------------------------------------------------------------------------------
def display_turns(project: Project, task: AnnotationTask) -> list[dict[str, Any]]:
    """The task's turns with any later human rewrite applied (``revised`` marks those)."""
    turns = task.payload.get("turns", [])
    try:
        current = {
            t.index: t.content for t in project.store.content.dialogue(task.payload["dialogue_id"]).turns
        }
    except PrefkitError:
        current = {}
    return [
        {
            **t,
            "content": current.get(t["index"], t["content"]),
            "revised": current.get(t["index"], t["content"]) != t["content"],
        }
        for t in turns
    ]


def rewrite_turn(
    project: Project, user: str, task: AnnotationTask, turn_index: int, text: str, reason: str
) -> str:
    """Rewrite a weak user turn of the task's dialogue. The original is kept as a revision, and the
    task's kind reacts (``TaskKind.after_turn_rewrite``: a verified session gets its next round)."""
    roles = {t["index"]: t["role"] for t in task.payload.get("turns", [])}
    if roles.get(turn_index) != "user":
        raise WorkflowError(f"turn {turn_index} is not a user turn of this dialogue")
    if not text.strip():
        raise WorkflowError("the rewritten turn is empty")
    revision = project.store.content.revise_turn(
        task.payload["dialogue_id"], turn_index, text.strip(), user, reason or None
    )
    get_kind(task.kind).after_turn_rewrite(project.store, task)
    return revision


# -- progress and gold --------------------------------------------------------------------------------
def progress_after(
    project: Project, user: str, counts: dict[str, KindCounts], seen: int, today: str
) -> dict[str, KindCounts] | None:
    """``counts`` (from :func:`progress`, when the annotator's last event was ``seen``) brought up to
    date from the events since, or None when only counting again is exact (an event not made by the
    app's submit path). A first label, skip or flag of an item finishes its assignment: done + 1,
    today + 1; an edit or a withdrawal changes neither."""
    out = dict(counts)
    for ev in project.store.progress.events_after(user, seen):
        if ev.source != "app" or ev.batch_id is None:
            return None
        if ev.supersedes is not None or ev.action not in ("label", "skip", "flag", "recalibrate"):
            continue
        mine = out[ev.kind]
        at = next((i for i, b in enumerate(mine.batches) if b.batch_id == ev.batch_id), None)
        if at is None:
            return None
        batches = list(mine.batches)
        batches[at] = replace(batches[at], done=batches[at].done + 1)
        out[ev.kind] = replace(
            mine, done=mine.done + 1, today=mine.today + (ev.created_at >= today), batches=tuple(batches)
        )
    return out


@dataclass(frozen=True)
class ProgressMemo:
    """The counts a page showed last (:func:`progress`), the UTC day and the queue version they hold for."""

    day: str
    version: tuple[int, int, int]
    counts: dict[str, KindCounts]


def progress_memo(
    project: Project, user: str, memo: ProgressMemo | None, version: tuple[int, int, int]
) -> ProgressMemo:
    """The annotator's counts at queue ``version`` (:meth:`queue_version`), from ``memo`` when it can be:
    the same version reuses it, a later one adds the events since (:func:`progress_after`, an index
    range of a few rows), and a new chunk its items (:meth:`Progress.assigned_after`); a new day, released
    items or an event from elsewhere count again."""
    day = utcnow()[:10]
    counts, old = None, memo.version if memo is not None and memo.day == day else (0, 0, -1)
    if memo is not None and old[2] == version[2] and old[0] <= version[0] and old[1] <= version[1]:
        counts = memo.counts
        if old[1] < version[1]:  # a new chunk first: its items are open, the events since close them
            counts = _with_assigned(counts, project.store.progress.assigned_after(user, old[1]))
        if old[0] < version[0]:
            counts = progress_after(project, user, counts, old[0], day)
    if counts is None:
        counts = progress(project, user)
    return ProgressMemo(day, version, counts)


def _with_assigned(counts: dict[str, KindCounts], rows: list[tuple[str, str, int]]) -> dict[str, KindCounts]:
    """``counts`` with ``(kind, batch, items)`` newly assigned (none of them done yet)."""
    out = dict(counts)
    for kind, batch, n in rows:
        mine = out.get(kind, KindCounts())
        batches = {b.batch_id: b for b in mine.batches}
        old = batches.get(batch, BatchCounts(batch, 0, 0))
        batches[batch] = replace(old, assigned=old.assigned + n)
        out[kind] = replace(
            mine, assigned=mine.assigned + n, batches=tuple(batches[b] for b in sorted(batches))
        )
    return out


def progress(project: Project, user: str) -> dict[str, KindCounts]:
    """Per task kind: items assigned to the annotator, done, finished today (UTC), and per batch."""
    counts = project.store.progress.queue_counts(user, since=utcnow()[:10])
    return {kind: counts.get(kind, KindCounts()) for kind in TASK_KIND_REGISTRY}


def available(project: Project, user: str, kind: str) -> int:
    """Items of ``kind`` not yet given to the annotator that could still be (a count over the whole
    pool: the app refreshes it at most once a minute, not on every submit)."""
    get_kind(kind)
    return project.store.assignments.available_count(user, kind)


def kinds_with_work(project: Project, user: str) -> dict[str, bool]:
    """The task kinds (registry order) with something for the annotator, each with whether they have
    items open in their queue (True) or only in the pool that could still be given to them (False).
    The app offers only these."""
    counts, queue = progress(project, user), project.store.assignments
    out = {}
    for k in TASK_KIND_REGISTRY:
        if counts[k].assigned > counts[k].done or queue.open_item(user, k):  # (all done: a repeat is open)
            out[k] = True
        elif queue.has_available(user, k):
            out[k] = False
    return out


def gold_scores(
    events: Iterable[LabelEvent], gold: dict[str, tuple[str, dict[str, Any]]], tasks: dict | None = None
) -> dict[tuple[str, str], list[float]]:
    """Per (annotator, task kind): the score (0..1) of each live label on a gold item. ``gold`` maps a
    gold task id to its ``(kind, answer)``; the kind's ``gold_score`` does the scoring (given the task from
    ``tasks`` where its units need the item). The one place
    gold accuracy is computed (the gates, the dashboard and the agreement statistics all use it)."""
    scores: dict[tuple[str, str], list[float]] = {}
    for ev in events:
        if ev.action != "label" or ev.task_id not in gold:
            continue
        task_kind, answer = gold[ev.task_id]
        scores.setdefault((ev.annotator, task_kind), []).append(
            get_kind(task_kind).gold_score(ev.values, answer, (tasks or {}).get(ev.task_id))
        )
    return scores


def gold_accuracy(store: ProjectStore, kind: str | None = None) -> list[dict[str, Any]]:
    """Per (annotator, task kind): how many gold items they labelled and their mean gold score (0..1)."""
    tasks = {t.task_id: t for t in store.labels.tasks(kind=kind) if t.is_gold}
    scores = gold_scores(store.labels.effective_events(kind), store.labels.gold_answers(kind), tasks)
    return [
        {"annotator": who, "task_kind": k, "n_gold": len(s), "accuracy": round(sum(s) / len(s), 4)}
        for (who, k), s in sorted(scores.items())
    ]
