"""Guidelines area of the project store (``store.guidelines``): every text a kind's guidelines had, by
version, with when it was first seen and how many label events name it. Rows are only ever added."""

from __future__ import annotations

from dataclasses import dataclass

from prefkit.curation.store.engine import StoreArea, StoreCore
from prefkit.schemas.common import utcnow
from sqlalchemy import func, select


@dataclass(frozen=True, slots=True)
class GuidelinesVersion:
    """One version of a kind's guidelines: first seen, first and last label under it, and the people's
    labels (edits included; skips, flags and LLM judges' labels not) that name it. ``version`` None:
    labels made before versions were recorded (no text, never seen)."""

    kind: str
    version: str | None
    first_seen_at: str | None
    first_used_at: str | None
    last_used_at: str | None
    labels: int


class Guidelines(StoreArea):
    """The versions of each kind's guidelines."""

    def __init__(self, core: StoreCore):
        super().__init__(core)
        self.kept: set[tuple[str, str]] = set()  # kept by this store: drawing an item writes nothing more

    def record(self, kind: str, version: str, text: str) -> None:
        """Keep ``text`` as ``version`` of ``kind``'s guidelines (nothing when it is already known)."""
        if (kind, version) not in self.kept:
            stmt = self.insert_stmt("guidelines_versions").on_conflict_do_nothing(
                index_elements=["kind", "version"]
            )
            with self.write() as conn:
                conn.execute(
                    stmt, {"kind": kind, "version": version, "text": text, "first_seen_at": utcnow()}
                )
            self.kept.add((kind, version))

    def text(self, kind: str, version: str) -> str | None:
        g = self.t["guidelines_versions"]
        q = select(g.c.text).where(g.c.kind == kind, g.c.version == version)
        return self.scalar(q)

    def versions(self, kind: str | None = None) -> list[GuidelinesVersion]:
        """Every (kind, version), oldest first, with its use by label events; labels without a
        version come first, as version None."""
        g, e = self.t["guidelines_versions"], self.t["label_events"]
        used = select(
            e.c.kind, e.c.guidelines_version, func.min(e.c.created_at), func.max(e.c.created_at), func.count()
        ).where(e.c.action == "label", e.c.source != "judge")
        seen = select(g.c.kind, g.c.version, g.c.first_seen_at)
        if kind is not None:
            used, seen = used.where(e.c.kind == kind), seen.where(g.c.kind == kind)
        with self.read() as conn:
            uses = {
                (r[0], r[1]): r[2:] for r in conn.execute(used.group_by(e.c.kind, e.c.guidelines_version))
            }
            known = conn.execute(seen).all()
        firsts = {(k, v): at for k, v, at in known}
        out = [
            GuidelinesVersion(k, v, firsts.get((k, v)), *uses.get((k, v), (None, None, 0)))
            for k, v in firsts.keys() | uses.keys()
        ]
        return sorted(
            out, key=lambda r: (r.kind, r.version is not None, r.first_seen_at or "", r.version or "")
        )
