"""People: the accounts that sign in to the annotation app, as a maintainer manages them. The one
implementation behind ``prefkit users ...`` and the app's People page: both call these functions,
so both refuse the same things in the same words.

Every change is an audited event (``store.audit``: who, when, what; ``prefkit audit list``), written
in the change's own transaction. The ``actor`` is the maintainer signed in to the app, or
``shell:<login>`` for a command. A maintainer cannot lock the project out: the last active
maintainer cannot be disabled or demoted (the store checks it inside the write). A role change or
a disable ends every open session of the account, so it takes effect at the person's next click.

Never here: a password kept or logged in clear. A generated password is returned once to the caller
that shows it, and only its argon2 hash is stored.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from prefkit.curation.annotation import sessions
from prefkit.curation.annotation.signin import wait_s
from prefkit.curation.store import ROLES, StoreError
from prefkit.schemas.common import UTC_FORMAT, parse_utc, utcnow

if TYPE_CHECKING:
    from prefkit.curation.project import Project
    from prefkit.curation.store import Account

#: Characters of a generated password: no look-alikes (0/O, 1/l/I), so it can be read out or typed.
_ALPHABET = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@dataclass(frozen=True, slots=True)
class Person:
    """One account as the People page and ``prefkit users list --door`` show it."""

    username: str
    role: str
    state: str  # active, disabled, locked (N min), backing off (N s); "(one-time password)" until replaced
    email: str | None
    last_sign_in: str | None
    failures: int  # failed sign-ins since the last success or unlock
    created_at: str


def generated_password() -> str:
    """A password for a new account (16 characters, ~93 bits), shown once to whoever added it."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(16))


def people(project: Project) -> list[Person]:
    """Every account with its role, state, last sign-in and recent failures (the lock state is the
    one the sign-in page would enforce right now under ``[annotation.sign_in]``)."""
    store, policy, now = project.store, project.config.annotation.sign_in, utcnow()
    door = store.accounts.door()
    out = []
    for account in store.accounts.users():
        d = door.get(account.username)
        failures, last_failure = (d.failures, d.last_failure) if d else (0, None)
        state = "active" if account.active else "disabled"
        if account.temporary:
            state += (
                " (one-time password, expired)"
                if one_time_expired(project, account)
                else " (one-time password)"
            )
        wait = wait_s(policy, failures, last_failure, now)
        if account.active and wait > 0:
            locked = failures >= policy.lockout_after
            state = f"locked ({wait / 60:.0f} min left)" if locked else f"backing off ({wait:.0f} s)"
        out.append(
            Person(
                account.username,
                account.role,
                state,
                account.email,
                d.last_ok if d else None,
                failures,
                account.created_at,
            )
        )
    return out


def add(
    project: Project, actor: str, name: str, role: str, email: str | None = None, password: str | None = None
) -> str | None:
    """Add an account. Without ``password`` a one-time password is generated and returned (the only
    time it exists in clear: show it once): it opens no session, only the page where the person chooses
    their own (:func:`choose_password`). With one, None. Refused: a taken or look-alike name, a reserved
    one, a role other than annotator or maintainer, a password under 8 characters, a taken e-mail."""
    made = generated_password() if password is None else None
    project.store.accounts.add_user(
        name, role, password or made or "", email=email or None, actor=actor, temporary=made is not None
    )
    return made


def choose_password(project: Project, name: str, given: str, password: str) -> Account:
    """The person's own password in place of the one-time password they were given (at their first
    sign-in); their account, now able to open a session. Refused once the one-time password expired."""
    oldest = (datetime.now(UTC) - _works_for(project)).strftime(UTC_FORMAT)
    return project.store.accounts.replace_temporary(name, given, password, issued_after=oldest)


def _works_for(project: Project) -> timedelta:
    return timedelta(hours=project.config.annotation.sign_in.one_time_password_hours)


def one_time_expired(project: Project, account: Account) -> bool:
    """Whether ``account``'s one-time password is past ``[annotation.sign_in] one_time_password_hours``."""
    return account.temporary and parse_utc(account.password_issued) + _works_for(project) < datetime.now(UTC)


def one_time_until(project: Project, name: str) -> str:
    """Until when ``name``'s one-time password works, as ``YYYY-MM-DD HH:MM UTC`` (where it is made)."""
    account = project.store.accounts.user(name)
    issued = parse_utc(account.password_issued) if account else datetime.now(UTC)
    return f"{issued + _works_for(project):%Y-%m-%d %H:%M} UTC"


def reset_password(project: Project, actor: str, name: str) -> tuple[str, int]:
    """A new one-time password for ``name`` (returned once, stored hashed) and every open session of
    the account ended, in one transaction; the password and how many sessions ended."""
    made = generated_password()
    return made, project.store.accounts.set_password(name, made, actor=actor, temporary=True)


def disable(project: Project, actor: str, name: str) -> int:
    """Disable an account (refused for the last active maintainer) and end its open sessions; its
    labels stay. Returns how many sessions ended."""
    project.store.accounts.set_user_active(name, False, actor=actor)
    return sessions.revoke_user(project.store, _name(project, name))


def enable(project: Project, actor: str, name: str) -> None:
    """Enable a disabled account again (it signs in anew: its old sessions stay ended)."""
    project.store.accounts.set_user_active(name, True, actor=actor)


def unlock(project: Project, actor: str, name: str | None = None, client: str | None = None) -> None:
    """End a sign-in lockout or backoff of a user name, a client address, or both."""
    if not (name or "").strip() and not (client or "").strip():
        raise StoreError("give a user name or a client address to unlock")
    if name and project.store.accounts.user(name) is None:
        raise StoreError(f"no user {name!r}")
    project.store.accounts.unlock_sign_in(username=name or None, client=client or None, actor=actor)


def set_password(project: Project, actor: str, name: str, password: str) -> int:
    """Give an account a new password and end every open session of it, in one transaction. Returns
    how many sessions ended."""
    return project.store.accounts.set_password(name, password, actor=actor)


def set_role(project: Project, actor: str, name: str, role: str) -> int:
    """Make an account an annotator or a maintainer (refused for demoting the last active maintainer)
    and end its open sessions, so the new role holds from the person's next click. Returns how many
    sessions ended."""
    if role not in ROLES:
        raise StoreError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    found = project.store.accounts.user(name)
    if found is not None and found.role == role:
        raise StoreError(f"{found.username} is already a {role}")
    project.store.accounts.set_role(name, role, actor=actor)
    return sessions.revoke_user(project.store, _name(project, name))


def _name(project: Project, name: str) -> str:
    account = project.store.accounts.user(name)
    return account.username if account else name
