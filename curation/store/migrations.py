"""Numbered schema migrations of the project store, applied in order on open.

Each migration declares its own tables with SQLAlchemy Core so the DDL stays portable (SQLite is the
embedded default; PostgreSQL must be a configuration change). A migration, once released, is never
edited: change the schema with a new, higher-numbered one. Migration numbers are reserved per area:
m001 core, m002 LLM layer, m003 annotation app, m004 releases, m005 Label Studio bridge, m006 generation,
m007 verification (instance → session links), m008 evaluation, m012 Label Studio push leases,
m014/m015 packed turns of bulk imports, m016 adaptive overlap, m020 judge-assisted labelling
(suggestions, the arm a label was made in), m022 the maintainers' audit log, m023 crowd studies, m026
guidelines versions and recalibration, m027 repeats, m029 the structured-output form an endpoint takes.
Every migration lives in this module, so opening any store applies the same, complete list.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable

from prefkit.curation.store.common import LATEST_MIGRATION, search_text
from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    func,
    literal,
    select,
    text,
)

Migration = tuple[int, str, Callable[[Connection], None]]
MIGRATIONS: list[Migration] = []


def migration(number: int, name: str):
    """Register ``fn`` as migration ``number``."""

    def register(fn: Callable[[Connection], None]) -> Callable[[Connection], None]:
        if any(n == number for n, _, _ in MIGRATIONS):
            raise RuntimeError(f"migration number {number} registered twice")
        if number > LATEST_MIGRATION:  # prefkit status reads a database at LATEST_MIGRATION without the store
            raise RuntimeError(f"migration {number}: raise LATEST_MIGRATION in curation/store/common.py")
        MIGRATIONS.append((number, name, fn))
        MIGRATIONS.sort(key=lambda m: m[0])
        return fn

    return register


def _json(name: str, nullable: bool = True) -> Column:
    return Column(name, Text, nullable=nullable)


@migration(1, "initial")
def m001_initial(conn: Connection) -> None:
    md = MetaData()
    Table("meta", md, Column("key", Text, primary_key=True), Column("value", Text, nullable=False))
    Table(
        "sources",
        md,
        Column("source_id", Text, primary_key=True),
        Column("kind", Text, nullable=False),
        Column("path", Text, nullable=False),
        Column("sha256", Text, nullable=False),
        Column("rows", Integer, nullable=False),
        Column("licence", Text),
        Column("imported_at", Text, nullable=False),
        UniqueConstraint("kind", "sha256"),
    )
    Table(
        "provenance",
        md,
        Column("provenance_id", Text, primary_key=True),
        Column("source", Text, nullable=False),
        Column("model", Text),
        Column("offline", Boolean, nullable=False),
        _json("record_json", nullable=False),
    )

    def prov() -> Column:
        return Column("provenance_id", Text, ForeignKey("provenance.provenance_id"))

    Table(
        "personas",
        md,
        Column("persona_id", Text, primary_key=True),
        _json("record_json", nullable=False),
        Column("schema_version", Text, nullable=False),
        prov(),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "context_factors",
        md,
        Column("factor_id", Text, primary_key=True),
        Column("persona_id", Text, ForeignKey("personas.persona_id"), nullable=False, index=True),
        Column("position", Integer, nullable=False),
        _json("record_json", nullable=False),
        Column("schema_version", Text, nullable=False),
        prov(),
    )
    Table(
        "session_plans",
        md,
        Column("persona_id", Text, ForeignKey("personas.persona_id"), primary_key=True),
        _json("record_json", nullable=False),
        Column("schema_version", Text, nullable=False),
        prov(),
    )
    Table(
        "dialogues",
        md,
        Column("dialogue_id", Text, primary_key=True),
        Column("origin", Text, nullable=False),
        Column("persona_id", Text, index=True),
        Column("session_index", Integer),
        Column("source_id", Text, ForeignKey("sources.source_id")),
        _json("meta_json"),
        Column("needs_reverification", Boolean, nullable=False, default=False),
        Column("schema_version", Text, nullable=False),
        prov(),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "turns",
        md,
        Column("dialogue_id", Text, ForeignKey("dialogues.dialogue_id"), primary_key=True),
        Column("turn_index", Integer, primary_key=True),
        Column("role", Text, nullable=False),
        Column("content", Text, nullable=False),
        _json("extra_json"),
    )
    Table(
        "turn_revisions",
        md,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("revision_id", Text, nullable=False, unique=True),
        Column("dialogue_id", Text, nullable=False, index=True),
        Column("turn_index", Integer, nullable=False),
        Column("original", Text, nullable=False),
        Column("revised", Text, nullable=False),
        Column("author", Text, ForeignKey("users.username"), nullable=False),
        Column("reason", Text),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "sessions",
        md,
        Column("session_id", Text, ForeignKey("dialogues.dialogue_id"), primary_key=True),
        Column("persona_id", Text, nullable=False, index=True),
        Column("session_index", Integer, nullable=False),
        _json("record_json", nullable=False),
        Column("schema_version", Text, nullable=False),
        prov(),
    )
    Table(
        "instances",
        md,
        Column("instance_id", Text, primary_key=True),
        Column("persona_id", Text, nullable=False, index=True),
        Column("instance_type", Text, nullable=False),
        Column("position", Integer, nullable=False),
        _json("record_json", nullable=False),
        Column("schema_version", Text, nullable=False),
        Column("source_id", Text, ForeignKey("sources.source_id")),
        prov(),
    )
    Table(
        "packets",
        md,
        Column("session_id", Text, primary_key=True),
        Column("dialogue_id", Text, ForeignKey("dialogues.dialogue_id"), nullable=False),
        Column("source_id", Text, ForeignKey("sources.source_id")),
        Column("position", Integer, nullable=False),
        _json("extra_json", nullable=False),
        Column("schema_version", Text, nullable=False),
    )
    Table(
        "memories",
        md,
        Column("memory_pk", Integer, primary_key=True, autoincrement=True),
        Column("dialogue_id", Text, ForeignKey("dialogues.dialogue_id"), nullable=False),
        Column("origin", Text, nullable=False),  # gold | candidate | annotator
        Column("source_model", Text, nullable=False),  # '' for gold
        Column("position", Integer, nullable=False),
        Column("memory_id", Text),
        _json("record_json"),
        _json("raw_json", nullable=False),
        Column("valid", Boolean, nullable=False),
        _json("problems_json"),
        Column("schema_version", Text, nullable=False),
        prov(),
        UniqueConstraint("dialogue_id", "origin", "source_model", "position"),
        Index("ix_memories_dialogue_origin", "dialogue_id", "origin"),
    )
    Table(
        "preference_pairs",
        md,
        Column("pair_id", Text, primary_key=True),
        Column("checklist_item", Text, nullable=False),
        Column("candidate", Text, nullable=False),
        Column("origin", Text, nullable=False),
        Column("instance_id", Text),
        _json("meta_json"),
        prov(),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "failures",
        md,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("stage", Text, nullable=False),
        Column("item", Text, nullable=False),
        Column("error", Text, nullable=False),
        Column("raw", Text),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "users",
        md,
        Column("username", Text, primary_key=True),
        Column("role", Text, nullable=False),
        Column("password_hash", Text, nullable=False),
        Column("email", Text, unique=True),
        Column("active", Boolean, nullable=False, default=True),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "batches",
        md,
        Column("batch_id", Text, primary_key=True),
        Column("kind", Text, nullable=False),
        Column("status", Text, nullable=False),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "tasks",
        md,
        Column("task_id", Text, primary_key=True),
        Column("kind", Text, nullable=False, index=True),
        Column("item_ref", Text, nullable=False),
        _json("payload_json", nullable=False),
        Column("batch_id", Text, ForeignKey("batches.batch_id"), nullable=False),
        Column("overlap", Integer, nullable=False),
        Column("is_gold", Boolean, nullable=False),
        _json("gold_answer_json"),
        Column("schema_version", Text, nullable=False),
        Column("created_at", Text, nullable=False),
        UniqueConstraint("kind", "item_ref"),
    )
    Table(
        "assignments",
        md,
        Column("task_id", Text, ForeignKey("tasks.task_id"), primary_key=True),
        Column("annotator", Text, ForeignKey("users.username"), primary_key=True),
        Column("position", Integer, nullable=False),
        Column("assigned_at", Text, nullable=False),
        Index("ix_assignments_annotator_position", "annotator", "position"),
    )
    Table(
        "label_events",
        md,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("event_id", Text, nullable=False, unique=True),
        Column("task_id", Text, ForeignKey("tasks.task_id"), nullable=False),
        Column("kind", Text, nullable=False),
        Column("annotator", Text, ForeignKey("users.username"), nullable=False),
        Column("action", Text, nullable=False),
        _json("values_json", nullable=False),
        Column("comment", Text),
        Column("time_spent_s", Float),
        Column("supersedes", Text),
        Column("source", Text, nullable=False),
        Column("schema_version", Text, nullable=False),
        Column("created_at", Text, nullable=False),
        Index("ix_label_events_task", "task_id"),
        Index("ix_label_events_annotator", "annotator", "seq"),
    )
    Table(
        "adjudications",
        md,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("adjudication_id", Text, nullable=False, unique=True),
        Column("task_id", Text, ForeignKey("tasks.task_id"), nullable=False, index=True),
        Column("maintainer", Text, ForeignKey("users.username"), nullable=False),
        _json("values_json", nullable=False),
        Column("note", Text, nullable=False),
        Column("supersedes", Text),
        Column("schema_version", Text, nullable=False),
        Column("created_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(2, "llm_layer")
def m002_llm_layer(conn: Connection) -> None:
    """The LLM layer's response cache, per-stage call ledger and Batch API jobs (curation/store/llm.py)."""
    md = MetaData()
    Table(
        "llm_cache",
        md,
        Column("key", Text, primary_key=True),
        Column("model", Text, nullable=False),
        Column("stage", Text, nullable=False),
        Column("text", Text, nullable=False),
        Column("prompt_tokens", Integer, nullable=False),
        Column("completion_tokens", Integer, nullable=False),
        Column("cached_tokens", Integer, nullable=False),
        Column("cost_usd", Float, nullable=False),
        _json("meta_json", nullable=False),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "llm_ledger",
        md,
        Column("stage", Text, primary_key=True),
        Column("item", Text, primary_key=True),
        Column("key", Text, primary_key=True),
        Column("model", Text, nullable=False),
        Column("status", Text, nullable=False),
        Column("error", Text),
        Column("attempts", Integer, nullable=False),
        Column("from_cache", Boolean, nullable=False),
        Column("prompt_tokens", Integer, nullable=False),
        Column("completion_tokens", Integer, nullable=False),
        Column("cached_tokens", Integer, nullable=False),
        Column("cost_usd", Float, nullable=False),
        Column("updated_at", Text, nullable=False),
        Index("ix_llm_ledger_key", "key"),
    )
    Table(
        "llm_batches",
        md,
        Column("batch_id", Text, primary_key=True),
        Column("stage", Text, nullable=False, index=True),
        Column("status", Text, nullable=False),
        Column("input_file_id", Text, nullable=False),
        Column("output_file_id", Text),
        _json("keys_json", nullable=False),
        Column("endpoint", Text, nullable=False),
        Column("created_at", Text, nullable=False),
        Column("updated_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(3, "annotation_app")
def m003_annotation_app(conn: Connection) -> None:
    """Persisted queues for the annotation app.

    ``tasks.n_assigned`` counts distinct annotators a task went to (so picking the next task never
    scans assignments); an assignment row carries the pending submit's ``event_id`` (made when the item
    is first shown, reused on reload, double click or retry), when it was shown and when it was done,
    and (copied from its task, which never changes them) the kind and batch, so an annotator's queue
    and progress are read from one index without touching the tasks table.
    """
    for ddl in (
        "ALTER TABLE tasks ADD COLUMN n_assigned INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE assignments ADD COLUMN event_id TEXT",
        "ALTER TABLE assignments ADD COLUMN shown_at TEXT",
        "ALTER TABLE assignments ADD COLUMN done_at TEXT",
        "ALTER TABLE assignments ADD COLUMN kind TEXT",
        "ALTER TABLE assignments ADD COLUMN batch_id TEXT",
        "CREATE INDEX ix_tasks_queue ON tasks (kind, is_gold, n_assigned, task_id)",
        "CREATE INDEX ix_tasks_kind_overlap ON tasks (kind, overlap)",
        "CREATE INDEX ix_assignments_open ON assignments (annotator, kind, done_at, position)",
        "CREATE INDEX ix_assignments_progress ON assignments (annotator, kind, batch_id, done_at)",
        "CREATE INDEX ix_assignments_task ON assignments (task_id)",
        "CREATE INDEX ix_label_events_annotator_task ON label_events (annotator, task_id)",
        "CREATE INDEX ix_label_events_annotator_created ON label_events (annotator, created_at, kind, supersedes)",
    ):
        conn.execute(text(ddl))


@migration(4, "releases")
def m004_releases(conn: Connection) -> None:
    """The log of cut releases, and the per-project salt that pseudonymises annotators in releases."""
    md = MetaData()
    Table(
        "releases",
        md,
        Column("version", Text, primary_key=True),
        Column("created_at", Text, nullable=False),
        Column("path", Text, nullable=False),
        Column("manifest_sha256", Text, nullable=False),
        Column("data_sha256", Text, nullable=False),
        Column("gates_passed", Boolean, nullable=False),
        Column("override_reason", Text),
    )
    md.create_all(conn)
    conn.execute(
        text("INSERT INTO meta (key, value) VALUES ('release.annotator_salt', :v)"),
        {"v": secrets.token_hex(16)},
    )


@migration(5, "labelstudio")
def m005_labelstudio(conn: Connection) -> None:
    md = MetaData()
    md.reflect(conn, only=["tasks", "users"])  # the foreign keys below point at them
    Table(
        "ls_projects",
        md,
        Column("url", Text, primary_key=True),
        Column("kind", Text, primary_key=True),
        Column("ls_project_id", Integer, nullable=False),
        Column("title", Text, nullable=False),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "ls_tasks",
        md,
        Column("url", Text, primary_key=True),
        Column("ls_task_id", Integer, primary_key=True),
        Column("ls_project_id", Integer, nullable=False),
        Column("task_id", Text, ForeignKey("tasks.task_id"), nullable=False),
        Column("pushed_at", Text, nullable=False),
        UniqueConstraint("url", "ls_project_id", "task_id"),
    )
    Table(
        "ls_annotations",
        md,
        Column("url", Text, primary_key=True),
        Column("ls_annotation_id", Integer, primary_key=True),
        Column("ls_project_id", Integer, nullable=False, index=True),
        Column("task_id", Text, ForeignKey("tasks.task_id"), nullable=False),
        Column("annotator", Text, ForeignKey("users.username"), nullable=False),
        Column("event_id", Text, nullable=False),
        Column("updated_at", Text, nullable=False),
        Column("withdrawn", Boolean, nullable=False, default=False),
        Column("pulled_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(6, "generation")
def m006_generation(conn: Connection) -> None:
    md = MetaData()
    md.reflect(conn, only=["personas", "provenance"])  # the tables the new foreign keys point at
    Table(
        "checklists",
        md,
        Column("persona_id", Text, ForeignKey("personas.persona_id"), primary_key=True),
        Column("preference_key", Text, primary_key=True),
        Column("preference", Text, nullable=False),
        Column("items_json", Text, nullable=False),
        Column("schema_version", Text, nullable=False),
        Column("provenance_id", Text, ForeignKey("provenance.provenance_id")),
    )
    Table(
        "generation_drops",
        md,
        # No foreign key: a persona can be dropped before it is ever written (its writer kept failing).
        Column("persona_id", Text, primary_key=True),
        Column("stage", Text, nullable=False),
        Column("reason", Text, nullable=False),
        Column("created_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(7, "verification")
def m007_verification(conn: Connection) -> None:
    """Which sessions an instance is built from, so instances are rebuilt from their (verified,
    possibly rewritten) sessions at export time instead of being frozen when they were made; and the
    dialogues a repair replaced.

    One row per prior interaction of an instance: its position in ``prior_interactions``, the
    session (a dialogue id), the session's role in the persona's plan (A, A_prime, B, other; empty for
    imported rows) and whether the instance depends on it being verified (``relevant``).
    """
    md = MetaData()
    md.reflect(conn, only=["instances", "dialogues"])
    Table(
        "instance_sessions",
        md,
        Column("instance_id", Text, ForeignKey("instances.instance_id"), primary_key=True),
        Column("position", Integer, primary_key=True),
        Column("session_id", Text, ForeignKey("dialogues.dialogue_id"), nullable=False, index=True),
        Column("role", Text, nullable=False),
        Column("relevant", Boolean, nullable=False),
    )
    Table(
        # A session's earlier dialogues: `prefkit generate --repair` replaces a failed session's
        # dialogue with a new one and keeps the old one here (turns as they stood, and why).
        "session_versions",
        md,
        Column("session_id", Text, ForeignKey("dialogues.dialogue_id"), primary_key=True),
        Column("version", Integer, primary_key=True),
        Column("turns_json", Text, nullable=False),
        Column("reason", Text, nullable=False),
        Column("replaced_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(8, "evaluation")
def m008_evaluation(conn: Connection) -> None:
    """Evaluation runs (configuration, models, prompt hashes, release version) and their items."""
    md = MetaData()
    Table(
        "eval_runs",
        md,
        Column("run_id", Text, primary_key=True),
        Column("benchmark", Text, nullable=False),  # cupid | alpsbench
        Column("task", Text, nullable=False),  # inference | generation | task1..task4
        Column("model", Text),  # None when a predictions file was scored
        Column("judge_model", Text),
        Column("backend", Text, nullable=False),
        Column("offline", Boolean, nullable=False),
        Column("release_dir", Text, nullable=False),
        Column("release_name", Text),
        Column("release_version", Text),
        Column("release_digest", Text, nullable=False),
        Column("config_name", Text, nullable=False),
        _json("settings_json", nullable=False),
        _json("prompts_json", nullable=False),
        Column("status", Text, nullable=False),  # running | complete
        _json("summary_json"),
        Column("created_at", Text, nullable=False),
        Column("updated_at", Text, nullable=False),
    )
    Table(
        "eval_items",
        md,
        Column("run_id", Text, ForeignKey("eval_runs.run_id"), primary_key=True),
        Column("item_key", Text, primary_key=True),
        Column("grp", Text, nullable=False),  # instance type, distractor level or ability
        _json("record_json", nullable=False),
    )
    md.create_all(conn)


@migration(10, "alpsbench_tasks")
def m010_alpsbench_tasks(conn: Connection) -> None:
    """AlpsBench task rows built by prefkit (tasks 2-4), in the public layout's row shape."""
    md = MetaData()
    md.reflect(conn, only=["provenance"])
    Table(
        "alps_tasks",
        md,
        Column("track", Text, primary_key=True),  # task2, task3_d100 .. task3_d1000, task4_ability1..5
        Column("benchmark_id", Text, primary_key=True),
        Column("session_id", Text, nullable=False, index=True),
        _json("input_json", nullable=False),
        _json("gold_json", nullable=False),
        _json("checks_json"),  # automatic checks (leakage, segment control) and their outcome
        Column("provenance_id", Text, ForeignKey("provenance.provenance_id")),
        Column("created_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(9, "annotator_door")
def m009_annotator_door(conn: Connection) -> None:
    """Sign-in attempts (for throttling and the audit trail) and assignments handed back to the pool.

    ``sign_in_log`` keeps every attempt (outcome ``ok``, ``fail``, ``throttled``, ``locked``) and every
    maintainer ``unlock``: failures since the last success or unlock, per user name and per client,
    decide the backoff. ``assignment_releases`` records each open assignment returned to the pool
    (the row itself is deleted so the item can go to someone else). The partial index lists only
    open assignments, so finding stale ones never reads the finished history.
    """
    md = MetaData()
    Table(
        "sign_in_log",
        md,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("username", Text, nullable=False),
        Column("client", Text, nullable=False),
        Column("outcome", Text, nullable=False),
        Column("created_at", Text, nullable=False),
        Index("ix_sign_in_log_user", "username", "seq"),
        Index("ix_sign_in_log_client", "client", "seq"),
    )
    Table(
        "assignment_releases",
        md,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("task_id", Text, nullable=False),
        Column("annotator", Text, nullable=False),
        Column("kind", Text, nullable=False),
        Column("assigned_at", Text, nullable=False),
        Column("shown_at", Text),
        Column("reason", Text, nullable=False),
        Column("released_at", Text, nullable=False),
        Index("ix_assignment_releases_annotator", "annotator", "seq"),
    )
    md.create_all(conn)
    conn.execute(
        text(
            "CREATE INDEX ix_assignments_pending ON assignments (kind, annotator, shown_at, assigned_at)"
            " WHERE done_at IS NULL"
        )
    )


@migration(12, "labelstudio_push_leases")
def m012_labelstudio_push_leases(conn: Connection) -> None:
    """Who is pushing a task kind to a Label Studio server: one push at a time per (server, kind).

    A push holds its row while it runs and renews ``renewed_at`` every few seconds; a second push
    waits for the row to go (or fails with a message naming the holder). A row whose holder stopped
    renewing it, or whose process is gone from this host, is taken over.
    """
    md = MetaData()
    Table(
        "ls_push_leases",
        md,
        Column("url", Text, primary_key=True),
        Column("kind", Text, primary_key=True),
        Column("token", Text, nullable=False),
        Column("host", Text, nullable=False),
        Column("pid", Integer, nullable=False),
        Column("started_at", Text, nullable=False),
        Column("renewed_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(14, "packed_turns")
def m014_packed_turns(conn: Connection) -> None:
    """Turns of bulk-imported dialogues, one row per dialogue instead of one per turn.

    A WildChat ingest writes hundreds of thousands of dialogues with millions of turns; a row per turn
    made the write the slowest part of the import. ``turns_json`` holds the dialogue's turns in order
    (``[{"role", "content", "extra"}, ...]``, the index is the position). A dialogue has its turns
    either here or in ``turns``, never in both: the store reads either, and the first rewrite of a
    turn moves the dialogue's turns into ``turns`` (where revisions apply) and drops the packed row.
    """
    md = MetaData()
    md.reflect(conn, only=["dialogues"])
    Table(
        "packed_turns",
        md,
        Column("dialogue_id", Text, ForeignKey("dialogues.dialogue_id"), primary_key=True),
        Column("n_turns", Integer, nullable=False),
        _json("turns_json", nullable=False),
    )
    md.create_all(conn)


@migration(15, "turn_packs")
def m015_turn_packs(conn: Connection) -> None:
    """Packed turns stored per conversation, linked to dialogues, so a bulk import can write a
    conversation's turns while it is still reading its input (before sequences are formed).

    ``turn_packs`` holds one conversation's turns in order (``[{"role", "content", "extra"?}, ...]``);
    ``dialogue_packs`` lists a dialogue's packs in order (``part`` 0, 1, ...): its turns are the
    packs' turns concatenated, each carrying ``{"conversation": part}`` when there is more than one.
    A dialogue has its turns either here or in ``turns``, never in both. The rows of migration 14's
    ``packed_turns`` move here (one pack per dialogue) and that table is dropped.
    """
    md = MetaData()
    md.reflect(conn, only=["dialogues", "packed_turns"])
    packs = Table(
        "turn_packs",
        md,
        Column("pack_id", Integer, primary_key=True, autoincrement=False),
        Column("n_turns", Integer, nullable=False),
        _json("turns_json", nullable=False),
    )
    links = Table(
        "dialogue_packs",
        md,
        Column("dialogue_id", Text, ForeignKey("dialogues.dialogue_id"), primary_key=True),
        Column("part", Integer, primary_key=True, autoincrement=False),
        Column("pack_id", Integer, ForeignKey("turn_packs.pack_id"), nullable=False, unique=True),
    )
    md.create_all(conn, tables=[packs, links])
    old = md.tables["packed_turns"]
    numbered = select(
        func.row_number().over(order_by=old.c.dialogue_id).label("pack_id"),
        old.c.dialogue_id,
        old.c.n_turns,
        old.c.turns_json,
    ).subquery()
    conn.execute(
        packs.insert().from_select(
            ["pack_id", "n_turns", "turns_json"],
            select(numbered.c.pack_id, numbered.c.n_turns, numbered.c.turns_json),
        )
    )
    conn.execute(
        links.insert().from_select(
            ["dialogue_id", "part", "pack_id"],
            select(numbered.c.dialogue_id, literal(0), numbered.c.pack_id),
        )
    )
    old.drop(conn)


@migration(20, "assist")
def m020_assist(conn: Connection) -> None:
    """Judge-assisted labelling: suggestion runs, their suggestions, and what a label event was shown.

    ``suggestion_runs`` holds one ``prefkit suggest`` run (task kind, model, backend, offline flag,
    prompt hash, seed); ``suggestions`` one suggestion per (run, task): label-shaped values and the
    detail behind them (evidence turns, found quotes, failed checks). Suggestions are never label
    events: nothing here is read by consensus, agreement or the release's label configs.
    ``label_events`` gains ``assist_arm`` (``assisted``: the suggestion was on screen; ``control``:
    the item had one but it was withheld) and ``suggestion_id`` (the suggestion shown or withheld).
    """
    md = MetaData()
    md.reflect(conn, only=["tasks"])
    Table(
        "suggestion_runs",
        md,
        Column("run_id", Text, primary_key=True),
        Column("kind", Text, nullable=False),
        Column("model", Text, nullable=False),
        Column("backend", Text, nullable=False),
        Column("offline", Boolean, nullable=False),
        Column("prompt_hash", Text, nullable=False),
        Column("seed", Integer, nullable=False),
        _json("settings_json", nullable=False),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "suggestions",
        md,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("suggestion_id", Text, nullable=False, unique=True),
        Column("run_id", Text, ForeignKey("suggestion_runs.run_id"), nullable=False),
        Column("task_id", Text, ForeignKey("tasks.task_id"), nullable=False),
        Column("kind", Text, nullable=False),
        _json("values_json", nullable=False),
        _json("detail_json", nullable=False),
        Column("created_at", Text, nullable=False),
        UniqueConstraint("run_id", "task_id", name="uq_suggestions_run_task"),
        Index("ix_suggestions_task", "task_id", "seq"),
    )
    md.create_all(conn)
    conn.execute(text("ALTER TABLE label_events ADD COLUMN assist_arm TEXT"))
    conn.execute(text("ALTER TABLE label_events ADD COLUMN suggestion_id TEXT"))


@migration(16, "adaptive_overlap")
def m016_adaptive_overlap(conn: Connection) -> None:
    """Adaptive overlap on ``tasks``: ``overlap`` stays the number of annotators the task goes to *now*
    (its current target, which the queues read); ``overlap_min`` / ``overlap_max`` bound it (NULL:
    fixed overlap) and ``audit`` marks the items that always get ``overlap_max``."""
    for ddl in (
        "ALTER TABLE tasks ADD COLUMN overlap_min INTEGER",
        "ALTER TABLE tasks ADD COLUMN overlap_max INTEGER",
        "ALTER TABLE tasks ADD COLUMN audit BOOLEAN NOT NULL DEFAULT FALSE",
    ):
        conn.execute(text(ddl))


@migration(17, "sessions_and_drafts")
def m017_sessions_and_drafts(conn: Connection) -> None:
    """Sign-in sessions of the annotation app and the half-done forms of annotators.

    ``app_sessions`` holds one row per signed-in browser: whose it is, when it ends, and when it was
    revoked (sign-out, ``prefkit users disable``); the token a browser keeps names its row and is
    signed with the project's session secret (kept in ``meta``). ``drafts`` holds, per annotator and
    task, the form state of the showing ``event_id`` not submitted yet: what a reload restores. A draft
    is never a label; the submit that finishes the item deletes it in the same transaction.
    """
    md = MetaData()
    Table(
        "app_sessions",
        md,
        Column("session_id", Text, primary_key=True),
        Column("username", Text, nullable=False),
        Column("client", Text),
        Column("created_at", Text, nullable=False),
        Column("expires_at", Text, nullable=False),
        Column("revoked_at", Text),
        Index("ix_app_sessions_user", "username"),
    )
    Table(
        "drafts",
        md,
        Column("annotator", Text, primary_key=True),
        Column("task_id", Text, primary_key=True),
        Column("event_id", Text, nullable=False),
        _json("state_json", nullable=False),
        Column("updated_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(21, "labelstudio_suggestions")
def m021_labelstudio_suggestions(conn: Connection) -> None:
    """``ls_tasks`` gains ``suggestion_id``: the newest suggestion a push has handled for the Label
    Studio task (sent with it, added to it later, or left out because people had already answered it).
    NULL: none yet, so the next push compares with what the task's data in Label Studio says."""
    conn.execute(text("ALTER TABLE ls_tasks ADD COLUMN suggestion_id TEXT"))


@migration(22, "audit_log")
def m022_audit_log(conn: Connection) -> None:
    """The maintainers' audit log: one row per action taken on people, work or releases (from the
    app's console pages or the CLI), saying who (a maintainer's user name, or ``shell:<login>`` for a
    command), when, what (``user.disable``, ``tasks.create``, ``release.cut``, ...), on what, and the
    details (JSON; never a password). Rows are only ever added."""
    md = MetaData()
    Table(
        "audit_log",
        md,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("created_at", Text, nullable=False),
        Column("actor", Text, nullable=False),
        Column("action", Text, nullable=False),
        Column("target", Text, nullable=False),
        _json("detail_json"),
        Index("ix_audit_log_action", "action", "seq"),
    )
    md.create_all(conn)


@migration(23, "crowd_studies")
def m023_crowd_studies(conn: Connection) -> None:
    """Crowd studies (participants recruited on a platform such as Prolific): ``studies`` holds a
    study's settings and the SHA-256 of its entry link's secret (never the secret);
    ``study_participants`` binds a platform id to one participant account per study (with the
    platform's session id it first arrived with, and how it stands); ``study_events`` records each
    arrival, return, completion, screening-out and time-out. Rows of events are only ever added."""
    md = MetaData()
    Table(
        "studies",
        md,
        Column("study_id", Text, primary_key=True),
        Column("name", Text, nullable=False),
        Column("kind", Text, nullable=False),
        Column("batch_id", Text, nullable=False),
        Column("platform", Text, nullable=False),
        Column("items", Integer, nullable=False),
        Column("gold_share", Float, nullable=False),
        Column("screen_below", Float, nullable=False),
        Column("completion_code", Text, nullable=False),
        Column("screened_out_code", Text, nullable=False),
        Column("completion_url", Text),
        Column("time_limit_minutes", Float, nullable=False),
        _json("rules_json", nullable=False),
        Column("secret_hash", Text, nullable=False),
        Column("created_at", Text, nullable=False),
    )
    Table(
        "study_participants",
        md,
        Column("study_id", Text, ForeignKey("studies.study_id"), primary_key=True),
        Column("platform_id", Text, primary_key=True),
        Column("username", Text, nullable=False, unique=True),
        Column("platform_session", Text),
        Column("platform_study", Text),
        Column("status", Text, nullable=False),
        Column("arrived_at", Text, nullable=False),
        Column("finished_at", Text),
    )
    Table(
        "study_events",
        md,
        Column("seq", Integer, primary_key=True, autoincrement=True),
        Column("study_id", Text, nullable=False),
        Column("platform_id", Text, nullable=False),
        Column("event", Text, nullable=False),
        _json("detail_json"),
        Column("created_at", Text, nullable=False),
        Index("ix_study_events_study", "study_id", "seq"),
    )
    md.create_all(conn)


@migration(24, "temporary_passwords")
def m024_temporary_passwords(conn: Connection) -> None:
    """``users.password_temporary``: the password was made for the person (``users add
    --generate-password``, the People page) and is good for one thing only, choosing their own at
    their first sign-in; until then it opens no session."""
    conn.execute(text("ALTER TABLE users ADD COLUMN password_temporary BOOLEAN NOT NULL DEFAULT FALSE"))


@migration(25, "password_issue_and_search_text")
def m025_password_issue_and_search_text(conn: Connection) -> None:
    """``users.password_set_at``: when the account's password was last set (a one-time password
    expires ``[annotation.sign_in] one_time_password_hours`` after it; before this migration the
    account's ``created_at`` stands in). ``tasks.search_text``: the task's id, reference and text as
    *My items* searches them (:func:`prefkit.curation.store.common.search_text`: NFKC, case-folded),
    filled here for the tasks already there."""
    conn.execute(text("ALTER TABLE users ADD COLUMN password_set_at TEXT"))
    conn.execute(text("ALTER TABLE tasks ADD COLUMN search_text TEXT"))
    page = text(
        "SELECT task_id, item_ref, payload_json FROM tasks WHERE task_id > :last ORDER BY task_id LIMIT 2000"
    )
    rows = conn.execute(page, {"last": ""}).all()
    while rows:  # a page at a time, in task id order: a big project is never read whole
        fill = [{"t": tid, "s": search_text(tid, ref, json.loads(payload))} for tid, ref, payload in rows]
        conn.execute(text("UPDATE tasks SET search_text = :s WHERE task_id = :t"), fill)
        rows = conn.execute(page, {"last": rows[-1][0]}).all()


@migration(28, "kind_declarations")
def m028_kind_declarations(conn: Connection) -> None:
    """``kind_declarations``: a declared task kind (``kinds/<name>.toml``) as it was when its first
    label was recorded, written in that label's transaction; a later declaration that would
    reinterpret the labels is refused against it."""
    md = MetaData()
    Table(
        "kind_declarations",
        md,
        Column("kind", Text, primary_key=True),
        _json("declaration_json", nullable=False),
        Column("pinned_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(29, "llm_structured_forms")
def m029_llm_structured_forms(conn: Connection) -> None:
    """``llm_forms``: the structured-output form an endpoint took for a model (``[llm] structured =
    "auto"`` starts there next time; a refusal deletes the row). The endpoint is scheme, host, port and
    path only, never a user, password or query."""
    md = MetaData()
    Table(
        "llm_forms",
        md,
        Column("endpoint", Text, primary_key=True),
        Column("model", Text, primary_key=True),
        Column("form", Text, nullable=False),
        Column("updated_at", Text, nullable=False),
    )
    md.create_all(conn)


@migration(26, "guidelines_versions")
def m026_guidelines_versions(conn: Connection) -> None:
    """Versions of each kind's guidelines and the version every label was made under.

    ``guidelines_versions`` keeps each text a kind's guidelines ever had (``version``: the first 12 hex
    characters of its SHA-256) with the time prefkit first saw it; ``label_events.guidelines_version``
    and ``assignments.guidelines_version`` name the version current when the item was drawn (NULL:
    made before versions were recorded). ``assignments.recalibration`` marks an item queued again
    after a guidelines change (``prefkit tasks recalibrate``): its answer is compared with the
    decision and is never a vote."""
    md = MetaData()
    Table(
        "guidelines_versions",
        md,
        Column("kind", Text, primary_key=True),
        Column("version", Text, primary_key=True),
        Column("text", Text, nullable=False),
        Column("first_seen_at", Text, nullable=False),
    )
    md.create_all(conn)
    for ddl in (
        "ALTER TABLE label_events ADD COLUMN guidelines_version TEXT",
        "ALTER TABLE assignments ADD COLUMN guidelines_version TEXT",
        "ALTER TABLE assignments ADD COLUMN recalibration TEXT",
    ):
        conn.execute(text(ddl))


@migration(27, "repeats")
def m027_repeats(conn: Connection) -> None:
    """``repeats``: an item shown again to the annotator who labelled it, written when shown (``event_id``
    pending, as an assignment's) and answered once (``action`` label, or pass; NULL while open)."""
    md = MetaData()
    Table(
        "repeats",
        md,
        Column("task_id", Text, primary_key=True),
        Column("annotator", Text, primary_key=True),
        Column("kind", Text, nullable=False),
        Column("event_id", Text, nullable=False, unique=True),
        Column("shown_at", Text, nullable=False),
        Column("action", Text),
        _json("values_json"),
        Column("comment", Text),
        Column("time_spent_s", Float),
        Column("source", Text, nullable=False),
        Column("created_at", Text),
        Index("ix_repeats_annotator", "annotator", "kind", "action"),
    )
    md.create_all(conn)
