"""Evaluation area of the project store: runs (with everything needed to regenerate their report) and
their items (one prediction with its judge labels per benchmark key).

A run's id is derived from what it evaluates (release data digest, config, task, models, prompts,
settings), so rerunning the same command resumes the same run instead of starting another. Items are
replaced as a whole when a run is scored again. This area never calls a model.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from curation.store.engine import StoreArea, StoreError
from schemas.common import utcnow

RUN_COLUMNS = (
    "run_id",
    "benchmark",
    "task",
    "model",
    "judge_model",
    "backend",
    "offline",
    "release_dir",
    "release_name",
    "release_version",
    "release_digest",
    "config_name",
)


class Evaluations(StoreArea):
    """Evaluation runs and items (``store.eval``)."""

    def run_start(self, run: dict[str, Any]) -> bool:
        """Record a run (``running``) unless it exists; True when it is new."""
        r = self.t["eval_runs"]
        now = utcnow()
        with self.write() as conn:
            if conn.execute(select(r.c.run_id).where(r.c.run_id == run["run_id"])).first() is not None:
                return False
            conn.execute(
                r.insert(),
                {
                    **{c: run.get(c) for c in RUN_COLUMNS},
                    "settings_json": self.dumps(run["settings"]),
                    "prompts_json": self.dumps(run["prompts"]),
                    "status": "running",
                    "summary_json": None,
                    "created_at": now,
                    "updated_at": now,
                },
            )
        return True

    def run_finish(
        self, run_id: str, items: list[tuple[str, str, dict[str, Any]]], summary: dict[str, Any]
    ) -> None:
        """Replace the run's items (``(item_key, group, record)``) and store its summary, in one transaction."""
        r, i = self.t["eval_runs"], self.t["eval_items"]
        with self.write() as conn:
            conn.execute(i.delete().where(i.c.run_id == run_id))
            self.insert_many(
                conn,
                "eval_items",
                [
                    {"run_id": run_id, "item_key": k, "grp": g, "record_json": self.dumps(rec)}
                    for k, g, rec in items
                ],
            )
            conn.execute(
                r.update()
                .where(r.c.run_id == run_id)
                .values(status="complete", summary_json=self.dumps(summary), updated_at=utcnow())
            )

    def _run_from_row(self, row) -> dict[str, Any]:
        out = {c: row[c] for c in RUN_COLUMNS}
        out["offline"] = bool(out["offline"])
        out.update(
            settings=self.loads(row["settings_json"]),
            prompts=self.loads(row["prompts_json"]),
            status=row["status"],
            summary=self.loads(row["summary_json"]),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )
        return out

    def runs(self) -> list[dict[str, Any]]:
        r = self.t["eval_runs"]
        with self.read() as conn:
            rows = conn.execute(select(r).order_by(r.c.created_at, r.c.run_id)).mappings().all()
        return [self._run_from_row(row) for row in rows]

    def run(self, run_id: str) -> dict[str, Any]:
        """The run with this id, or the only run whose id starts with it."""
        r = self.t["eval_runs"]
        with self.read() as conn:
            rows = conn.execute(select(r).where(r.c.run_id.like(f"{run_id}%"))).mappings().all()
        exact = [row for row in rows if row["run_id"] == run_id]
        if exact:
            return self._run_from_row(exact[0])
        if not rows:
            raise StoreError(f"no evaluation run {run_id!r} in this project; see `prefkit eval list`")
        if len(rows) > 1:
            ids = ", ".join(sorted(row["run_id"] for row in rows)[:5])
            raise StoreError(f"evaluation run {run_id!r} is ambiguous: {ids}")
        return self._run_from_row(rows[0])

    def items(self, run_id: str) -> list[dict[str, Any]]:
        """``[{item_key, group, record}]`` of a run, by key."""
        i = self.t["eval_items"]
        with self.read() as conn:
            rows = conn.execute(
                select(i.c.item_key, i.c.grp, i.c.record_json)
                .where(i.c.run_id == run_id)
                .order_by(i.c.item_key)
            ).all()
        return [{"item_key": k, "group": g, "record": self.loads(rec)} for k, g, rec in rows]
