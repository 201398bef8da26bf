"""Studies area of the project store (``store.studies``): crowd studies, the participants bound to
(study, platform id) with their accounts, and the log of what happened to each participant.

A participant's account is a row of ``users`` like any annotator's (so queues, gold, overlap and
reliability treat them alike) with a password hash nothing verifies: nobody signs in to it with a
password; only the study's entry link (:mod:`prefkit.curation.annotation.studies`) opens it. The
account, the participant row and the ``arrived`` event are written in one transaction.

Nothing here decides who may arrive, when someone is screened out or what they are paid: that is
:mod:`prefkit.curation.annotation.studies` and :mod:`prefkit.curation.quality.study_report`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from prefkit.curation.store.engine import StoreArea, StoreError, from_row
from prefkit.schemas.common import UTC_FORMAT, parse_utc, utcnow
from sqlalchemy import Connection, func, select, update
from sqlalchemy.exc import IntegrityError

#: The password hash of a participant's account: not an argon2 hash, so no password ever matches it.
NO_PASSWORD = "!crowd-participant"
STATUSES = ("active", "completed", "screened_out", "timed_out", "incomplete")


class StudyFull(StoreError):
    """A new participant when every place of the study is taken (counted in the arrival's write)."""


@dataclass(frozen=True, slots=True)
class Study:
    """A study as stored (never with its secret, only the secret's hash)."""

    study_id: str
    name: str
    kind: str
    batch_id: str
    platform: str
    items: int
    gold_share: float
    screen_below: float
    completion_code: str
    screened_out_code: str
    completion_url: str | None
    time_limit_minutes: float
    rules: dict[str, Any]
    secret_hash: str
    created_at: str


@dataclass(frozen=True, slots=True)
class Participant:
    """One platform id in one study: its account, the platform's session id it first came with, how it
    stands (``active``, ``completed``, ``screened_out``, ``timed_out``) and when."""

    study_id: str
    platform_id: str
    username: str
    platform_session: str | None
    platform_study: str | None
    status: str
    arrived_at: str
    finished_at: str | None

    def deadline(self, minutes: float) -> str:
        """The UTC time ``minutes`` after the arrival (a study's time limit), comparable as text."""
        return (parse_utc(self.arrived_at) + timedelta(minutes=minutes)).strftime(UTC_FORMAT)


@dataclass(frozen=True, slots=True)
class StudyEvent:
    """One line of a study's log: ``arrived``, ``resumed``, ``completed``, ``screened_out``, ``timed_out``."""

    seq: int
    study_id: str
    platform_id: str
    event: str
    detail: dict[str, Any] | None
    created_at: str


@dataclass(frozen=True, slots=True)
class QueueRow:
    """One item in a participant's queue: its task, whether it is a gold item, whether it is done."""

    task_id: str
    is_gold: bool
    done: bool


class Studies(StoreArea):
    """Studies, their participants and their events."""

    # -- studies ------------------------------------------------------------------------------------
    def add_study(self, study: Study) -> None:
        row = {k: getattr(study, k) for k in Study.__slots__ if k != "rules"}
        row["rules_json"] = json.dumps(study.rules, sort_keys=True)
        try:
            with self.write() as conn:
                conn.execute(self.t["studies"].insert(), row)
        except IntegrityError as exc:
            raise StoreError(f"a study called {study.study_id!r} already exists") from exc

    def study(self, study_id: str) -> Study | None:
        row = self.row("studies", study_id=study_id)
        return None if row is None else from_row(Study, row)

    def studies(self) -> list[Study]:
        s = self.t["studies"]
        return [from_row(Study, r) for r in self.fetch(select(s).order_by(s.c.created_at))]

    def set_secret_hash(self, study_id: str, secret_hash: str) -> None:
        s = self.t["studies"]
        with self.write() as conn:
            done = conn.execute(update(s).where(s.c.study_id == study_id).values(secret_hash=secret_hash))
            if not done.rowcount:
                raise StoreError(f"no study {study_id!r}")

    # -- participants -------------------------------------------------------------------------------
    def participant(self, study_id: str, platform_id: str) -> Participant | None:
        row = self.row("study_participants", study_id=study_id, platform_id=platform_id)
        return None if row is None else Participant(**row)

    def participant_by_username(self, username: str) -> Participant | None:
        row = self.row("study_participants", username=username)
        return None if row is None else Participant(**row)

    def participants(self, study_id: str) -> list[Participant]:
        p = self.t["study_participants"]
        q = select(p).where(p.c.study_id == study_id).order_by(p.c.arrived_at, p.c.platform_id)
        return [Participant(**r) for r in self.fetch(q)]

    def add_participant(self, participant: Participant, detail: dict[str, Any], places: int = 0) -> bool:
        """The participant's account, its row and its ``arrived`` event, in one transaction. False
        when the (study, platform id) arrived meanwhile (another tab): nothing written. With
        ``places``, :class:`StudyFull` (nothing written) when that many participants not timed out
        are there already: counted in the same transaction, under the study's lock, so newcomers
        arriving at once cannot all take the last place."""
        now = participant.arrived_at
        account = {
            "username": participant.username,
            "role": "annotator",
            "password_hash": NO_PASSWORD,
            "email": None,
            "active": True,
            "created_at": now,
        }
        row = {k: getattr(participant, k) for k in Participant.__slots__}
        p = self.t["study_participants"]
        try:
            with self.write() as conn:
                self.lock(conn, f"study:{participant.study_id}")
                taken = select(func.count()).where(
                    p.c.study_id == participant.study_id, p.c.status != "timed_out"
                )
                if places and conn.execute(taken).scalar_one() >= places:
                    raise StudyFull(f"every place of study {participant.study_id!r} is taken")
                conn.execute(self.t["users"].insert(), account)
                conn.execute(self.t["study_participants"].insert(), row)
                self._event(conn, participant.study_id, participant.platform_id, "arrived", detail)
        except IntegrityError:
            return False
        return True

    def finish(self, study_id: str, platform_id: str, status: str, detail: dict[str, Any]) -> bool:
        """An active participant becomes ``status`` (completed, screened out or timed out), with its
        event, in one transaction. False (nothing written) when it was no longer active."""
        if status not in STATUSES[1:]:
            raise StoreError(f"unknown participant status {status!r}")
        p = self.t["study_participants"]
        now = utcnow()
        with self.write() as conn:
            changed = conn.execute(
                update(p)
                .where(p.c.study_id == study_id, p.c.platform_id == platform_id, p.c.status == "active")
                .values(status=status, finished_at=now)
            ).rowcount
            if changed:
                self._event(conn, study_id, platform_id, status, detail, now)
        return bool(changed)

    def queue(self, username: str, kind: str) -> list[QueueRow]:
        """A participant's assignments of ``kind`` in queue order: task, gold or not, finished or not."""
        a, t = self.t["assignments"], self.t["tasks"]
        q = (
            select(a.c.task_id, t.c.is_gold, a.c.done_at.is_not(None))
            .join_from(a, t, t.c.task_id == a.c.task_id)
            .where(a.c.annotator == username, a.c.kind == kind)
            .order_by(a.c.position)
        )
        return [QueueRow(r[0], bool(r[1]), bool(r[2])) for r in self.fetch_tuples(q)]

    # -- events -------------------------------------------------------------------------------------
    def log(self, study_id: str, platform_id: str, event: str, detail: dict[str, Any] | None = None) -> None:
        with self.write() as conn:
            self._event(conn, study_id, platform_id, event, detail)

    def _event(
        self,
        conn: Connection,
        study_id: str,
        platform_id: str,
        event: str,
        detail: dict[str, Any] | None,
        at: str | None = None,
    ) -> None:
        row = {"study_id": study_id, "platform_id": platform_id, "event": event, "created_at": at or utcnow()}
        detail_json = json.dumps(detail, sort_keys=True) if detail else None
        conn.execute(self.t["study_events"].insert(), {**row, "detail_json": detail_json})

    def events(self, study_id: str) -> list[StudyEvent]:
        e = self.t["study_events"]
        q = select(e).where(e.c.study_id == study_id).order_by(e.c.seq)
        return [
            from_row(StudyEvent, r, detail=json.loads(r["detail_json"]) if r["detail_json"] else None)
            for r in self.fetch(q)
        ]

    def counts(self) -> dict[str, int]:
        """Rows per table: what tests compare before and after a refused arrival."""
        return {name: self.count(name) for name in ("studies", "study_participants", "study_events", "users")}

    def count(self, table: str) -> int:
        return int(self.scalar(select(func.count()).select_from(self.t[table])))
