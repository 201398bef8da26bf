"""Signed, expiring, revocable sign-in sessions of the annotation app: a reload keeps an annotator
signed in, and nobody can turn a token into someone else's.

A token is ``v1.<session id>.<user name, base64url>.<expiry, Unix seconds>.<signature>``; the
signature is HMAC-SHA256 over everything before it, with the project's session secret
(``store.sessions.secret()``: 32 random bytes made on first use, kept in the store, never sent
anywhere). :func:`resume` accepts a token only when the signature matches (constant time), it has not
expired, its session row names the same user and is not revoked, and the account is active;
:func:`holds` repeats the check on every run, and a write names the session (:func:`live_id`) so the
store checks it in the write's own transaction. The app keeps the token in a cookie named per project
(:func:`cookie_name`), never in the URL (docs/annotation.md, *At the door*).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prefkit.curation.store import Account, ProjectStore

VERSION = "v1"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(store: ProjectStore, payload: str) -> str:
    return _b64(hmac.new(store.sessions.secret(), payload.encode("utf-8"), hashlib.sha256).digest())


def cookie_name(store: ProjectStore) -> str:
    """The cookie that holds this project's token: named after the project's secret (not the secret
    itself), so two projects served from one host never overwrite each other's sign-in."""
    tag = hashlib.sha256(b"prefkit cookie name\0" + store.sessions.secret()).hexdigest()[:12]
    return f"prefkit_session_{tag}"


def issue(store: ProjectStore, username: str, hours: float, client: str | None = None) -> str:
    """A new session of ``username`` for ``hours`` and its signed token (after a successful sign-in)."""
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=hours)
    session = store.sessions.open(username, expires.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), client)
    name = _b64(username.encode("utf-8"))
    payload = f"{VERSION}.{session.session_id}.{name}.{int(expires.timestamp())}"
    return f"{payload}.{_sign(store, payload)}"


def _read(store: ProjectStore, token: str) -> tuple[str, str, int] | None:
    """``(session id, user name, expiry)`` of a token whose signature is right, else None."""
    parts = token.split(".") if isinstance(token, str) and len(token) < 1024 else []
    if len(parts) != 5 or parts[0] != VERSION:
        return None
    payload, signature = ".".join(parts[:4]), parts[4]
    if not hmac.compare_digest(_sign(store, payload).encode("ascii"), signature.encode("ascii", "replace")):
        return None
    try:
        return parts[1], _unb64(parts[2]).decode("utf-8"), int(parts[3])
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None


def live_id(store: ProjectStore, token: str | None) -> str | None:
    """The session id a token names when the token holds on its face (signature right, expiry
    ahead), else None. No read: the store checks the session row itself where the id is used."""
    read = _read(store, token) if token else None
    if read is None or read[2] <= datetime.now(UTC).timestamp():
        return None
    return read[0]


def _holder(store: ProjectStore, token: str | None) -> str | None:
    """The user name whose open session the token names, or None (see the module docstring). One
    read: the session row with its account's active flag."""
    read = _read(store, token) if token else None
    if read is None:
        return None
    session_id, username, expiry = read
    now = datetime.now(UTC)
    if expiry <= now.timestamp():
        return None
    session = store.sessions.get(session_id)
    if (
        session is None
        or session.username != username
        or session.revoked_at is not None
        or session.expires_at <= now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        or not session.active
    ):
        return None
    return username


def resume(store: ProjectStore, token: str | None) -> Account | None:
    """The account a token signs in, or None: a wrong signature, an expired or revoked session, a
    disabled account (see the module docstring). One read of the session with its account, then
    the account."""
    username = _holder(store, token)
    return None if username is None else store.accounts.user(username)


def holds(store: ProjectStore, token: str | None, username: str) -> bool:
    """Whether ``username``'s browser session holding ``token`` may still act: the check of every
    run of the app (a sign-out in another tab, an expiry, a revocation or a disabled account ends
    it). One primary-key read."""
    return _holder(store, token) == username


def close(store: ProjectStore, token: str | None) -> bool:
    """Sign-out: revoke the token's session (a token whose signature is wrong revokes nothing)."""
    read = _read(store, token) if token else None
    return read is not None and store.sessions.revoke(read[0])


def revoke_user(store: ProjectStore, username: str) -> int:
    """End every session of ``username`` (``prefkit users disable``): their browsers are signed out
    on the next click or reload, and stay so if the account is enabled again. (``prefkit users
    password`` ends them in the transaction that sets the password: ``store.accounts.set_password``.)"""
    return store.sessions.revoke_user(username)
