"""Suggestion area of the project store (``store.suggestions``): ``prefkit suggest`` runs and the
suggestions they made, one per (run, task).

A suggestion is label-shaped (the kind's values) but it is never a label: it lives in its own tables,
and consensus, agreement, gold accuracy and the release's label configs read only ``label_events``.
What an annotator was shown is recorded on the label event itself (``assist_arm``,
``suggestion_id``). A run's id is derived from what made it (kind, model, backend, prompt hash,
seed), so running the same command again resumes the run: tasks that already have its suggestion
are left alone. This area never calls a model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from prefkit.curation.store.engine import StoreArea, from_row, to_row
from prefkit.schemas.common import content_hash, utcnow
from sqlalchemy import func, select


@dataclass(frozen=True, slots=True)
class SuggestionRun:
    """One ``prefkit suggest`` run: the kind, the model and prompt that made its suggestions."""

    run_id: str
    kind: str
    model: str
    backend: str
    offline: bool
    prompt_hash: str
    seed: int
    settings: dict[str, Any]
    created_at: str = ""

    @staticmethod
    def make_id(kind: str, model: str, backend: str, prompt_hash: str, seed: int, settings: dict) -> str:
        return f"sugg-{kind}-" + content_hash([kind, model, backend, prompt_hash, seed, settings], 12)


@dataclass(frozen=True, slots=True)
class Suggestion:
    """What a run suggests for one task: label-shaped ``values`` (valid for the task's kind) and the
    ``detail`` behind them (evidence turns, quotes found, checks that failed, the judge's reasons)."""

    suggestion_id: str
    run_id: str
    task_id: str
    kind: str
    values: dict[str, Any]
    detail: dict[str, Any]
    model: str = ""
    prompt_hash: str = ""
    offline: bool = False
    created_at: str = ""

    @staticmethod
    def make_id(run_id: str, task_id: str) -> str:
        return "sg_" + content_hash([run_id, task_id], 24)


class Suggestions(StoreArea):
    """Suggestion runs and suggestions (``store.suggestions``)."""

    def add(self, run: SuggestionRun, suggestions: Iterable[Suggestion]) -> int:
        """Record ``run`` (once) and its suggestions; a (run, task) already stored is kept as it is.
        Returns how many suggestions were new."""
        r, s = self.t["suggestion_runs"], self.t["suggestions"]
        rows = list(suggestions)
        now = utcnow()
        with self.write() as conn:
            if conn.execute(select(r.c.run_id).where(r.c.run_id == run.run_id)).first() is None:
                conn.execute(r.insert(), to_row(run, ("settings",), created_at=run.created_at or now))
            have = {x[0] for x in conn.execute(select(s.c.task_id).where(s.c.run_id == run.run_id))}
            new = [g for g in rows if g.task_id not in have]
            of_run = ("model", "prompt_hash", "offline")  # the run's row says them
            made = [
                to_row(g, ("values", "detail"), of_run, run_id=run.run_id, created_at=g.created_at or now)
                for g in new
            ]
            self.insert_many(conn, "suggestions", made)
        return len(new)

    def done_tasks(self, run_id: str) -> set[str]:
        """Tasks that already have this run's suggestion (a rerun skips them)."""
        s = self.t["suggestions"]
        return {x[0] for x in self.fetch_tuples(select(s.c.task_id).where(s.c.run_id == run_id))}

    def _query(self):
        s, r = self.t["suggestions"], self.t["suggestion_runs"]
        return select(s, r.c.model, r.c.prompt_hash, r.c.offline).join(r, r.c.run_id == s.c.run_id)

    def _from_row(self, row) -> Suggestion:
        return from_row(Suggestion, row, offline=bool(row["offline"]))

    def for_task(self, task_id: str) -> Suggestion | None:
        """The newest suggestion for ``task_id`` (the latest run that made one), or None."""
        s = self.t["suggestions"]
        q = self._query().where(s.c.task_id == task_id).order_by(s.c.seq.desc()).limit(1)
        with self.read() as conn:
            row = conn.execute(q).mappings().first()
        return None if row is None else self._from_row(row)

    def latest(self, kind: str | None = None) -> dict[str, Suggestion]:
        """``{task_id: newest suggestion}`` for every task with one."""
        s = self.t["suggestions"]
        q = self._query().order_by(s.c.seq)
        if kind:
            q = q.where(s.c.kind == kind)
        return {row["task_id"]: self._from_row(row) for row in self.fetch(q)}

    def by_ids(self, ids: Iterable[str]) -> dict[str, Suggestion]:
        """The suggestions with these ids (those a label event names)."""
        s = self.t["suggestions"]
        wanted = sorted(set(ids))
        out: dict[str, Suggestion] = {}
        with self.read() as conn:
            for start in range(0, len(wanted), 500):
                q = self._query().where(s.c.suggestion_id.in_(wanted[start : start + 500]))
                out.update({row["suggestion_id"]: self._from_row(row) for row in conn.execute(q).mappings()})
        return out

    def runs(self, kind: str | None = None) -> list[tuple[SuggestionRun, int]]:
        """Every run (oldest first) with how many suggestions it holds."""
        r, s = self.t["suggestion_runs"], self.t["suggestions"]
        n = select(s.c.run_id, func.count().label("n")).group_by(s.c.run_id).subquery()
        q = select(r, n.c.n).outerjoin(n, n.c.run_id == r.c.run_id).order_by(r.c.created_at, r.c.run_id)
        if kind:
            q = q.where(r.c.kind == kind)
        return [
            (from_row(SuggestionRun, row, offline=bool(row["offline"])), int(row["n"] or 0))
            for row in self.fetch(q)
        ]
