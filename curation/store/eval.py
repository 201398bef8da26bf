"""Evaluation area of the project store: runs (with everything needed to regenerate their report) and
their items (one prediction with its judge labels per benchmark key).

A run's id is derived from what it evaluates (release data digest, config, task, models, prompts,
settings), so rerunning the same command resumes the same run instead of starting another. Items are
replaced as a whole when a run is scored again. This area never calls a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prefkit.curation.store.engine import StoreArea, StoreError, from_row
from prefkit.schemas.common import utcnow
from sqlalchemy import select

RUN_COLUMNS = tuple(
    """run_id benchmark task model judge_model backend offline release_dir release_name
    release_version release_digest config_name""".split()
)


@dataclass(frozen=True, slots=True)
class EvalRun:
    """An evaluation run: what it evaluated (release, config, task, models, prompts, settings), its
    state (``running`` until scored, then ``complete``) and its summary."""

    run_id: str
    benchmark: str
    task: str
    model: str | None
    judge_model: str | None
    backend: str
    offline: bool
    release_dir: str
    release_name: str | None
    release_version: str | None
    release_digest: str
    config_name: str
    settings: dict[str, Any]
    prompts: dict[str, Any]
    status: str = "running"
    summary: dict[str, Any] | None = None
    created_at: str = ""
    updated_at: str = ""


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One scored item of a run: its key, group (instance type, track, ...) and record."""

    item_key: str
    group: str
    record: dict[str, Any]


class Eval(StoreArea):
    """Evaluation runs and items (``store.eval``)."""

    def run_start(self, run: EvalRun) -> bool:
        """Record a run (``running``) unless it exists; True when it is new."""
        r = self.t["eval_runs"]
        now = utcnow()
        with self.write() as conn:
            known = conn.execute(select(r.c.status).where(r.c.run_id == run.run_id)).first()
            if known is not None:
                if known[0] == "failed":  # tried again: running until it finishes or fails anew
                    conn.execute(
                        r.update()
                        .where(r.c.run_id == run.run_id)
                        .values(status="running", summary_json=None, updated_at=now)
                    )
                return False
            conn.execute(
                r.insert(),
                {
                    **{c: getattr(run, c) for c in RUN_COLUMNS},
                    "settings_json": self.dumps(run.settings),
                    "prompts_json": self.dumps(run.prompts),
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

    def run_failed(self, run_id: str, reason: str) -> None:
        """Mark a run ``failed`` with the one-line reason it stopped (its report says so)."""
        r = self.t["eval_runs"]
        with self.write() as conn:
            conn.execute(
                r.update()
                .where(r.c.run_id == run_id)
                .values(status="failed", summary_json=self.dumps({"error": reason}), updated_at=utcnow())
            )

    def _run_from_row(self, row) -> EvalRun:
        return from_row(EvalRun, row, offline=bool(row["offline"]))

    def runs(self) -> list[EvalRun]:
        r = self.t["eval_runs"]
        rows = self.fetch(select(r).order_by(r.c.created_at, r.c.run_id))
        return [self._run_from_row(row) for row in rows]

    def run(self, run_id: str) -> EvalRun:
        """The run with this id, or the only run whose id starts with it."""
        r = self.t["eval_runs"]
        rows = self.fetch(select(r).where(r.c.run_id.like(f"{run_id}%")))
        exact = [row for row in rows if row["run_id"] == run_id]
        if exact:
            return self._run_from_row(exact[0])
        if not rows:
            raise StoreError(f"no evaluation run {run_id!r} in this project; see `prefkit eval list`")
        if len(rows) > 1:
            ids = ", ".join(sorted(row["run_id"] for row in rows)[:5])
            raise StoreError(f"evaluation run {run_id!r} is ambiguous: {ids}")
        return self._run_from_row(rows[0])

    def items(self, run_id: str) -> list[EvalItem]:
        """The items of a run, by key."""
        i = self.t["eval_items"]
        rows = self.fetch_tuples(
            select(i.c.item_key, i.c.grp, i.c.record_json).where(i.c.run_id == run_id).order_by(i.c.item_key)
        )
        return [EvalItem(k, g, self.loads(rec)) for k, g, rec in rows]
