"""What an account's user name is: the one form names are stored and compared in, and the rule that
refuses a new name looking like an existing one.

User names are compared in one form: Unicode NFKC, case-folded, stripped, at most ``MAX_NAME`` chars.
A new name is refused when its look-alike skeleton (Unicode confusables: Cyrillic ``а`` for Latin
``a``, fullwidth letters, ...) equals an existing account's, so nobody can sign up as a look-alike
of someone else. The accounts area (:mod:`prefkit.curation.store.accounts`) applies it to every name
it stores or looks up; the app's door (:mod:`prefkit.curation.annotation.workflow`) to every name typed in.
"""

from __future__ import annotations

import unicodedata

from prefkit.schemas.common import PrefkitError

MAX_NAME = 64


class UserNameError(PrefkitError):
    """A user name that cannot be an account (empty, too long, bad characters, a look-alike)."""


def normalize_username(name: str) -> str:
    """The one form user names are stored and compared in (NFKC, case-folded, stripped)."""
    return unicodedata.normalize("NFKC", name).strip().casefold()


def skeleton(name: str) -> str:
    """What ``name`` looks like: confusable characters mapped to their Latin look-alikes."""
    # Lazy: confusables loads its tables on import (~70 ms), which every command would pay for;
    # only a new account's name needs them.
    from confusables import normalize

    folded = normalize_username(name)
    forms = normalize(folded, prioritize_alpha=True)
    return forms[0] if forms else folded


#: Names starting with this belong to LLM judges' accounts (``prefkit eval``): no person may take one.
JUDGE_PREFIX = "judge."
#: Names starting with this belong to crowd study participants (made on their arrival, no password).
CROWD_PREFIX = "crowd."


def check_new_username(name: str, existing: list[str], judge: bool = False) -> str:
    """The normalized name for a new account, or :class:`UserNameError` saying why it cannot be one.
    ``judge.*`` names are reserved for judge accounts (``judge=True``)."""
    clean = normalize_username(name)
    if not clean:
        raise UserNameError("a user name cannot be empty")
    if clean.startswith(JUDGE_PREFIX) != judge:
        raise UserNameError(
            f"user name {name!r} is reserved for LLM judge accounts (names starting with {JUDGE_PREFIX!r})"
            if not judge
            else f"a judge account's name starts with {JUDGE_PREFIX!r}, not {name!r}"
        )
    if clean.startswith(CROWD_PREFIX):
        raise UserNameError(
            f"user name {name!r} is reserved for crowd study participants (names starting with {CROWD_PREFIX!r})"
        )
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
