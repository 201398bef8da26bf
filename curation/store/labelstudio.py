"""Label Studio area of the project store: which Label Studio project holds each task kind, which
Label Studio task is which prefkit task, and which label event each Label Studio annotation became.

The annotation map keeps the annotation's ``updated_at`` and the id of the event it last produced, so
a pull can tell a new annotation (label event), an edited one (an event superseding the last one) and
a deleted one (a withdraw event) apart. Events themselves go through ``LabelStore.append_event`` with
ids derived from (server, annotation, updated_at): a pull interrupted between the event and the map
row is repaired by the next pull, never doubled. Nothing here talks to a server.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import (
    select,
)

from curation.store.engine import StoreCore
from schemas.common import utcnow


class LabelStudioStore(StoreCore):
    """Maps between Label Studio ids and prefkit tasks and label events."""

    # -- projects -----------------------------------------------------------------------------------
    def ls_project_id(self, url: str, kind: str) -> int | None:
        p = self.t["ls_projects"]
        with self.read() as conn:
            row = conn.execute(select(p.c.ls_project_id).where(p.c.url == url, p.c.kind == kind)).first()
        return None if row is None else int(row[0])

    def set_ls_project(self, url: str, kind: str, ls_project_id: int, title: str) -> None:
        p = self.t["ls_projects"]
        with self.write() as conn:
            conn.execute(p.delete().where(p.c.url == url, p.c.kind == kind))
            conn.execute(
                p.insert(),
                {
                    "url": url,
                    "kind": kind,
                    "ls_project_id": ls_project_id,
                    "title": title,
                    "created_at": utcnow(),
                },
            )

    def ls_projects(self, url: str | None = None) -> list[dict[str, Any]]:
        p = self.t["ls_projects"]
        q = select(p).order_by(p.c.url, p.c.kind)
        if url:
            q = q.where(p.c.url == url)
        with self.read() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    # -- tasks --------------------------------------------------------------------------------------
    def ls_task_ids(self, url: str, ls_project_id: int) -> dict[str, int]:
        """prefkit task id → Label Studio task id, for one Label Studio project."""
        t = self.t["ls_tasks"]
        q = select(t.c.task_id, t.c.ls_task_id).where(t.c.url == url, t.c.ls_project_id == ls_project_id)
        with self.read() as conn:
            return {r[0]: int(r[1]) for r in conn.execute(q)}

    def add_ls_tasks(
        self, url: str, ls_project_id: int, pairs: dict[str, int], have: Collection[str] | None = None
    ) -> int:
        """Record prefkit task id → Label Studio task id pairs; known pairs are skipped. ``have``: the
        task ids the caller already knows are recorded (a push passes its own map instead of this
        reading every pair again for each chunk)."""
        have = self.ls_task_ids(url, ls_project_id) if have is None else have
        now = utcnow()
        rows = [
            {
                "url": url,
                "ls_task_id": ls_id,
                "ls_project_id": ls_project_id,
                "task_id": task_id,
                "pushed_at": now,
            }
            for task_id, ls_id in pairs.items()
            if task_id not in have
        ]
        with self.write() as conn:
            self.insert_many(conn, "ls_tasks", rows)
        return len(rows)

    # -- annotations --------------------------------------------------------------------------------
    def ls_annotations(self, url: str, ls_project_id: int) -> dict[int, dict[str, Any]]:
        """Label Studio annotation id → its map row (task, annotator, last event, updated_at, withdrawn)."""
        a = self.t["ls_annotations"]
        q = select(a).where(a.c.url == url, a.c.ls_project_id == ls_project_id)
        with self.read() as conn:
            return {int(r["ls_annotation_id"]): dict(r) for r in conn.execute(q).mappings()}

    def map_ls_annotation(
        self,
        url: str,
        ls_project_id: int,
        ls_annotation_id: int,
        *,
        task_id: str,
        annotator: str,
        event_id: str,
        updated_at: str,
        withdrawn: bool = False,
    ) -> None:
        """Insert or replace the map row of one annotation after its event was recorded."""
        a = self.t["ls_annotations"]
        row = {
            "url": url,
            "ls_annotation_id": ls_annotation_id,
            "ls_project_id": ls_project_id,
            "task_id": task_id,
            "annotator": annotator,
            "event_id": event_id,
            "updated_at": updated_at,
            "withdrawn": withdrawn,
            "pulled_at": utcnow(),
        }
        with self.write() as conn:
            conn.execute(a.delete().where(a.c.url == url, a.c.ls_annotation_id == ls_annotation_id))
            conn.execute(a.insert(), row)
