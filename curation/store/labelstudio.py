"""Label Studio area of the project store: which Label Studio project holds each task kind, which
Label Studio task is which prefkit task, and which label event each Label Studio annotation became.

The annotation map keeps the annotation's ``updated_at`` and the id of the event it last produced, so
a pull can tell a new annotation (label event), an edited one (an event superseding the last one) and
a deleted one (a withdraw event) apart. An event and its map row are written in one transaction, the
event with an id derived from (server, annotation, updated_at) that the label log's unique key
deduplicates: two pulls of one project running at once (two app replicas, two cron jobs) record
each annotation once. Pushes of one kind to one server take turns: a push holds a lease
(``take_push_lease``) while it runs, so two of them never import the same tasks. Every map write is an upsert (``INSERT … ON CONFLICT``), correct on SQLite
and PostgreSQL alike, and a map row never goes back to an older ``updated_at``. Nothing here talks to
a server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

from prefkit.curation.store.engine import StoreArea, StoreCore, in_write
from prefkit.curation.store.labels import Labels
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import AnnotationTask, LabelEvent
from sqlalchemy import Connection, bindparam, delete, func, select, update


@dataclass(frozen=True, slots=True)
class LSProject:
    """The Label Studio project at ``url`` that holds the tasks of one kind."""

    url: str
    kind: str
    ls_project_id: int
    title: str
    created_at: str


@dataclass(frozen=True, slots=True)
class LSAnnotation:
    """A Label Studio annotation and the label event it last became."""

    url: str
    ls_annotation_id: int
    ls_project_id: int
    task_id: str
    annotator: str
    event_id: str
    updated_at: str
    withdrawn: bool
    pulled_at: str


@dataclass(frozen=True, slots=True)
class LSPushLease:
    """A push of ``kind`` to the Label Studio server at ``url`` that is running (one at a time):
    ``token`` identifies it, ``host`` and ``pid`` name its process, ``renewed_at`` is when it last
    said it is alive."""

    url: str
    kind: str
    token: str
    host: str
    pid: int
    started_at: str
    renewed_at: str


class LabelStudio(StoreArea):
    """Maps between Label Studio ids and prefkit tasks and label events (``store.labelstudio``). Events
    go to the label log through the labels area, in the same transaction as their map rows."""

    def __init__(self, core: StoreCore, labels: Labels):
        super().__init__(core)
        self.labels = labels

    # -- projects -----------------------------------------------------------------------------------
    def project_id(self, url: str, kind: str) -> int | None:
        p = self.t["ls_projects"]
        with self.read() as conn:
            row = conn.execute(select(p.c.ls_project_id).where(p.c.url == url, p.c.kind == kind)).first()
        return None if row is None else int(row[0])

    @in_write
    def set_project(self, conn: Connection, url: str, kind: str, ls_project_id: int, title: str) -> None:
        """Record (or replace) the Label Studio project that holds ``kind`` on ``url``."""
        stmt = self.insert_stmt("ls_projects")
        stmt = stmt.on_conflict_do_update(
            index_elements=["url", "kind"],
            set_={c: stmt.excluded[c] for c in ("ls_project_id", "title", "created_at")},
        )
        row = {
            "url": url,
            "kind": kind,
            "ls_project_id": ls_project_id,
            "title": title,
            "created_at": utcnow(),
        }
        conn.execute(stmt, row)

    def projects(self, url: str | None = None) -> list[LSProject]:
        return [LSProject(**r) for r in self.rows("ls_projects", ("url", "kind"), url=url)]

    # -- push leases --------------------------------------------------------------------------------
    @in_write
    def take_push_lease(
        self, conn: Connection, lease: LSPushLease, replaceable: Callable[[LSPushLease], bool]
    ) -> LSPushLease | None:
        """Take the lease of ``lease.url`` / ``lease.kind`` when nobody holds it or its holder has
        stopped (``replaceable(holder)`` is true). Returns None when taken, else the live holder, who
        keeps it. Two pushes asking at once are serialised (the write transaction on SQLite, a lock
        on the key on PostgreSQL): exactly one gets it."""
        t = self.t["ls_push_leases"]
        where = (t.c.url == lease.url) & (t.c.kind == lease.kind)
        self.lock(conn, f"ls_push:{lease.url}:{lease.kind}")
        row = conn.execute(select(t).where(where)).mappings().first()
        if row is not None:
            holder = LSPushLease(**row)
            if holder.token != lease.token and not replaceable(holder):
                return holder
            conn.execute(delete(t).where(where))
        conn.execute(t.insert(), asdict(lease))
        return None

    @in_write
    def renew_push_lease(self, conn: Connection, lease: LSPushLease) -> bool:
        """Mark the push holding ``lease`` alive now; False when it no longer holds it (another push
        took it over after this one stopped renewing)."""
        t = self.t["ls_push_leases"]
        stmt = (
            update(t)
            .where(t.c.url == lease.url, t.c.kind == lease.kind, t.c.token == lease.token)
            .values(renewed_at=utcnow())
        )
        return conn.execute(stmt).rowcount == 1

    @in_write
    def release_push_lease(self, conn: Connection, lease: LSPushLease) -> None:
        """Give the lease back (nothing happens when another push holds it now)."""
        t = self.t["ls_push_leases"]
        conn.execute(delete(t).where(t.c.url == lease.url, t.c.kind == lease.kind, t.c.token == lease.token))

    def push_lease(self, url: str, kind: str) -> LSPushLease | None:
        """The push of ``kind`` to ``url`` running now (or one that stopped without giving it back)."""
        row = self.row("ls_push_leases", url=url, kind=kind)
        return None if row is None else LSPushLease(**row)

    # -- tasks --------------------------------------------------------------------------------------
    def task_ids(self, url: str, ls_project_id: int) -> dict[str, int]:
        """prefkit task id → Label Studio task id, for one Label Studio project."""
        t = self.t["ls_tasks"]
        q = select(t.c.task_id, t.c.ls_task_id).where(t.c.url == url, t.c.ls_project_id == ls_project_id)
        return {r[0]: int(r[1]) for r in self.fetch_tuples(q)}

    def push_state(
        self, url: str, ls_project_id: int, kind: str
    ) -> tuple[dict[str, tuple[str, bool]], list[AnnotationTask]]:
        """What a push starts from, in one read: every stored task of ``kind`` as item_ref →
        (task id, is gold), and the stored tasks of ``kind`` the Label Studio project does not have
        yet (full tasks, only those: a push of nothing new reads no payloads)."""
        t, m = self.t["tasks"], self.t["ls_tasks"]
        unmapped = (
            select(t)
            .outerjoin(
                m, (m.c.task_id == t.c.task_id) & (m.c.url == url) & (m.c.ls_project_id == ls_project_id)
            )
            .where(t.c.kind == kind, m.c.ls_task_id.is_(None))
            .order_by(t.c.task_id)
        )
        with self.read() as conn:
            refs = {
                r[0]: (r[1], bool(r[2]))
                for r in conn.execute(select(t.c.item_ref, t.c.task_id, t.c.is_gold).where(t.c.kind == kind))
            }
            todo = [self.labels._task_from_row(r) for r in conn.execute(unmapped).mappings()]
        return refs, todo

    def add_tasks(
        self, url: str, ls_project_id: int, pairs: Mapping[str, int], only_stored: bool = False
    ) -> int:
        """Record prefkit task id → Label Studio task id pairs in one transaction; pairs already
        recorded (by this process or another) are left as they are. ``only_stored``: skip task ids
        the store does not hold (tasks found in a Label Studio project). Returns how many were new."""
        if only_stored:
            t = self.t["tasks"]
            ids = list(pairs)
            have: set[str] = set()
            with self.read() as conn:
                for start in range(0, len(ids), 500):
                    q = select(t.c.task_id).where(t.c.task_id.in_(ids[start : start + 500]))
                    have |= {r[0] for r in conn.execute(q)}
            pairs = {task_id: ls_id for task_id, ls_id in pairs.items() if task_id in have}
        now = utcnow()
        rows = [(url, ls_id, ls_project_id, task_id, now) for task_id, ls_id in pairs.items()]
        if not rows:
            return 0
        m = self.t["ls_tasks"]
        columns = ("url", "ls_task_id", "ls_project_id", "task_id", "pushed_at")
        # No conflict target: neither the Label Studio id nor the (project, prefkit task) is mapped twice.
        stmt = self.insert_stmt("ls_tasks").on_conflict_do_nothing()
        count = select(func.count()).select_from(m).where(m.c.url == url, m.c.ls_project_id == ls_project_id)

        def step(conn: Connection) -> int:
            before = conn.execute(count).scalar_one()
            if self.backend == "sqlite":  # the driver's executemany: 100,000 rows in a blink
                marks = ", ".join("?" * len(columns))
                conn.exec_driver_sql(
                    f"INSERT INTO ls_tasks ({', '.join(columns)}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                    rows,
                )
            else:
                conn.execute(stmt, [dict(zip(columns, r, strict=True)) for r in rows])
            return conn.execute(count).scalar_one() - before

        return self.write_retrying(step)

    def suggestions_handled(self, url: str, ls_project_id: int) -> dict[str, tuple[int, str | None]]:
        """prefkit task id → (Label Studio task id, the newest suggestion a push handled for it)."""
        m = self.t["ls_tasks"]
        q = select(m.c.task_id, m.c.ls_task_id, m.c.suggestion_id).where(
            m.c.url == url, m.c.ls_project_id == ls_project_id
        )
        return {r[0]: (int(r[1]), r[2]) for r in self.fetch_tuples(q)}

    def set_suggestions(self, url: str, ls_project_id: int, handled: Mapping[str, str]) -> None:
        """Record, per prefkit task id, the suggestion a push handled (one transaction)."""
        if not handled:
            return
        m = self.t["ls_tasks"]
        stmt = (
            update(m)
            .where(m.c.url == url, m.c.ls_project_id == ls_project_id, m.c.task_id == bindparam("tid"))
            .values(suggestion_id=bindparam("sid"))
        )
        rows = [{"tid": tid, "sid": sid} for tid, sid in handled.items()]
        self.write_retrying(lambda conn: conn.execute(stmt, rows))

    # -- annotations --------------------------------------------------------------------------------
    def annotations(self, url: str, ls_project_id: int) -> dict[int, LSAnnotation]:
        """Label Studio annotation id → its map row (task, annotator, last event, updated_at, withdrawn)."""
        a = self.t["ls_annotations"]
        q = select(a).where(a.c.url == url, a.c.ls_project_id == ls_project_id)
        return {int(r["ls_annotation_id"]): LSAnnotation(**r) for r in self.fetch(q)}

    def _map(self, conn: Connection, *row: object) -> None:
        """Insert or update one annotation's map row (``url``, ``ls_annotation_id``, ``ls_project_id``,
        ``task_id``, ``annotator``, ``event_id``, ``updated_at``, ``withdrawn``), pulled now."""
        stmt = self.insert_stmt("ls_annotations")
        a = self.t["ls_annotations"]
        columns = "url ls_annotation_id ls_project_id task_id annotator event_id updated_at withdrawn".split()
        stmt = stmt.on_conflict_do_update(
            index_elements=["url", "ls_annotation_id"],
            set_={c: stmt.excluded[c] for c in [*columns[2:], "pulled_at"]},
            # A slower concurrent pull that read an older export never rolls the row back.
            where=a.c.updated_at <= stmt.excluded.updated_at,
        )
        conn.execute(stmt, {**dict(zip(columns, row, strict=True)), "pulled_at": utcnow()})

    @in_write
    def record_annotation(
        self,
        conn: Connection,
        event: LabelEvent,
        url: str,
        ls_project_id: int,
        ls_annotation_id: int,
        *,
        updated_at: str,
        withdrawn: bool = False,
    ) -> bool:
        """Append ``event`` and point the annotation's map row at it, in one transaction. Returns
        False when the event was already recorded (another pull got there first): nothing is doubled."""
        new = self.labels.insert_event(conn, event)
        ids = (event.task_id, event.annotator, event.event_id)
        self._map(conn, url, ls_annotation_id, ls_project_id, *ids, updated_at, withdrawn)
        return new

    @in_write
    def map_annotation(
        self,
        conn: Connection,
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
        """Insert or update the map row of one annotation whose event is already recorded."""
        ids = (task_id, annotator, event_id)
        self._map(conn, url, ls_annotation_id, ls_project_id, *ids, updated_at, withdrawn)
