"""Accounts area of the project store (``store.accounts``): users, their roles and passwords, and
the sign-in log the app's throttling and lockouts read. User names are kept in the one form of
:mod:`prefkit.curation.store.usernames`.

Passwords are kept only as argon2 hashes; nothing here decides a lockout policy (that is
:mod:`prefkit.curation.annotation.signin`). A maintainer's changes at the door are written to the
sign-in log too (outcome ``unlock``, ``password``; client ``maintainer``): the one audit trail of
who could sign in when.
"""

from __future__ import annotations

from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from prefkit.curation.store.audit import Audit
from prefkit.curation.store.engine import StoreArea, StoreCore, StoreError
from prefkit.curation.store.sessions import revoke_all
from prefkit.curation.store.usernames import (
    JUDGE_PREFIX,
    UserNameError,
    check_new_username,
    normalize_username,
)
from prefkit.schemas.common import utcnow
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

ROLES = ("annotator", "maintainer")
_hasher = PasswordHasher()


@dataclass(frozen=True, slots=True)
class Account:
    """A user account as the store hands it out (never with its password hash)."""

    username: str
    role: str
    email: str | None
    active: bool
    created_at: str
    temporary: bool = False  # a password made for the person: they choose their own before a session
    password_set_at: str | None = None  # when the password was set (None: at the account's creation)

    @property
    def password_issued(self) -> str:
        """When the account's password was made: what a one-time password's expiry counts from."""
        return self.password_set_at or self.created_at


@dataclass(frozen=True, slots=True)
class SignInAttempt:
    """One row of the sign-in log: ``outcome`` is ok, fail, throttled, locked or unlock."""

    username: str
    client: str
    outcome: str
    created_at: str


EXPIRED = "the one-time password you were given has expired: ask a maintainer for a new one"


class LastMaintainer(StoreError):
    """Disabling or demoting the last active maintainer: refused, nobody could undo it."""


@dataclass(slots=True)
class DoorState:
    """An account at the door: its last successful sign-in, failures since then (or an unlock)."""

    last_ok: str | None = None
    failures: int = 0
    last_failure: str | None = None


def _check_password(password: str) -> None:
    """The one rule a new password meets (``users add``, ``users password``)."""
    if len(password) < 8:
        raise StoreError("password must be at least 8 characters")


def _account(row) -> Account:
    flags = (bool(row["active"]), row["created_at"], bool(row.get("password_temporary", False)))
    return Account(row["username"], row["role"], row["email"], *flags, row.get("password_set_at"))


class Accounts(StoreArea):
    """Users and the sign-in log."""

    def __init__(self, core: StoreCore, audit: Audit):
        super().__init__(core)
        self.audit = audit  # a maintainer's change and its audit row commit together

    # -- users --------------------------------------------------------------------------------------
    def add_user(
        self,
        username: str,
        role: str,
        password: str,
        email: str | None = None,
        *,
        judge: bool = False,
        actor: str | None = None,
        temporary: bool = False,
    ) -> None:
        """A new account under the normalized name (see :mod:`prefkit.curation.store.usernames`): a name
        that differs from an existing one only in case, width or look-alike characters is refused, and
        so is a name reserved for LLM judges (``judge.*``) unless ``judge`` (the evaluation's own judge
        accounts). With ``actor``, the audit log says who added it (in the same transaction); a
        ``temporary`` password opens no session until the person has chosen their own
        (:meth:`replace_temporary`)."""
        if role not in ROLES:
            raise StoreError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        try:
            username = check_new_username(username, [u.username for u in self.users()], judge=judge)
        except UserNameError as exc:
            raise StoreError(str(exc)) from None
        _check_password(password)
        now, u = utcnow(), self.t["users"]
        row = {
            "username": username,
            "role": role,
            "password_hash": _hasher.hash(password),
            "email": email,
            "active": True,
            "created_at": now,
            "password_temporary": temporary,
            "password_set_at": now,
        }
        try:
            with self.write() as conn:
                # checked again against every name, in the write (PostgreSQL: under the names' lock), so
                # two look-alike names added at once cannot both pass: the unique key sees only equal ones
                self.lock(conn, "accounts:names")
                names = list(conn.execute(select(u.c.username)).scalars())
                try:
                    check_new_username(username, names, judge=judge)
                except UserNameError as exc:
                    raise StoreError(str(exc)) from None
                conn.execute(u.insert(), row)
                if actor is not None:
                    self.audit.insert(conn, actor, "user.add", username, {"role": role, "email": email})
        except IntegrityError as exc:
            raise StoreError(f"user {username!r} (or email {email!r}) already exists") from exc

    def set_password(
        self, username: str, password: str, actor: str | None = None, temporary: bool = False
    ) -> int:
        """Give ``username`` a new password and end every open session of the account, in one
        transaction (no moment where the new password is set and an old sign-in still acts), logged
        in the sign-in log as ``password`` by ``maintainer``. Returns how many sessions ended.

        Refused (:class:`StoreError`, nothing changed): no such user, an LLM judge's account (no
        person signs in as one), a password shorter than 8 characters. A disabled account may be
        given one (it still cannot sign in until enabled). Failed sign-ins still count towards a
        lockout afterwards: ending one is ``unlock_sign_in``'s. A ``temporary`` password (a reset to a
        one-time password) opens no session until the person has chosen their own."""
        found = self.user(username)
        if found is None:
            raise StoreError(f"no user {username!r}")
        if found.username.startswith(JUDGE_PREFIX):
            raise StoreError(f"{found.username!r} is an LLM judge's account: nobody signs in with a password")
        _check_password(password)
        u, log = self.t["users"], self.t["sign_in_log"]
        digest = _hasher.hash(password)  # before the transaction: hashing takes a while
        with self.write() as conn:
            changed = conn.execute(
                update(u)
                .where(u.c.username == found.username)
                .values(password_hash=digest, password_temporary=temporary, password_set_at=utcnow())
            ).rowcount
            if not changed:  # removed meanwhile
                raise StoreError(f"no user {username!r}")
            ended = revoke_all(conn, self.t, found.username)
            conn.execute(
                log.insert(),
                {
                    "username": found.username,
                    "client": "maintainer",
                    "outcome": "password",
                    "created_at": utcnow(),
                },
            )
            if actor is not None:
                self.audit.insert(conn, actor, "user.password", found.username, {"sessions_ended": ended})
        return ended

    def replace_temporary(
        self, username: str, temporary: str, password: str, issued_after: str | None = None
    ) -> Account:
        """The person's own password in place of the temporary one made for them (checked again here,
        so nobody replaces another's), logged in the sign-in log (``password``, client ``self``) and
        the audit log (by the person). Refused (:class:`StoreError`, nothing changed): a wrong or no
        longer temporary password, one made before ``issued_after`` (expired: checked again in the
        write), a disabled account, the same password again, one under 8 characters."""
        row = self._row(username)
        try:
            ok = row is not None and row["active"] and _hasher.verify(row["password_hash"], temporary)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            ok = False
        if not ok or not row["password_temporary"]:
            raise StoreError("the password you were given is not right (or was replaced already)")
        if issued_after is not None and _account(row).password_issued < issued_after:
            raise StoreError(EXPIRED)
        if password == temporary:
            raise StoreError("choose a password of your own, not the one you were given")
        _check_password(password)
        u, log = self.t["users"], self.t["sign_in_log"]
        digest = _hasher.hash(password)
        with self.write() as conn:
            still = [u.c.username == row["username"], u.c.password_temporary.is_(True)]
            if issued_after is not None:  # not expired at the moment of the write either
                still.append(func.coalesce(u.c.password_set_at, u.c.created_at) >= issued_after)
            changed = conn.execute(
                update(u)
                .where(*still)
                .values(password_hash=digest, password_temporary=False, password_set_at=utcnow())
            ).rowcount
            if not changed:  # replaced meanwhile in another tab, or expired since
                raise StoreError("the password you were given was replaced already (or has expired)")
            conn.execute(
                log.insert(),
                {
                    "username": row["username"],
                    "client": "self",
                    "outcome": "password",
                    "created_at": utcnow(),
                },
            )
            self.audit.insert(conn, row["username"], "user.password", row["username"], {"own": True})
        return _account({**row, "password_temporary": False})

    def authenticate(self, username: str, password: str) -> Account | None:
        """The account when the password matches and the account is active, else ``None``."""
        user = self._row(username)
        if user is None or not user["active"]:
            _hasher.hash(password)  # same cost either way: do not reveal which names exist
            return None
        try:
            _hasher.verify(user["password_hash"], password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return None
        return _account(user)

    def user(self, username: str) -> Account | None:
        """The account called ``username`` (compared normalized: case, width and spaces ignored)."""
        row = self._row(username)
        return None if row is None else _account(row)

    def _row(self, username: str):
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
        return row

    def is_active(self, username: str) -> bool:
        """One primary-key read: the app asks on every click whether the signed-in account still may."""
        u = self.t["users"]
        return bool(self.scalar(select(u.c.active).where(u.c.username == username)))

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

    def unlock_sign_in(
        self, username: str | None = None, client: str | None = None, actor: str | None = None
    ) -> None:
        """End a lockout (and the backoff) of a user name or a client: a maintainer's decision, logged
        in the sign-in log (and with ``actor`` in the audit log, in the same transaction)."""
        log = self.t["sign_in_log"]
        with self.write() as conn:
            for name, where in ((username, "maintainer"), (client, None)):
                if name is None:
                    continue
                row = (
                    {"username": normalize_username(name), "client": where}
                    if where
                    else {"username": "", "client": name}
                )
                conn.execute(log.insert(), {**row, "outcome": "unlock", "created_at": utcnow()})
                if actor is not None:
                    target = row["username"] if where else f"client {name}"
                    self.audit.insert(conn, actor, "user.unlock", target)

    def sign_in_log(self, username: str | None = None, limit: int = 50) -> list[SignInAttempt]:
        s = self.t["sign_in_log"]
        q = (
            select(s.c.username, s.c.client, s.c.outcome, s.c.created_at)
            .order_by(s.c.seq.desc())
            .limit(limit)
        )
        if username is not None:
            q = q.where(s.c.username == username)
        return [SignInAttempt(*r) for r in self.fetch_tuples(q)]

    def user_by_email(self, email: str) -> Account | None:
        row = self.row("users", email=email)
        return None if row is None else _account(row)

    def users(self, role: str | None = None) -> list[Account]:
        u = self.t["users"]
        cols = ("username", "role", "email", "active", "created_at", "password_temporary", "password_set_at")
        q = select(*(u.c[c] for c in cols))
        q = q.order_by(u.c.username)
        if role:
            q = q.where(u.c.role == role)
        return [_account(r) for r in self.fetch(q)]

    def set_user_active(self, username: str, active: bool, actor: str | None = None) -> None:
        """Enable or disable an account. Refused (:class:`StoreError`, nothing changed) for an unknown
        name and for disabling the last active maintainer (nobody could enable anyone again)."""
        self._change(username, {"active": active}, actor, "user.enable" if active else "user.disable")

    def set_role(self, username: str, role: str, actor: str | None = None) -> None:
        """Make an account an annotator or a maintainer. Refused (:class:`StoreError`, nothing changed)
        for an unknown name or role, an LLM judge's account, and for demoting the last active maintainer."""
        if role not in ROLES:
            raise StoreError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        found = self.user(username)
        if found is not None and found.username.startswith(JUDGE_PREFIX):
            raise StoreError(f"{found.username!r} is an LLM judge's account: its role is fixed")
        self._change(username, {"role": role}, actor, "user.role", {"role": role})

    def _change(
        self, username: str, values: dict, actor: str | None, action: str, detail: dict | None = None
    ) -> None:
        """Update one account and check, in the same transaction, that an active maintainer remains
        when this one was the last (counted after the update, under the maintainers' lock)."""
        u = self.t["users"]
        found = self.user(username)
        username = found.username if found else username
        with self.write() as conn:
            # One role or active change at a time (PostgreSQL: an advisory lock; SQLite writes are
            # serial anyway), so two maintainers demoting each other at once cannot both succeed.
            self.lock(conn, "accounts:maintainers")
            # what the account is now, read under the lock: a role changed since ``found`` counts
            before = conn.execute(select(u.c.role, u.c.active).where(u.c.username == username)).first()
            if (
                before is None
                or not conn.execute(update(u).where(u.c.username == username).values(**values)).rowcount
            ):
                raise StoreError(f"no user {username!r}")
            was_maintainer = before.role == "maintainer" and bool(before.active)
            left = conn.execute(
                select(func.count()).select_from(u).where(u.c.role == "maintainer", u.c.active.is_(True))
            ).scalar()
            if was_maintainer and not left:
                raise LastMaintainer(
                    f"{username} is the last active maintainer: make another maintainer (or enable one) first"
                )
            if actor is not None:
                self.audit.insert(conn, actor, action, username, detail)

    # -- the door, per account ----------------------------------------------------------------------
    def door(self) -> dict[str, DoorState]:
        """Per user name that ever tried to sign in: the last successful sign-in and the failed attempts
        since then (or since the last unlock), with the last failure's time. Read in one pass over the
        newest log rows."""
        s = self.t["sign_in_log"]
        out: dict[str, DoorState] = {}
        closed: set[str] = set()
        q = (
            select(s.c.username, s.c.outcome, s.c.created_at)
            .where(s.c.username != "")
            .order_by(s.c.seq.desc())
        )
        with self.read() as conn:
            for name, outcome, at in conn.execute(q.limit(20_000)):
                state = out.setdefault(name, DoorState())
                if outcome == "ok" and state.last_ok is None:
                    state.last_ok = at
                if name in closed:
                    continue
                if outcome in ("ok", "unlock"):
                    closed.add(name)
                elif outcome == "fail":
                    state.failures += 1
                    state.last_failure = state.last_failure or at
        return out
