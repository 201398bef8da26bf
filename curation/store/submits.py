"""Submits area of the project store (``store.submits``): a label, skip or flag appended to the label
log through the labels area in the same transaction that closes the assignment, and the adaptive
overlap decided there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prefkit.curation.store.assignments import new_event_id, open_batch
from prefkit.curation.store.engine import StoreArea, StoreCore, in_write
from prefkit.curation.store.labels import CLOSING, Labels
from prefkit.curation.store.sessions import holds
from prefkit.schemas.common import PrefkitError, utcnow
from prefkit.schemas.curation import LabelEvent
from sqlalchemy import Connection, delete, func, select, update

CHANGED = "this label was changed since you opened it; open it again to see the latest (nothing was recorded)"


@dataclass(frozen=True, slots=True)
class OverlapRange:
    """Per (kind, batch): the annotators per item now (``low``..``high``) and the adaptive bounds (None: fixed)."""

    kind: str
    batch_id: str
    low: int
    high: int
    min: int | None
    max: int | None


@dataclass(frozen=True, slots=True)
class TaskTarget:
    """A task's overlap as the adaptive rule reads it, with the row locked: its current target, its
    bounds (None: fixed overlap), whether it is an audit item and how many holders are still open."""

    task_id: str
    kind: str
    overlap: int
    overlap_min: int | None
    overlap_max: int | None
    audit: bool
    open: int


class AccountInactive(PrefkitError):
    """A signed-in session's write for an account disabled (or removed) since it signed in."""


class SessionEnded(AccountInactive):
    """A signed-in session's write after that session ended: signed out (in any tab or window),
    expired, revoked (``prefkit users disable`` or ``password``) or its account disabled."""


class StaleSubmit(PrefkitError):
    """A submit for a showing of an item that is no longer the annotator's open one: the item was
    finished with another answer (in another tab or window) or is open again under a new showing.
    Nothing is written; the message says what happened in words an annotator reads."""


class TimeUp(StaleSubmit):
    """A crowd participant's submit after their study's time limit (counted from their arrival):
    nothing is written, the page then shows the time-out."""


class Submits(StoreArea):
    """Submits, and the overlap of a task as the adaptive rule reads and raises it."""

    def __init__(self, core: StoreCore, labels: Labels):
        super().__init__(core)
        self.labels = labels

    @in_write
    def record_submit(
        self,
        conn: Connection,
        ev: LabelEvent,
        *,
        active_account: bool = False,
        session_id: str | None = None,
        review: Callable[[Connection], None] | None = None,
        next_version: str | None = None,
        until: str | None = None,
    ) -> bool:
        """Append ``ev`` and close the annotator's assignment in one short transaction (the next item
        is shown in it, with ``next_version`` of the kind's guidelines).
        Returns False when this very event is already recorded (a double click or a retry: same id,
        same action, values and comment).

        An edit (``ev.supersedes``) must replace the annotator's live label of the task, read in the
        same transaction; its id already recorded is acknowledged only while it is the live label
        itself. Otherwise :class:`StaleSubmit` (changed since it was opened) and nothing is written.

        A first label, skip or flag must come from the showing of the item that is open: its id is
        the assignment's pending ``event_id`` (written when the item was shown). Otherwise
        :class:`StaleSubmit` and nothing is written: the same id with another answer (a second tab
        that still showed an item finished in the first), or an id that is not the open showing's.
        An item handed back to the pool while on screen has no assignment left: its label is kept.

        With ``active_account`` the annotator must be an active account at the moment of the write
        (checked in the same transaction): otherwise :class:`AccountInactive` and nothing written.
        The app passes it for every click, so a disabled account's next click records nothing.
        With ``session_id`` the sign-in session must be open too, checked in the same read: the
        annotator's, not revoked, not expired; otherwise :class:`SessionEnded` and nothing written
        (a tab whose session was signed out elsewhere records nothing).

        ``review(conn)`` runs in the same transaction once the event is recorded (adaptive overlap
        decides there whether the item needs one more annotator: a kill can never separate the label
        from that decision).

        An ``ev`` with ``action="repeat"`` answers the repeat it was shown for (never a label event).

        ``until``: the moment after which nothing is recorded (a crowd participant's time limit),
        compared with the clock in the write's transaction: :class:`TimeUp` past it."""
        a, u = self.t["assignments"], self.t["users"]
        if until is not None and utcnow() > until:
            raise TimeUp("the time for this study has passed; nothing was recorded")
        if active_account or session_id is not None:
            q = select(u.c.active).where(u.c.username == ev.annotator)
            if session_id is not None:
                q = q.where(holds(self.t, session_id, ev.annotator, utcnow()))
            if not conn.execute(q).scalar():
                if session_id is not None:
                    raise SessionEnded(f"the sign-in of {ev.annotator!r} has ended; nothing was recorded")
                raise AccountInactive(f"the account {ev.annotator!r} is disabled or gone")
        if ev.action == "repeat":
            return self._answer_repeat(conn, ev, next_version)
        if ev.supersedes is not None:  # an edit: of the live label, checked in this write
            self.lock(conn, f"queue:{ev.annotator}")
            live = self.labels.live_id(conn, ev.annotator, ev.task_id)
            if live == ev.event_id:  # this very edit is the live label: a double click or a retry
                self._same_as_recorded(conn, ev)
                return False
            if live != ev.supersedes:
                raise StaleSubmit(CHANGED)
        if not self.labels.insert_event(conn, ev):
            if ev.supersedes is not None:  # recorded before, then replaced: not what is live now
                raise StaleSubmit(CHANGED)
            self._same_as_recorded(conn, ev)
            return False
        d = self.t["drafts"]
        if ev.supersedes is not None:  # the editor's draft of the label replaced is done with
            mine = (d.c.annotator == ev.annotator) & (d.c.task_id == ev.task_id)
            conn.execute(delete(d).where(mine, d.c.event_id == ev.supersedes))
        if ev.action in CLOSING and ev.supersedes is None:
            mine = (a.c.task_id == ev.task_id) & (a.c.annotator == ev.annotator)
            closed = conn.execute(
                update(a)
                .where(mine, a.c.done_at.is_(None), a.c.event_id == ev.event_id)
                .values(done_at=ev.created_at)
            ).rowcount
            # the half-done form of this item is done with
            conn.execute(delete(d).where(d.c.annotator == ev.annotator, d.c.task_id == ev.task_id))
            if not closed:
                held = conn.execute(select(a.c.event_id, a.c.done_at).where(mine)).first()
                if held is not None:  # the item is open under another showing, or finished
                    raise StaleSubmit(
                        "this item is no longer the one on your screen"
                        + (" (it was finished in another tab or window)" if held.done_at else "")
                        + "; nothing was recorded"
                    )
                if ev.action != "recalibrate":  # a recalibration answer holds no place
                    self._reattach(conn, ev)
            self._show_next(conn, ev, next_version)
        if review is not None:
            review(conn)
        return True

    def _answer_repeat(self, conn: Connection, ev: LabelEvent, next_version: str | None) -> bool:
        """``ev`` answers the open repeat shown with its id (then the queue's next item is shown);
        False for the same answer recorded before, :class:`StaleSubmit` for any other."""
        done = self.labels.repeats.answer(conn, ev)
        if not done:
            if done is None:
                raise StaleSubmit("this item is no longer the one on your screen; nothing was recorded")
            return False
        d = self.t["drafts"]
        conn.execute(delete(d).where(d.c.annotator == ev.annotator, d.c.task_id == ev.task_id))
        self._show_next(conn, ev, next_version)
        return True

    def _same_as_recorded(self, conn: Connection, ev: LabelEvent) -> None:
        """``ev``'s id is already recorded: fine when it is the same event (a retry or a double
        click); :class:`StaleSubmit` when the same showing was answered differently before."""
        e = self.t["label_events"]
        have = conn.execute(
            select(e.c.task_id, e.c.annotator, e.c.action, e.c.values_json, e.c.comment).where(
                e.c.event_id == ev.event_id
            )
        ).first()
        same = (
            have is not None
            and (have.task_id, have.annotator, have.action, have.comment)
            == (ev.task_id, ev.annotator, ev.action, ev.comment)
            and self.loads(have.values_json) == ev.values
        )
        if not same:
            raise StaleSubmit(
                "this item was already finished with another answer (in another tab or window?); "
                "nothing was recorded"
            )

    def _show_next(self, conn: Connection, ev: LabelEvent, version: str | None = None) -> None:
        """Mark the annotator's next open item of the kind as shown, in the submit's transaction and
        in one statement: the next item is on screen a moment later, and the page's run only reads."""
        a = self.t["assignments"]
        first_open = (
            select(a.c.task_id)
            .where(a.c.annotator == ev.annotator, a.c.kind == ev.kind, a.c.done_at.is_(None))
            .where(open_batch(self.t, a.c.batch_id))
            .order_by(a.c.position)
            .limit(1)
            .scalar_subquery()
        )
        conn.execute(
            update(a)
            .where(a.c.annotator == ev.annotator, a.c.task_id == first_open)
            .where(a.c.done_at.is_(None), a.c.event_id.is_(None))
            .values(event_id=new_event_id(), shown_at=ev.created_at, guidelines_version=version)
        )

    def _reattach(self, conn: Connection, ev: LabelEvent) -> None:
        """A submit for an item that went back to the pool while it was on screen: the label is kept
        (nothing an annotator did is lost) and the assignment is restored, finished."""
        a, t = self.t["assignments"], self.t["tasks"]
        if conn.execute(
            select(a.c.task_id).where(a.c.task_id == ev.task_id, a.c.annotator == ev.annotator)
        ).first():
            return
        task = conn.execute(select(t.c.batch_id).where(t.c.task_id == ev.task_id)).first()
        start = conn.execute(select(func.max(a.c.position)).where(a.c.annotator == ev.annotator)).scalar()
        conn.execute(
            a.insert(),
            {
                "task_id": ev.task_id,
                "annotator": ev.annotator,
                "position": (start or 0) + 1,
                "assigned_at": ev.created_at,
                "event_id": ev.event_id,
                "shown_at": ev.created_at,
                "done_at": ev.created_at,
                "kind": ev.kind,
                "batch_id": task[0] if task else "default",
            },
        )
        conn.execute(update(t).where(t.c.task_id == ev.task_id).values(n_assigned=t.c.n_assigned + 1))

    def lock_target(self, conn: Connection, task_id: str) -> TaskTarget | None:
        """The task's overlap with its row locked until the transaction ends (PostgreSQL: ``FOR NO KEY
        UPDATE``; SQLite's write transaction already excludes every other writer), so two annotators
        finishing the same item at once decide one after the other, the second seeing the first's label."""
        t, a = self.t["tasks"], self.t["assignments"]
        q = select(t.c.task_id, t.c.kind, t.c.overlap, t.c.overlap_min, t.c.overlap_max, t.c.audit).where(
            t.c.task_id == task_id
        )
        row = conn.execute(q.with_for_update(key_share=True)).first()
        if row is None:
            return None
        n_open = conn.execute(
            select(func.count()).where(a.c.task_id == task_id, a.c.done_at.is_(None))
        ).scalar_one()
        return TaskTarget(*row[:5], bool(row[5]), int(n_open))

    def raise_target(self, conn: Connection, task_id: str, target: int) -> bool:
        """Hand the task to one more annotator: its target becomes ``target`` (never above its
        ``overlap_max``, never lowered). True when it changed."""
        t = self.t["tasks"]
        stmt = (
            update(t)
            .where(t.c.task_id == task_id, t.c.overlap < target, t.c.overlap_max >= target)
            .values(overlap=target)
        )
        return bool(conn.execute(stmt).rowcount)

    def adaptive_tasks(self, kind: str | None = None) -> list[str]:
        """Ids of the tasks under adaptive overlap that could still get another annotator."""
        t = self.t["tasks"]
        q = select(t.c.task_id).where(t.c.overlap_max.is_not(None), t.c.overlap < t.c.overlap_max)
        if kind is not None:
            q = q.where(t.c.kind == kind)
        return [r[0] for r in self.fetch_tuples(q.order_by(t.c.task_id))]

    def overlap_ranges(self) -> list[OverlapRange]:
        """Per (kind, batch): the fewest and most annotators an item goes to now, and the adaptive
        bounds (``overlap_min``..``overlap_max``; None for fixed overlap)."""
        t = self.t["tasks"]
        q = (
            select(
                t.c.kind,
                t.c.batch_id,
                func.min(t.c.overlap),
                func.max(t.c.overlap),
                func.min(t.c.overlap_min),
                func.max(t.c.overlap_max),
            )
            .group_by(t.c.kind, t.c.batch_id)
            .order_by(t.c.kind, t.c.batch_id)
        )
        return [OverlapRange(*r) for r in self.fetch_tuples(q)]
