"""AlpsBench task rows that prefkit builds (``prefkit tasks build-alpsbench``): one row per
(track, benchmark_id), holding the public layout's input and gold rows and the automatic checks."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from curation.store.engine import StoreArea
from schemas.common import utcnow
from schemas.curation import Provenance


class AlpsTasks(StoreArea):
    """Built AlpsBench task rows (``store.alps``)."""

    def add(self, rows: list[dict[str, Any]], provenance: Provenance) -> int:
        """Add built rows (``track``, ``input``, ``gold``, ``checks``); a row already built is kept."""
        t = self.t["alps_tasks"]
        with self.write() as conn:
            prov_id = self.ensure_provenance(conn, provenance)
            have = {(r[0], r[1]) for r in conn.execute(select(t.c.track, t.c.benchmark_id))}
            new = [
                {
                    "track": r["track"],
                    "benchmark_id": r["input"]["benchmark_id"],
                    "session_id": r["input"]["session_id"],
                    "input_json": self.dumps(r["input"]),
                    "gold_json": self.dumps(r["gold"]),
                    "checks_json": self.dumps(r.get("checks")),
                    "provenance_id": prov_id,
                    "created_at": utcnow(),
                }
                for r in rows
                if (r["track"], r["input"]["benchmark_id"]) not in have
            ]
            self.insert_many(conn, "alps_tasks", new)
        return len(new)

    def tasks(self, track: str | None = None) -> list[dict[str, Any]]:
        t = self.t["alps_tasks"]
        q = select(t).order_by(t.c.track, t.c.benchmark_id)
        if track:
            q = q.where(t.c.track == track)
        with self.read() as conn:
            rows = conn.execute(q).mappings().all()
        return [
            {
                "track": r["track"],
                "benchmark_id": r["benchmark_id"],
                "session_id": r["session_id"],
                "input": self.loads(r["input_json"]),
                "gold": self.loads(r["gold_json"]),
                "checks": self.loads(r["checks_json"]) or {},
                "provenance_id": r["provenance_id"],
            }
            for r in rows
        ]
