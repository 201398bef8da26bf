"""Labelling area of the project store: users, batches, tasks, label events, adjudications.

Label events and adjudications are append-only: nothing here updates or deletes one. An edit is a new
event naming the one it supersedes; a submit carries its own ``event_id`` so a double click, a rerun or
a retry writes it once.
"""

from __future__ import annotations

from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from curation.store.engine import StoreCore, StoreError
from schemas.common import utcnow
from schemas.curation import Adjudication, AnnotationTask, LabelEvent

ROLES = ("annotator", "maintainer")
_hasher = PasswordHasher()


class LabelStore(StoreCore):
    """Users, tasks and the label event log."""

    # -- users --------------------------------------------------------------------------------------
    def add_user(self, username: str, role: str, password: str, email: str | None = None) -> None:
        """A new account under the normalized name (see :mod:`curation.annotation.signin`): a name that differs
        from an existing one only in case, width or look-alike characters is refused."""
        from curation.annotation.signin import UserNameError, check_new_username

        if role not in ROLES:
            raise StoreError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        try:
            username = check_new_username(username, [u["username"] for u in self.users()])
        except UserNameError as exc:
            raise StoreError(str(exc)) from None
        if len(password) < 8:
            raise StoreError("password must be at least 8 characters")
        row = {
            "username": username,
            "role": role,
            "password_hash": _hasher.hash(password),
            "email": email,
            "active": True,
            "created_at": utcnow(),
        }
        try:
            with self.write() as conn:
                conn.execute(self.t["users"].insert(), row)
        except IntegrityError as exc:
            raise StoreError(f"user {username!r} (or email {email!r}) already exists") from exc

    def authenticate(self, username: str, password: str) -> dict[str, Any] | None:
        """The user's record when the password matches and the account is active, else ``None``."""
        user = self.user(username)
        if user is None or not user["active"]:
            _hasher.hash(password)  # same cost either way: do not reveal which names exist
            return None
        try:
            _hasher.verify(user["password_hash"], password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return None
        return {k: v for k, v in user.items() if k != "password_hash"}

    def user(self, username: str) -> dict[str, Any] | None:
        """The account called ``username`` (compared normalized: case, width and spaces ignored)."""
        from curation.annotation.signin import normalize_username

        u = self.t["users"]
        with self.read() as conn:
            row = conn.execute(select(u).where(u.c.username == username)).mappings().first()
            if row is None:
                clean = normalize_username(username)
                row = conn.execute(select(u).where(u.c.username == clean)).mappings().first()
                if row is None:  # an account made before names were normalized
                    names = conn.execute(select(u.c.username)).scalars()
                    legacy = next((n for n in names if normalize_username(n) == clean), None)
                    if legacy is not None:
                        row = conn.execute(select(u).where(u.c.username == legacy)).mappings().first()
        return None if row is None else dict(row)

    def is_active(self, username: str) -> bool:
        """One primary-key read: the app asks on every click whether the signed-in account still may."""
        u = self.t["users"]
        with self.read() as conn:
            return bool(conn.execute(select(u.c.active).where(u.c.username == username)).scalar())

    # -- sign-in log --------------------------------------------------------------------------------
    def log_sign_in(self, username: str, client: str, outcome: str) -> None:
        with self.write() as conn:
            conn.execute(
                self.t["sign_in_log"].insert(),
                {"username": username, "client": client, "outcome": outcome, "created_at": utcnow()},
            )

    def sign_in_failures(
        self, *, username: str | None = None, client: str | None = None
    ) -> tuple[int, str | None]:
        """Failed attempts since the last success or unlock, for a user name or a client, and when the
        last one was (throttled and locked attempts do not count: they were never checked)."""
        s = self.t["sign_in_log"]
        col, value = (s.c.username, username) if username is not None else (s.c.client, client)
        q = select(s.c.outcome, s.c.created_at).where(col == value).order_by(s.c.seq.desc()).limit(500)
        failures, last = 0, None
        with self.read() as conn:
            for outcome, at in conn.execute(q):
                if outcome == "ok" or outcome == "unlock":
                    break
                if outcome == "fail":
                    failures += 1
                    last = last or at
        return failures, last

    def unlock_sign_in(self, username: str | None = None, client: str | None = None) -> None:
        """End a lockout (and the backoff) of a user name or a client: a maintainer's decision, logged."""
        from curation.annotation.signin import normalize_username

        if username is not None:
            self.log_sign_in(normalize_username(username), "maintainer", "unlock")
        if client is not None:
            self.log_sign_in("", client, "unlock")

    def sign_in_log(self, username: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        s = self.t["sign_in_log"]
        q = (
            select(s.c.username, s.c.client, s.c.outcome, s.c.created_at)
            .order_by(s.c.seq.desc())
            .limit(limit)
        )
        if username is not None:
            q = q.where(s.c.username == username)
        with self.read() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def user_by_email(self, email: str) -> dict[str, Any] | None:
        u = self.t["users"]
        with self.read() as conn:
            row = conn.execute(select(u).where(u.c.email == email)).mappings().first()
        return None if row is None else dict(row)

    def users(self, role: str | None = None) -> list[dict[str, Any]]:
        u = self.t["users"]
        q = select(u.c.username, u.c.role, u.c.email, u.c.active, u.c.created_at).order_by(u.c.username)
        if role:
            q = q.where(u.c.role == role)
        with self.read() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def set_user_active(self, username: str, active: bool) -> None:
        u = self.t["users"]
        username = (self.user(username) or {}).get("username", username)
        with self.write() as conn:
            if conn.execute(update(u).where(u.c.username == username).values(active=active)).rowcount == 0:
                raise StoreError(f"no user {username!r}")

    # -- batches and tasks --------------------------------------------------------------------------
    def ensure_batch(self, conn, batch_id: str, kind: str) -> None:
        b = self.t["batches"]
        if conn.execute(select(b.c.batch_id).where(b.c.batch_id == batch_id)).first() is None:
            conn.execute(
                b.insert(), {"batch_id": batch_id, "kind": kind, "status": "open", "created_at": utcnow()}
            )

    def set_batch_status(self, batch_id: str, status: str) -> None:
        if status not in ("open", "closed"):
            raise StoreError(f"batch status must be open or closed, not {status!r}")
        b = self.t["batches"]
        with self.write() as conn:
            if conn.execute(update(b).where(b.c.batch_id == batch_id).values(status=status)).rowcount == 0:
                raise StoreError(f"no batch {batch_id!r}")

    def batches(self) -> list[dict[str, Any]]:
        """Every batch with its status and the task kinds it holds (``kinds``, comma-separated; a
        batch can hold several: ``tasks create --batch week1`` for each kind)."""
        b, t = self.t["batches"], self.t["tasks"]
        with self.read() as conn:
            kinds: dict[str, list[str]] = {}
            for batch_id, kind in conn.execute(select(t.c.batch_id, t.c.kind).distinct().order_by(t.c.kind)):
                kinds.setdefault(batch_id, []).append(kind)
            rows = conn.execute(select(b).order_by(b.c.created_at, b.c.batch_id)).mappings()
            return [
                {"batch_id": r["batch_id"], "kinds": ", ".join(kinds.get(r["batch_id"], [r["kind"]])),
                 "status": r["status"], "created_at": r["created_at"]}
                for r in rows
            ]  # fmt: skip

    def add_tasks(self, tasks: list[AnnotationTask]) -> int:
        """Add tasks; a task whose (kind, item_ref) exists is left as it is. Returns how many were new."""
        t = self.t["tasks"]
        with self.write() as conn:
            have = {(r[0], r[1]) for r in conn.execute(select(t.c.kind, t.c.item_ref))}
            new = [task for task in tasks if (task.kind, task.item_ref) not in have]
            for batch in {(task.batch, task.kind) for task in new}:
                self.ensure_batch(conn, *batch)
            self.insert_many(conn, "tasks", [self._task_row(task) for task in new])
        return len(new)

    def _task_row(self, task: AnnotationTask) -> dict[str, Any]:
        return {
            "task_id": task.task_id,
            "kind": task.kind,
            "item_ref": task.item_ref,
            "payload_json": self.dumps(task.payload),
            "batch_id": task.batch,
            "overlap": task.overlap,
            "is_gold": task.is_gold,
            "gold_answer_json": self.dumps(task.gold_answer),
            "schema_version": task.schema_version,
            "created_at": task.created_at,
        }

    def _task_from_row(self, r) -> AnnotationTask:
        # Rows were validated when written (add_tasks); reading 100,000 of them (a Label Studio push)
        # must not validate each again.
        return AnnotationTask.model_construct(
            task_id=r["task_id"],
            kind=r["kind"],
            item_ref=r["item_ref"],
            payload=self.loads(r["payload_json"]),
            batch=r["batch_id"],
            overlap=r["overlap"],
            is_gold=bool(r["is_gold"]),
            gold_answer=self.loads(r["gold_answer_json"]),
            schema_version=r["schema_version"],
            created_at=r["created_at"],
        )

    def tasks(self, kind: str | None = None, batch: str | None = None) -> list[AnnotationTask]:
        t = self.t["tasks"]
        q = select(t).order_by(t.c.task_id)
        if kind:
            q = q.where(t.c.kind == kind)
        if batch:
            q = q.where(t.c.batch_id == batch)
        with self.read() as conn:
            return [self._task_from_row(r) for r in conn.execute(q).mappings()]

    def task(self, task_id: str) -> AnnotationTask:
        t = self.t["tasks"]
        with self.read() as conn:
            row = conn.execute(select(t).where(t.c.task_id == task_id)).mappings().first()
        if row is None:
            raise StoreError(f"no task {task_id!r}")
        return self._task_from_row(row)

    def _event_row(self, ev: LabelEvent) -> dict[str, Any]:
        return {
            "event_id": ev.event_id,
            "task_id": ev.task_id,
            "kind": ev.kind,
            "annotator": ev.annotator,
            "action": ev.action,
            "values_json": self.dumps(ev.values),
            "comment": ev.comment,
            "time_spent_s": ev.time_spent_s,
            "supersedes": ev.supersedes,
            "source": ev.source,
            "schema_version": ev.schema_version,
            "created_at": ev.created_at,
        }

    def _event_from_row(self, r) -> LabelEvent:
        return LabelEvent(
            **{k: r[k] for k in ("event_id", "task_id", "kind", "annotator", "action", "comment")},
            values=self.loads(r["values_json"]),
            time_spent_s=r["time_spent_s"],
            supersedes=r["supersedes"],
            source=r["source"],
            schema_version=r["schema_version"],
            created_at=r["created_at"],
        )

    # -- label events -------------------------------------------------------------------------------
    def append_event(self, event: LabelEvent) -> bool:
        """Record one event in its own short transaction. Returns False when ``event_id`` was
        already recorded (an idempotent retry), True when it was written now."""

        def step() -> bool:
            with self.write() as conn:
                return self.insert_event(conn, event)

        return self.retrying(step)

    def insert_event(self, conn, event: LabelEvent) -> bool:
        """Insert ``event`` unless its id is already recorded (by anyone, even concurrently: the
        unique key decides, so two replicas retrying one submit record it once)."""
        stmt = self.insert_stmt("label_events").on_conflict_do_nothing(index_elements=["event_id"])
        # RETURNING, not rowcount: the psycopg dialect reports -1 for single-row inserts.
        stmt = stmt.returning(self.t["label_events"].c.seq)
        return conn.execute(stmt, self._event_row(event)).first() is not None

    def append_events(self, events: list[LabelEvent]) -> int:
        """Record many events in one transaction (imports); already-known ids are skipped."""
        e = self.t["label_events"]
        with self.write() as conn:
            ids = [ev.event_id for ev in events]
            have: set[str] = set()
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                have |= {r[0] for r in conn.execute(select(e.c.event_id).where(e.c.event_id.in_(chunk)))}
            rows = [self._event_row(ev) for ev in events if ev.event_id not in have]
            self.insert_many(conn, "label_events", rows)
        return len(rows)

    def events(
        self, kind: str | None = None, task_id: str | None = None, annotator: str | None = None
    ) -> list[LabelEvent]:
        """Every event, oldest first, optionally filtered."""
        e = self.t["label_events"]
        q = select(e).order_by(e.c.seq)
        if kind:
            q = q.where(e.c.kind == kind)
        if task_id:
            q = q.where(e.c.task_id == task_id)
        if annotator:
            q = q.where(e.c.annotator == annotator)
        with self.read() as conn:
            rows = conn.execute(q).mappings().all()
        return [self._event_from_row(r) for r in rows]

    def effective_events(self, kind: str | None = None) -> list[LabelEvent]:
        """The live event per (task, annotator): the latest one not superseded by a later event.
        A withdrawn label leaves nothing. Derived from the log alone, so it is reproducible."""
        latest: dict[tuple[str, str], LabelEvent] = {}
        for ev in self.events(kind=kind):
            latest[(ev.task_id, ev.annotator)] = ev
        return [ev for ev in latest.values() if ev.action != "withdraw"]

    # -- adjudications ------------------------------------------------------------------------------
    def add_adjudication(self, adj: Adjudication) -> bool:
        a = self.t["adjudications"]
        with self.write() as conn:
            if conn.execute(select(a.c.seq).where(a.c.adjudication_id == adj.adjudication_id)).first():
                return False
            conn.execute(
                a.insert(),
                {
                    "adjudication_id": adj.adjudication_id,
                    "task_id": adj.task_id,
                    "maintainer": adj.maintainer,
                    "values_json": self.dumps(adj.values),
                    "note": adj.note,
                    "supersedes": adj.supersedes,
                    "schema_version": adj.schema_version,
                    "created_at": adj.created_at,
                },
            )
        return True

    def adjudications(self, task_id: str | None = None) -> list[Adjudication]:
        a = self.t["adjudications"]
        q = select(a).order_by(a.c.seq)
        if task_id:
            q = q.where(a.c.task_id == task_id)
        with self.read() as conn:
            rows = conn.execute(q).mappings().all()
        return [
            Adjudication(
                adjudication_id=r["adjudication_id"],
                task_id=r["task_id"],
                maintainer=r["maintainer"],
                values=self.loads(r["values_json"]),
                note=r["note"],
                supersedes=r["supersedes"],
                schema_version=r["schema_version"],
                created_at=r["created_at"],
            )
            for r in rows
        ]
