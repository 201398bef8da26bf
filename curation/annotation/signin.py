"""At the door of the annotation app: user-name normalization and sign-in throttling.

User names are compared in one form: Unicode NFKC, case-folded, stripped, at most ``MAX_NAME`` chars.
A new name is refused when its look-alike skeleton (Unicode confusables: Cyrillic ``а`` for Latin
``a``, fullwidth letters, ...) equals an existing account's, so nobody can sign up as a look-alike
of someone else.

Throttling counts failed sign-ins since the last success (or a maintainer's unlock), per user name
and per client (the browser's address). After ``free_failures`` failures each further attempt must
wait ``backoff_s * 2**k`` seconds (capped) and is refused unchecked before then (no argon2 work);
after ``lockout_after`` failures the name (or client) is locked for ``lockout_minutes`` even for the
right password. Every attempt is a row in ``sign_in_log`` and a line on the ``prefkit.signin``
logger; ``prefkit users unlock NAME`` ends a lockout. This module decides; the store does the SQL.
"""

from __future__ import annotations

import logging
import unicodedata

from prefkit.schemas.common import PrefkitError, parse_utc
from prefkit.schemas.config import SignInSection

MAX_NAME = 64
log = logging.getLogger("prefkit.signin")


class UserNameError(PrefkitError):
    """A user name that cannot be an account (empty, too long, bad characters, a look-alike)."""


def normalize_username(name: str) -> str:
    """The one form user names are stored and compared in (NFKC, case-folded, stripped)."""
    return unicodedata.normalize("NFKC", name).strip().casefold()


def skeleton(name: str) -> str:
    """What ``name`` looks like: confusable characters mapped to their Latin look-alikes."""
    from confusables import normalize

    folded = normalize_username(name)
    forms = normalize(folded, prioritize_alpha=True)
    return forms[0] if forms else folded


def check_new_username(name: str, existing: list[str]) -> str:
    """The normalized name for a new account, or :class:`UserNameError` saying why it cannot be one."""
    clean = normalize_username(name)
    if not clean:
        raise UserNameError("a user name cannot be empty")
    if len(clean) > MAX_NAME:
        raise UserNameError(f"a user name has at most {MAX_NAME} characters (this one has {len(clean)})")
    if not all(ch.isalnum() or ch in "._-" for ch in clean):
        raise UserNameError(f"invalid user name {name!r}: use letters, digits, '.', '_' or '-'")
    mine = skeleton(clean)
    for other in existing:
        if normalize_username(other) == clean:
            raise UserNameError(f"user {other!r} already exists (names ignore case and width)")
        if skeleton(other) == mine:
            raise UserNameError(f"user name {name!r} looks like the existing {other!r}; choose another")
    return clean


def wait_s(policy: SignInSection, failures: int, last_failure: str | None, now: str, scale: int = 1) -> float:
    """Seconds before the next attempt may be checked (0 when it may be checked now), under the
    project's ``[annotation.sign_in]`` settings (their defaults live in :class:`SignInSection`)."""
    if failures < policy.free_failures * scale or last_failure is None:
        return 0.0
    since = _seconds(last_failure, now)
    if failures >= policy.lockout_after * scale:
        return max(0.0, policy.lockout_minutes * 60 - since)
    step = failures - policy.free_failures * scale
    return max(0.0, min(policy.backoff_s * 2**step, policy.max_backoff_s) - since)


def _seconds(earlier: str, later: str) -> float:
    return (parse_utc(later) - parse_utc(earlier)).total_seconds()
