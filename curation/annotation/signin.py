"""At the door of the annotation app: sign-in throttling. (User names are compared in the one form
:mod:`prefkit.curation.store.usernames` defines, where the accounts are kept.)

Failed sign-ins are counted since the last success (or a maintainer's unlock), per user name and per
client; past ``free_failures`` an attempt must wait out a doubling backoff and is refused unchecked
before then, and past ``lockout_after`` the name is locked (docs/annotation.md, *At the door*). The
client is the connection's address, or the one a proxy listed in ``trusted_proxies`` forwarded for
(:func:`client_address`), so a browser cannot pick its own. This module decides; the store does the SQL.
"""

from __future__ import annotations

import ipaddress
import logging

from prefkit.schemas.common import parse_utc
from prefkit.schemas.config import SignInSection

log = logging.getLogger("prefkit.signin")


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


def _trusted(address: str, proxies: list[str]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in ipaddress.ip_network(p, strict=False) for p in proxies)


def client_address(peer: str | None, forwarded_for: str | None, proxies: list[str]) -> str:
    """The address sign-in throttling counts: ``peer`` (the connection's address) unless it is a
    trusted proxy; then the right-most ``X-Forwarded-For`` entry that is not itself a trusted proxy
    (each proxy appends the address it was connected from, so entries left of the first untrusted one
    could have been written by the browser). ``"unknown address"`` when there is none."""
    client = (peer or "").strip()
    if client and proxies and _trusted(client, proxies) and forwarded_for:
        for hop in reversed([h.strip() for h in forwarded_for.split(",") if h.strip()]):
            client = hop
            if not _trusted(hop, proxies):
                break
    return client or "unknown address"
