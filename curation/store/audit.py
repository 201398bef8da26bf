"""Audit area of the project store (``store.audit``): the maintainers' actions on people, work and
releases, who took each and when (``prefkit audit list``). Rows are only ever added; a detail never
holds a secret (a password, a one-time password, a session token).

An action and its audit row are written in one transaction wherever the store does the action
(:meth:`Audit.insert` joins the caller's); the service modules of
:mod:`prefkit.curation.annotation` (``people``, ``work``) and :mod:`prefkit.exports.release` pass the
actor down.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prefkit.curation.store.engine import StoreArea, from_row
from prefkit.schemas.common import utcnow
from sqlalchemy import Connection, select


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One audited action: who (``actor``), when, what (``action``), on what (``target``), details."""

    seq: int
    created_at: str
    actor: str
    action: str
    target: str
    detail: dict[str, Any]


class Audit(StoreArea):
    """The audit log (``store.audit``)."""

    def insert(
        self, conn: Connection, actor: str, action: str, target: str, detail: dict[str, Any] | None = None
    ) -> None:
        """Add a row inside the caller's transaction (the action and its row commit together)."""
        row = {"created_at": utcnow(), "actor": actor, "action": action, "target": target}
        conn.execute(self.t["audit_log"].insert(), {**row, "detail_json": self.dumps(detail or {})})

    def record(self, actor: str, action: str, target: str, detail: dict[str, Any] | None = None) -> None:
        """Add a row in a transaction of its own (an action the store did not do itself, a release cut)."""
        with self.write() as conn:
            self.insert(conn, actor, action, target, detail)

    def events(
        self, actor: str | None = None, action: str | None = None, limit: int = 50
    ) -> list[AuditEvent]:
        """The newest ``limit`` rows, newest first; ``action`` may name a family (``user`` for
        ``user.add``, ``user.disable``, ...)."""
        a = self.t["audit_log"]
        q = select(a).order_by(a.c.seq.desc()).limit(limit)
        if actor is not None:
            q = q.where(a.c.actor == actor)
        if action is not None:
            q = q.where((a.c.action == action) | a.c.action.startswith(action + "."))
        rows = self.fetch(q)
        return [from_row(AuditEvent, r, detail=self.loads(r["detail_json"]) or {}) for r in rows]
