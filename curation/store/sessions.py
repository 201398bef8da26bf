"""Sessions area of the project store (``store.sessions``): the annotation app's sign-in sessions and
the project's session secret.

A session is a row (whose, from which client, until when, revoked when); the token a browser keeps
names the row and carries an HMAC made with the secret (:mod:`prefkit.curation.annotation.sessions`
makes and checks tokens; nothing here decides what a token looks like). The secret is made once per
project, on first use, and kept in ``meta``; it never leaves the store.

:func:`holds` is the condition "this session is still open" as SQL, so a write (a submit) or a read
(the Annotate page's one statement) checks it in its own statement: no round trip of its own.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from prefkit.curation.store.engine import StoreArea, from_row
from prefkit.schemas.common import utcnow
from sqlalchemy import ColumnElement, Connection, Table, exists, select, update

_SECRET_KEY = "app_session_secret"


def holds(tables: dict[str, Table], session_id: str, username: str, now: str) -> ColumnElement[bool]:
    """SQL: the session ``session_id`` is ``username``'s and still open at ``now`` (not revoked, not
    expired). One primary-key probe; the account's own flag is the caller's to add."""
    s = tables["app_sessions"]
    return exists().where(
        s.c.session_id == session_id, s.c.username == username, s.c.revoked_at.is_(None), s.c.expires_at > now
    )


def revoke_all(conn: Connection, tables: dict[str, Table], username: str) -> int:
    """End every open session of ``username`` in the caller's transaction; how many."""
    s = tables["app_sessions"]
    return conn.execute(
        update(s).where(s.c.username == username, s.c.revoked_at.is_(None)).values(revoked_at=utcnow())
    ).rowcount


@dataclass(frozen=True, slots=True)
class AppSession:
    """One signed-in browser: its account, its client address, when it started and ends, and when
    it was revoked (None while it holds). ``active`` is the account's flag, read with it."""

    session_id: str
    username: str
    client: str | None
    created_at: str
    expires_at: str
    revoked_at: str | None
    active: bool = False


class Sessions(StoreArea):
    """Sign-in sessions and the secret their tokens are signed with."""

    _secret: bytes | None = None

    def secret(self) -> bytes:
        """The project's session secret (32 random bytes, made on first use; concurrent first uses
        agree on one: the first insert wins, every caller reads what was stored)."""
        if self._secret is None:
            meta = self.t["meta"]
            stmt = self.insert_stmt("meta").on_conflict_do_nothing(index_elements=["key"])
            with self.write() as conn:
                conn.execute(stmt, {"key": _SECRET_KEY, "value": secrets.token_hex(32)})
                stored = conn.execute(select(meta.c.value).where(meta.c.key == _SECRET_KEY)).scalar_one()
            self._secret = bytes.fromhex(stored)
        return self._secret

    def open(self, username: str, expires_at: str, client: str | None = None) -> AppSession:
        """A new session of ``username`` until ``expires_at`` (ISO-8601 UTC)."""
        row = AppSession(secrets.token_hex(16), username, client, utcnow(), expires_at, None, True)
        with self.write() as conn:
            conn.execute(
                self.t["app_sessions"].insert(),
                {
                    "session_id": row.session_id,
                    "username": row.username,
                    "client": row.client,
                    "created_at": row.created_at,
                    "expires_at": row.expires_at,
                },
            )
        return row

    def get(self, session_id: str) -> AppSession | None:
        """The session with its account's active flag (one read), or None when there is none."""
        s, u = self.t["app_sessions"], self.t["users"]
        q = (
            select(*s.c, u.c.active)
            .select_from(s.outerjoin(u, u.c.username == s.c.username))
            .where(s.c.session_id == session_id)
        )
        row = self.read_retrying(lambda conn: conn.execute(q).mappings().first())
        if row is None:
            return None
        return from_row(AppSession, row, active=bool(row["active"]))

    def revoke(self, session_id: str) -> bool:
        """End one session now (sign-out). True when it was open."""
        s = self.t["app_sessions"]
        with self.write() as conn:
            done = conn.execute(
                update(s)
                .where(s.c.session_id == session_id, s.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            ).rowcount
        return bool(done)

    def revoke_user(self, username: str) -> int:
        """End every open session of ``username`` now (``prefkit users disable``); how many."""
        with self.write() as conn:
            return revoke_all(conn, self.t, username)

    def of_user(self, username: str) -> list[AppSession]:
        """Every session of ``username``, newest first."""
        s = self.t["app_sessions"]
        q = select(s).where(s.c.username == username).order_by(s.c.created_at.desc())
        return [from_row(AppSession, r) for r in self.fetch(q)]
