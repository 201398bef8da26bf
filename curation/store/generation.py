"""Generation area of the project store: personas, context factors, session plans, checklists,
simulated sessions (dialogue + turns + per-turn scores) and generated CUPID instances.

Every write is idempotent on its natural key (a persona id, a session id, ...), so a rerun of
``prefkit generate`` adds only what is missing. Migration 6 adds the two tables the core schema lacks:
``checklists`` (per persona and preference) and ``generation_drops`` (personas given up, and why).
This area must never overwrite a stored row: a rerun only adds what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prefkit.curation.store.content_records import (
    Instance,
    InstanceLink,
    instance_row,
    link_row,
    session_rows,
)
from prefkit.curation.store.engine import StoreArea
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import Provenance
from prefkit.schemas.generation import ContextFactor, Persona, Session, SessionPlan
from sqlalchemy import func, select


@dataclass(frozen=True, slots=True)
class DroppedPersona:
    """Why generation gave up on a persona: the stage and the reason."""

    stage: str
    reason: str


class Generation(StoreArea):
    """Reads and writes of the CUPID-style generation stages (``store.generation``)."""

    def _keys(self, table: str, column: str, **where: Any) -> set[str]:
        t = self.t[table]
        q = select(t.c[column])
        for col, val in where.items():
            q = q.where(t.c[col] == val)
        return {r[0] for r in self.fetch_tuples(q)}

    def _insert_once(self, table: str, key: dict[str, Any], provenance: Provenance, **row: Any) -> bool:
        """Insert the row ``key`` + ``row`` made by ``provenance``; False (nothing written) when a row
        with ``key`` is there already."""
        t = self.t[table]
        with self.write() as conn:
            if conn.execute(select(t.c.persona_id).where(*(t.c[k] == v for k, v in key.items()))).first():
                return False
            conn.execute(
                t.insert(), {**key, **row, "provenance_id": self.ensure_provenance(conn, provenance)}
            )
        return True

    # -- personas -----------------------------------------------------------------------------------
    def add_persona(self, persona: Persona, provenance: Provenance) -> bool:
        """Store ``persona``; False when its id is already in the project."""
        record = self.dumps(persona.model_dump(mode="json"))
        row = {"record_json": record, "schema_version": persona.schema_version, "created_at": utcnow()}
        return self._insert_once("personas", {"persona_id": persona.persona_id}, provenance, **row)

    def personas(self) -> list[Persona]:
        t = self.t["personas"]
        rows = self.fetch_tuples(select(t.c.record_json).order_by(t.c.persona_id))
        return [Persona.model_validate(self.loads(r[0])) for r in rows]

    def persona_offline(self, persona_id: str) -> bool:
        """Whether the persona was written by the offline backend (its provenance says so)."""
        p, v = self.t["personas"], self.t["provenance"]
        with self.read() as conn:
            row = conn.execute(
                select(v.c.offline)
                .join(p, p.c.provenance_id == v.c.provenance_id)
                .where(p.c.persona_id == persona_id)
            ).first()
        return bool(row and row[0])

    def drop_persona(self, persona_id: str, stage: str, reason: str) -> None:
        """Give up on a persona (later stages and reruns skip it); the reason is kept."""
        t = self.t["generation_drops"]
        with self.write() as conn:
            if conn.execute(select(t.c.persona_id).where(t.c.persona_id == persona_id)).first() is None:
                conn.execute(
                    t.insert(),
                    {"persona_id": persona_id, "stage": stage, "reason": reason, "created_at": utcnow()},
                )

    def dropped_personas(self) -> dict[str, DroppedPersona]:
        """``{persona_id: why}`` for every persona given up on."""
        t = self.t["generation_drops"]
        rows = self.fetch(select(t).order_by(t.c.persona_id))
        return {r["persona_id"]: DroppedPersona(r["stage"], r["reason"]) for r in rows}

    # -- context factors ----------------------------------------------------------------------------
    def add_factors(self, persona_id: str, factors: list[ContextFactor], provenance: Provenance) -> bool:
        t = self.t["context_factors"]
        with self.write() as conn:
            if conn.execute(select(t.c.factor_id).where(t.c.persona_id == persona_id)).first():
                return False
            prov_id = self.ensure_provenance(conn, provenance)
            rows = [
                {
                    "factor_id": f.factor_id,
                    "persona_id": persona_id,
                    "position": i,
                    "record_json": self.dumps(f.model_dump(mode="json")),
                    "schema_version": f.SCHEMA_VERSION,
                    "provenance_id": prov_id,
                }
                for i, f in enumerate(factors)
            ]
            self.insert_many(conn, "context_factors", rows)
        return True

    def factors(self, persona_id: str) -> list[ContextFactor]:
        t = self.t["context_factors"]
        rows = self.fetch_tuples(
            select(t.c.record_json).where(t.c.persona_id == persona_id).order_by(t.c.position)
        )
        return [ContextFactor.model_validate(self.loads(r[0])) for r in rows]

    def personas_with(self, table: str) -> set[str]:
        """Persona ids that have rows in ``table`` (context_factors, session_plans, checklists, ...)."""
        return self._keys(table, "persona_id")

    # -- plans and checklists -----------------------------------------------------------------------
    def add_plan(self, plan: SessionPlan, provenance: Provenance) -> bool:
        row = {"record_json": self.dumps(plan.model_dump(mode="json")), "schema_version": plan.schema_version}
        return self._insert_once("session_plans", {"persona_id": plan.persona_id}, provenance, **row)

    def plan(self, persona_id: str) -> SessionPlan | None:
        row = self.row("session_plans", persona_id=persona_id)
        return None if row is None else SessionPlan.model_validate(self.loads(row["record_json"]))

    def add_checklist(
        self, persona_id: str, key: str, preference: str, items: list[str], provenance: Provenance
    ) -> bool:
        row = {"preference": preference, "items_json": self.dumps(items), "schema_version": "1.0"}
        key_of = {"persona_id": persona_id, "preference_key": key}
        return self._insert_once("checklists", key_of, provenance, **row)

    def checklists(self, persona_id: str) -> dict[str, list[str]]:
        t = self.t["checklists"]
        rows = self.fetch_tuples(
            select(t.c.preference_key, t.c.items_json).where(t.c.persona_id == persona_id)
        )
        return {r[0]: self.loads(r[1]) for r in rows}

    # -- sessions -----------------------------------------------------------------------------------
    def session_ids(self, persona_id: str) -> set[str]:
        return self._keys("sessions", "session_id", persona_id=persona_id)

    def add_session(
        self, session: Session, meta: dict[str, Any], turn_extras: list[dict | None], provenance: Provenance
    ) -> bool:
        """One simulated session: its dialogue row, turns (with per-turn scores) and session record."""
        s = self.t["sessions"]
        with self.write() as conn:
            if conn.execute(select(s.c.session_id).where(s.c.session_id == session.session_id)).first():
                return False
            prov_id = self.ensure_provenance(conn, provenance)
            dialogue, turns, row = session_rows(session, meta, turn_extras)
            self.insert_many(
                conn, "dialogues", [{**dialogue, "provenance_id": prov_id, "created_at": utcnow()}]
            )
            self.insert_many(conn, "turns", turns)
            self.insert_many(conn, "sessions", [{**row, "provenance_id": prov_id}])
        return True

    def turn_scores(self, session_id: str) -> list[list[int]]:
        """Per assistant reply, the simulator's scores on each checklist item."""
        t = self.t["turns"]
        rows = self.fetch_tuples(
            select(t.c.extra_json)
            .where(t.c.dialogue_id == session_id, t.c.role == "assistant")
            .order_by(t.c.turn_index)
        )
        return [(self.loads(r[0]) or {}).get("scores", []) for r in rows]

    # -- instances ----------------------------------------------------------------------------------
    def add_generated_instances(
        self,
        persona_id: str,
        instances: list[Instance],
        provenance: Provenance,
        links: dict[str, list[InstanceLink]] | None = None,
    ) -> int:
        """Store a persona's instances once, appended after every stored instance; returns how many
        were written (0 when already there). ``links[instance_id]`` are the sessions that instance's
        prior interactions come from."""
        t = self.t["instances"]
        with self.write() as conn:
            if conn.execute(select(t.c.instance_id).where(t.c.persona_id == persona_id)).first():
                return 0
            start = int(conn.execute(select(func.coalesce(func.max(t.c.position) + 1, 0))).scalar_one())
            prov_id = self.ensure_provenance(conn, provenance)
            rows = [{**instance_row(x, start + i), "provenance_id": prov_id} for i, x in enumerate(instances)]
            self.insert_many(conn, "instances", rows)
            for x in instances:
                self.insert_many(
                    conn,
                    "instance_sessions",
                    [link_row(x.instance_id, k) for k in (links or {}).get(x.instance_id, [])],
                )
        return len(instances)
