"""AlpsBench task rows that prefkit builds (``prefkit tasks build-alpsbench``): one row per
(track, benchmark_id), holding the public layout's input and gold rows and the automatic checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prefkit.curation.store.engine import StoreArea, from_row
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import Provenance
from sqlalchemy import select


@dataclass(frozen=True, slots=True)
class AlpsTask:
    """One built AlpsBench row: its track, the public layout's input and gold rows, the automatic
    checks it passed, and (once stored) the provenance of the call that made it."""

    track: str
    benchmark_id: str
    session_id: str
    input: dict[str, Any]
    gold: dict[str, Any]
    checks: dict[str, Any]
    provenance_id: str | None = None

    @classmethod
    def built(
        cls, track: str, input: dict[str, Any], gold: dict[str, Any], checks: dict[str, Any]
    ) -> AlpsTask:
        """A new row; its ids come from the input row."""
        return cls(track, input["benchmark_id"], input["session_id"], input, gold, checks)


class AlpsTasks(StoreArea):
    """Built AlpsBench task rows (``store.alps_tasks``)."""

    def add(self, rows: list[AlpsTask], provenance: Provenance) -> int:
        """Add built rows made by ``provenance``; a row already built (track, benchmark id) is kept."""
        t = self.t["alps_tasks"]
        with self.write() as conn:
            prov_id = self.ensure_provenance(conn, provenance)
            have = {(r[0], r[1]) for r in conn.execute(select(t.c.track, t.c.benchmark_id))}
            new = [
                {
                    "track": r.track,
                    "benchmark_id": r.benchmark_id,
                    "session_id": r.session_id,
                    "input_json": self.dumps(r.input),
                    "gold_json": self.dumps(r.gold),
                    "checks_json": self.dumps(r.checks),
                    "provenance_id": prov_id,
                    "created_at": utcnow(),
                }
                for r in rows
                if (r.track, r.benchmark_id) not in have
            ]
            self.insert_many(conn, "alps_tasks", new)
        return len(new)

    def tasks(self, track: str | None = None) -> list[AlpsTask]:
        rows = self.rows("alps_tasks", ("track", "benchmark_id"), track=track)
        return [from_row(AlpsTask, r, checks=self.loads(r["checks_json"]) or {}) for r in rows]
