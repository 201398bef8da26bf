"""Numbered schema migrations of the project store, applied in order on open.

Each migration declares its own tables with SQLAlchemy Core so the DDL stays portable (SQLite is the
embedded default; PostgreSQL must be a configuration change), columns in the short notation of
:func:`_columns`. A released migration never changes the DDL it runs (tidying its source must leave
that identical on both backends): change the schema with a new, higher-numbered one. Migration numbers
are reserved per area: m001 core, m002 LLM layer, m003 annotation app, m004 releases, m005 Label Studio
bridge, m006 generation, m007 verification (instance → session links), m008 evaluation, m012 Label
Studio push leases, m014/m015 packed turns of bulk imports, m016 adaptive overlap, m020 judge-assisted
labelling (suggestions, the arm a label was made in), m022 the maintainers' audit log, m023 crowd
studies, m026 guidelines versions and recalibration, m027 repeats, m029 the structured-output form an
endpoint takes.
Every migration lives in this module, so opening any store applies the same, complete list.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

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


_TYPES = {"int": Integer, "float": Float, "bool": Boolean}
_FLAGS = {
    "pk": ("primary_key", True),
    "auto": ("autoincrement", True),
    "manual": ("autoincrement", False),
    "unique": ("unique", True),
    "index": ("index", True),
}
#: The link to how a row was made, a column of every generated record's table.
_PROV = "provenance_id null -> provenance.provenance_id"


def _columns(spec: str) -> list[Column]:
    """The columns ``spec`` lists, in order: ``"name [int|float|bool] [pk] [auto|manual] [null] [unique]
    [index] [-> table.column], ..."``. A column is TEXT and NOT NULL unless its words say otherwise:
    ``null`` makes it nullable, ``-> t.c`` a foreign key, ``auto``/``manual`` turns autoincrement on/off."""
    columns = []
    for definition in spec.split(","):
        name, *words = definition.split()
        args: list[Any] = [_TYPES[words.pop(0)] if words and words[0] in _TYPES else Text]
        kwargs: dict[str, Any] = {}
        if "->" in words:
            args.append(ForeignKey(words.pop(words.index("->") + 1)))
            words.remove("->")
        if "null" in words:
            words.remove("null")
        elif "pk" not in words:
            kwargs["nullable"] = False
        kwargs.update(_FLAGS[word] for word in words)  # KeyError: a word this grammar does not know
        columns.append(Column(name, *args, **kwargs))
    return columns


def _table(md: MetaData, name: str, columns: str, *constraints: Index | UniqueConstraint) -> Table:
    return Table(name, md, *_columns(columns), *constraints)


def _run(conn: Connection, *statements: str) -> None:
    for statement in statements:
        conn.execute(text(statement))


def _add_columns(conn: Connection, table: str, columns: str) -> None:
    """``ALTER TABLE table ADD COLUMN ...`` for each of the comma-separated ``columns``, one at a time."""
    _run(conn, *(f"ALTER TABLE {table} ADD COLUMN {column.strip()}" for column in columns.split(",")))


@migration(1, "initial")
def m001_initial(conn: Connection) -> None:
    md = MetaData()
    _table(md, "meta", "key pk, value")
    _table(
        md,
        "sources",
        "source_id pk, kind, path, sha256, rows int, licence null, imported_at",
        UniqueConstraint("kind", "sha256"),
    )
    _table(md, "provenance", "provenance_id pk, source, model null, offline bool, record_json")
    _table(md, "personas", f"persona_id pk, record_json, schema_version, {_PROV}, created_at")
    _table(
        md,
        "context_factors",
        "factor_id pk, persona_id index -> personas.persona_id, position int, record_json, schema_version,"
        f" {_PROV}",
    )
    _table(md, "session_plans", f"persona_id pk -> personas.persona_id, record_json, schema_version, {_PROV}")
    _table(
        md,
        "dialogues",
        "dialogue_id pk, origin, persona_id null index, session_index int null,"
        " source_id null -> sources.source_id, meta_json null, needs_reverification bool, schema_version,"
        f" {_PROV}, created_at",
    )
    _table(
        md,
        "turns",
        "dialogue_id pk -> dialogues.dialogue_id, turn_index int pk, role, content, extra_json null",
    )
    _table(
        md,
        "turn_revisions",
        "seq int pk auto, revision_id unique, dialogue_id index, turn_index int, original, revised,"
        " author -> users.username, reason null, created_at",
    )
    _table(
        md,
        "sessions",
        "session_id pk -> dialogues.dialogue_id, persona_id index, session_index int, record_json,"
        f" schema_version, {_PROV}",
    )
    _table(
        md,
        "instances",
        "instance_id pk, persona_id index, instance_type, position int, record_json, schema_version,"
        f" source_id null -> sources.source_id, {_PROV}",
    )
    _table(
        md,
        "packets",
        "session_id pk, dialogue_id -> dialogues.dialogue_id, source_id null -> sources.source_id,"
        " position int, extra_json, schema_version",
    )
    _table(
        md,
        "memories",
        "memory_pk int pk auto, dialogue_id -> dialogues.dialogue_id,"
        " origin,"  # gold | candidate | annotator
        " source_model,"  # '' for gold
        " position int, memory_id null, record_json null, raw_json, valid bool, problems_json null,"
        f" schema_version, {_PROV}",
        UniqueConstraint("dialogue_id", "origin", "source_model", "position"),
        Index("ix_memories_dialogue_origin", "dialogue_id", "origin"),
    )
    _table(
        md,
        "preference_pairs",
        f"pair_id pk, checklist_item, candidate, origin, instance_id null, meta_json null, {_PROV}, created_at",
    )
    _table(md, "failures", "seq int pk auto, stage, item, error, raw null, created_at")
    _table(md, "users", "username pk, role, password_hash, email null unique, active bool, created_at")
    _table(md, "batches", "batch_id pk, kind, status, created_at")
    _table(
        md,
        "tasks",
        "task_id pk, kind index, item_ref, payload_json, batch_id -> batches.batch_id, overlap int,"
        " is_gold bool, gold_answer_json null, schema_version, created_at",
        UniqueConstraint("kind", "item_ref"),
    )
    _table(
        md,
        "assignments",
        "task_id pk -> tasks.task_id, annotator pk -> users.username, position int, assigned_at",
        Index("ix_assignments_annotator_position", "annotator", "position"),
    )
    _table(
        md,
        "label_events",
        "seq int pk auto, event_id unique, task_id -> tasks.task_id, kind, annotator -> users.username,"
        " action, values_json, comment null, time_spent_s float null, supersedes null, source,"
        " schema_version, created_at",
        Index("ix_label_events_task", "task_id"),
        Index("ix_label_events_annotator", "annotator", "seq"),
    )
    _table(
        md,
        "adjudications",
        "seq int pk auto, adjudication_id unique, task_id index -> tasks.task_id,"
        " maintainer -> users.username, values_json, note, supersedes null, schema_version, created_at",
    )
    md.create_all(conn)


@migration(2, "llm_layer")
def m002_llm_layer(conn: Connection) -> None:
    """The LLM layer's response cache, per-stage call ledger and Batch API jobs (curation/store/llm.py)."""
    md = MetaData()
    _table(
        md,
        "llm_cache",
        "key pk, model, stage, text, prompt_tokens int, completion_tokens int, cached_tokens int,"
        " cost_usd float, meta_json, created_at",
    )
    _table(
        md,
        "llm_ledger",
        "stage pk, item pk, key pk, model, status, error null, attempts int, from_cache bool,"
        " prompt_tokens int, completion_tokens int, cached_tokens int, cost_usd float, updated_at",
        Index("ix_llm_ledger_key", "key"),
    )
    _table(
        md,
        "llm_batches",
        "batch_id pk, stage index, status, input_file_id, output_file_id null, keys_json, endpoint,"
        " created_at, updated_at",
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
    _add_columns(conn, "tasks", "n_assigned INTEGER NOT NULL DEFAULT 0")
    _add_columns(conn, "assignments", "event_id TEXT, shown_at TEXT, done_at TEXT, kind TEXT, batch_id TEXT")
    _run(
        conn,
        "CREATE INDEX ix_tasks_queue ON tasks (kind, is_gold, n_assigned, task_id)",
        "CREATE INDEX ix_tasks_kind_overlap ON tasks (kind, overlap)",
        "CREATE INDEX ix_assignments_open ON assignments (annotator, kind, done_at, position)",
        "CREATE INDEX ix_assignments_progress ON assignments (annotator, kind, batch_id, done_at)",
        "CREATE INDEX ix_assignments_task ON assignments (task_id)",
        "CREATE INDEX ix_label_events_annotator_task ON label_events (annotator, task_id)",
        "CREATE INDEX ix_label_events_annotator_created ON label_events (annotator, created_at, kind, supersedes)",
    )


@migration(4, "releases")
def m004_releases(conn: Connection) -> None:
    """The log of cut releases, and the per-project salt that pseudonymises annotators in releases."""
    md = MetaData()
    _table(
        md,
        "releases",
        "version pk, created_at, path, manifest_sha256, data_sha256, gates_passed bool, override_reason null",
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
    _table(md, "ls_projects", "url pk, kind pk, ls_project_id int, title, created_at")
    _table(
        md,
        "ls_tasks",
        "url pk, ls_task_id int pk, ls_project_id int, task_id -> tasks.task_id, pushed_at",
        UniqueConstraint("url", "ls_project_id", "task_id"),
    )
    _table(
        md,
        "ls_annotations",
        "url pk, ls_annotation_id int pk, ls_project_id int index, task_id -> tasks.task_id,"
        " annotator -> users.username, event_id, updated_at, withdrawn bool, pulled_at",
    )
    md.create_all(conn)


@migration(6, "generation")
def m006_generation(conn: Connection) -> None:
    md = MetaData()
    md.reflect(conn, only=["personas", "provenance"])  # the tables the new foreign keys point at
    _table(
        md,
        "checklists",
        "persona_id pk -> personas.persona_id, preference_key pk, preference, items_json, schema_version,"
        f" {_PROV}",
    )
    # No foreign key: a persona can be dropped before it is ever written (its writer kept failing).
    _table(md, "generation_drops", "persona_id pk, stage, reason, created_at")
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
    _table(
        md,
        "instance_sessions",
        "instance_id pk -> instances.instance_id, position int pk,"
        " session_id index -> dialogues.dialogue_id, role, relevant bool",
    )
    # A session's earlier dialogues: `prefkit generate --repair` replaces a failed session's
    # dialogue with a new one and keeps the old one here (turns as they stood, and why).
    _table(
        md,
        "session_versions",
        "session_id pk -> dialogues.dialogue_id, version int pk, turns_json, reason, replaced_at",
    )
    md.create_all(conn)


@migration(8, "evaluation")
def m008_evaluation(conn: Connection) -> None:
    """Evaluation runs (configuration, models, prompt hashes, release version) and their items.

    ``benchmark``: cupid | alpsbench; ``task``: inference | generation | task1..task4; ``model``: NULL
    when a predictions file was scored; ``status``: running | complete; an item's ``grp``: its instance
    type, distractor level or ability."""
    md = MetaData()
    _table(
        md,
        "eval_runs",
        "run_id pk, benchmark, task, model null, judge_model null, backend, offline bool, release_dir,"
        " release_name null, release_version null, release_digest, config_name, settings_json,"
        " prompts_json, status, summary_json null, created_at, updated_at",
    )
    _table(md, "eval_items", "run_id pk -> eval_runs.run_id, item_key pk, grp, record_json")
    md.create_all(conn)


@migration(10, "alpsbench_tasks")
def m010_alpsbench_tasks(conn: Connection) -> None:
    """AlpsBench task rows built by prefkit (tasks 2-4), in the public layout's row shape: ``track`` is
    task2, task3_d100 .. task3_d1000 or task4_ability1..5; ``checks_json`` the automatic checks
    (leakage, segment control) and their outcome."""
    md = MetaData()
    md.reflect(conn, only=["provenance"])
    _table(
        md,
        "alps_tasks",
        "track pk, benchmark_id pk, session_id index, input_json, gold_json, checks_json null,"
        f" {_PROV}, created_at",
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
    _table(
        md,
        "sign_in_log",
        "seq int pk auto, username, client, outcome, created_at",
        Index("ix_sign_in_log_user", "username", "seq"),
        Index("ix_sign_in_log_client", "client", "seq"),
    )
    _table(
        md,
        "assignment_releases",
        "seq int pk auto, task_id, annotator, kind, assigned_at, shown_at null, reason, released_at",
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
    _table(md, "ls_push_leases", "url pk, kind pk, token, host, pid int, started_at, renewed_at")
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
    _table(md, "packed_turns", "dialogue_id pk -> dialogues.dialogue_id, n_turns int, turns_json")
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
    packs = _table(md, "turn_packs", "pack_id int pk manual, n_turns int, turns_json")
    links = _table(
        md,
        "dialogue_packs",
        "dialogue_id pk -> dialogues.dialogue_id, part int pk manual, pack_id int unique -> turn_packs.pack_id",
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
    _table(
        md,
        "suggestion_runs",
        "run_id pk, kind, model, backend, offline bool, prompt_hash, seed int, settings_json, created_at",
    )
    _table(
        md,
        "suggestions",
        "seq int pk auto, suggestion_id unique, run_id -> suggestion_runs.run_id, task_id -> tasks.task_id,"
        " kind, values_json, detail_json, created_at",
        UniqueConstraint("run_id", "task_id", name="uq_suggestions_run_task"),
        Index("ix_suggestions_task", "task_id", "seq"),
    )
    md.create_all(conn)
    _add_columns(conn, "label_events", "assist_arm TEXT, suggestion_id TEXT")


@migration(16, "adaptive_overlap")
def m016_adaptive_overlap(conn: Connection) -> None:
    """Adaptive overlap on ``tasks``: ``overlap`` stays the number of annotators the task goes to *now*
    (its current target, which the queues read); ``overlap_min`` / ``overlap_max`` bound it (NULL:
    fixed overlap) and ``audit`` marks the items that always get ``overlap_max``."""
    _add_columns(
        conn, "tasks", "overlap_min INTEGER, overlap_max INTEGER, audit BOOLEAN NOT NULL DEFAULT FALSE"
    )


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
    _table(
        md,
        "app_sessions",
        "session_id pk, username, client null, created_at, expires_at, revoked_at null",
        Index("ix_app_sessions_user", "username"),
    )
    _table(md, "drafts", "annotator pk, task_id pk, event_id, state_json, updated_at")
    md.create_all(conn)


@migration(21, "labelstudio_suggestions")
def m021_labelstudio_suggestions(conn: Connection) -> None:
    """``ls_tasks`` gains ``suggestion_id``: the newest suggestion a push has handled for the Label
    Studio task (sent with it, added to it later, or left out because people had already answered it).
    NULL: none yet, so the next push compares with what the task's data in Label Studio says."""
    _add_columns(conn, "ls_tasks", "suggestion_id TEXT")


@migration(22, "audit_log")
def m022_audit_log(conn: Connection) -> None:
    """The maintainers' audit log: one row per action taken on people, work or releases (from the
    app's console pages or the CLI), saying who (a maintainer's user name, or ``shell:<login>`` for a
    command), when, what (``user.disable``, ``tasks.create``, ``release.cut``, ...), on what, and the
    details (JSON; never a password). Rows are only ever added."""
    md = MetaData()
    _table(
        md,
        "audit_log",
        "seq int pk auto, created_at, actor, action, target, detail_json null",
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
    _table(
        md,
        "studies",
        "study_id pk, name, kind, batch_id, platform, items int, gold_share float, screen_below float,"
        " completion_code, screened_out_code, completion_url null, time_limit_minutes float, rules_json,"
        " secret_hash, created_at",
    )
    _table(
        md,
        "study_participants",
        "study_id pk -> studies.study_id, platform_id pk, username unique, platform_session null,"
        " platform_study null, status, arrived_at, finished_at null",
    )
    _table(
        md,
        "study_events",
        "seq int pk auto, study_id, platform_id, event, detail_json null, created_at",
        Index("ix_study_events_study", "study_id", "seq"),
    )
    md.create_all(conn)


@migration(24, "temporary_passwords")
def m024_temporary_passwords(conn: Connection) -> None:
    """``users.password_temporary``: the password was made for the person (``users add
    --generate-password``, the People page) and is good for one thing only, choosing their own at
    their first sign-in; until then it opens no session."""
    _add_columns(conn, "users", "password_temporary BOOLEAN NOT NULL DEFAULT FALSE")


@migration(25, "password_issue_and_search_text")
def m025_password_issue_and_search_text(conn: Connection) -> None:
    """``users.password_set_at``: when the account's password was last set (a one-time password
    expires ``[annotation.sign_in] one_time_password_hours`` after it; before this migration the
    account's ``created_at`` stands in). ``tasks.search_text``: the task's id, reference and text as
    *My items* searches them (:func:`prefkit.curation.store.common.search_text`: NFKC, case-folded),
    filled here for the tasks already there."""
    _add_columns(conn, "users", "password_set_at TEXT")
    _add_columns(conn, "tasks", "search_text TEXT")
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
    _table(md, "kind_declarations", "kind pk, declaration_json, pinned_at")
    md.create_all(conn)


@migration(29, "llm_structured_forms")
def m029_llm_structured_forms(conn: Connection) -> None:
    """``llm_forms``: the structured-output form an endpoint took for a model (``[llm] structured =
    "auto"`` starts there next time; a refusal deletes the row). The endpoint is scheme, host, port and
    path only, never a user, password or query."""
    md = MetaData()
    _table(md, "llm_forms", "endpoint pk, model pk, form, updated_at")
    md.create_all(conn)


@migration(30, "label_firsts_index")
def m030_label_firsts_index(conn: Connection) -> None:
    """An index that holds what counting an annotator's first labels of a kind reads (the repeats'
    share, asked each time their queue empties): 15,000 labels counted in an index range instead of
    15,000 row and task look-ups (~150 ms a chunk on 2 cores)."""
    _run(
        conn,
        "CREATE INDEX ix_label_events_firsts ON label_events (annotator, kind, action, supersedes, task_id)",
    )


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
    _table(md, "guidelines_versions", "kind pk, version pk, text, first_seen_at")
    md.create_all(conn)
    _add_columns(conn, "label_events", "guidelines_version TEXT")
    _add_columns(conn, "assignments", "guidelines_version TEXT, recalibration TEXT")


@migration(27, "repeats")
def m027_repeats(conn: Connection) -> None:
    """``repeats``: an item shown again to the annotator who labelled it, written when shown (``event_id``
    pending, as an assignment's) and answered once (``action`` label, or pass; NULL while open)."""
    md = MetaData()
    _table(
        md,
        "repeats",
        "task_id pk, annotator pk, kind, event_id unique, shown_at, action null, values_json null,"
        " comment null, time_spent_s float null, source, created_at null",
        Index("ix_repeats_annotator", "annotator", "kind", "action"),
    )
    md.create_all(conn)
