"""Drafts area of the project store (``store.drafts``): the half-done form of an annotator's open
item, or of an editor of one of their labels, kept so a reload, a sign-in or a return shows it again.
Never a label; the submit or edit that records the form deletes it (:mod:`prefkit.curation.store.submits`)."""

from __future__ import annotations

from typing import Any

from prefkit.curation.store.engine import StoreArea, StoreCore
from prefkit.curation.store.labels import Labels
from prefkit.schemas.common import utcnow
from sqlalchemy import Connection, delete, select, union_all


class Drafts(StoreArea):
    """Save and read the form state of the showing of an open item."""

    def __init__(self, core: StoreCore, labels: Labels):
        super().__init__(core)
        self.labels = labels

    def save_draft(
        self, annotator: str, task_id: str, event_id: str, state_json: str, edit: bool = False
    ) -> bool:
        """Keep the form state of the showing ``event_id`` of an annotator's open item (one row per
        annotator and task, replaced). Never a label: nothing reads drafts but the app's next run.
        False, with nothing written, unless ``event_id`` is that annotator's open assignment of
        ``task_id`` as shown now (checked in the write's transaction: another annotator's item, a
        submitted or re-shown one has no draft). With ``edit``, the form is an editor of their live
        label ``event_id`` of ``task_id`` instead (the *previous item* key, My items): False unless it
        is still the live one and the task is not open for them under a showing (whose draft it is)."""
        stmt = self.insert_stmt("drafts")
        stmt = stmt.on_conflict_do_update(
            index_elements=["annotator", "task_id"],
            set_={
                "event_id": stmt.excluded.event_id,
                "state_json": stmt.excluded.state_json,
                "updated_at": stmt.excluded.updated_at,
            },
        )
        row = {
            "annotator": annotator,
            "task_id": task_id,
            "event_id": event_id,
            "state_json": state_json,
            "updated_at": utcnow(),
        }
        a, r = self.t["assignments"], self.t["repeats"]  # the open showing: of the queue, or a repeat

        def open_as(x: Any, still: Any) -> Any:
            q = select(x.c.task_id).where(x.c.annotator == annotator, x.c.task_id == task_id, still)
            return q if edit else q.where(x.c.event_id == event_id)

        showing = union_all(open_as(a, a.c.done_at.is_(None)), open_as(r, r.c.action.is_(None)))

        def step(conn: Connection) -> bool:
            if (conn.execute(showing).first() is not None) == edit:
                return False
            if edit and self.labels.live_id(conn, annotator, task_id) != event_id:
                return False
            conn.execute(stmt, row)
            return True

        return self.write_retrying(step)

    def drop_draft(self, annotator: str, task_id: str, event_id: str) -> None:
        """Forget the draft of ``event_id`` (an editor's changes discarded); another showing's stays."""
        d = self.t["drafts"]
        mine = (d.c.annotator == annotator) & (d.c.task_id == task_id) & (d.c.event_id == event_id)
        self.write_retrying(lambda conn: conn.execute(delete(d).where(mine)))

    def draft(self, annotator: str, task_id: str) -> tuple[str, str] | None:
        """``(event_id, state_json)`` of the annotator's draft of ``task_id``, or None."""
        d = self.t["drafts"]
        q = select(d.c.event_id, d.c.state_json).where(d.c.annotator == annotator, d.c.task_id == task_id)
        found = self.read_retrying(lambda conn: conn.execute(q).first())
        return None if found is None else (found[0], found[1])
