"""``prefkit status`` counts a SQLite project without the store (:mod:`prefkit.curation.store.glance`)
and must say exactly what the store says; where only the store knows (a bulk import staging, a moved
database, a database from another version, a missing file, PostgreSQL) it asks the store."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import wildchat_fixture as fx
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import workflow
from prefkit.curation.project import Project
from prefkit.curation.store import COUNTS, LATEST_MIGRATION, MOVED_TO, STAGING, ImportBundle, glance_counts
from prefkit.curation.store.migrations import MIGRATIONS, migration
from prefkit.demo import build_demo
from prefkit.pipelines.ingest import alpsbench
from prefkit.schemas.curation import Provenance
from test_startup import CHILD  # a `prefkit` process that prints the modules it imported


def cli_status(project: Project) -> dict[str, int]:
    done = CliRunner().invoke(cli, ["status", "--project", str(project.root), "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def modules_of_status(project: Project) -> set[str]:
    """The top-level packages a real ``prefkit status`` process imported."""
    args = [sys.executable, "-c", CHILD, "status", "--project", str(project.root), "--json"]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {m.split(".")[0] for m in json.loads(done.stdout.splitlines()[-1])}


@pytest.fixture(scope="module")
def full_project(tmp_path_factory, fixture_packets) -> Project:
    """Something in every table status counts: a demo project (personas, sessions, instances, tasks,
    users), AlpsBench packets (packets, gold and candidate memories), a WildChat ingest (turns held in
    packs) and labels, skips and an adjudication."""
    tmp = tmp_path_factory.mktemp("status")
    project = build_demo(tmp / "demo", personas=1, seed=3, log=lambda _m: None)
    project.store.content.import_bundle(alpsbench.build_bundle(fixture_packets))
    fx.ingest_clean(project.store, tmp)
    for who in ("alice", "bob"):
        item = workflow.current_item(project, who, "memory_verify")
        assert item is not None
        workflow.skip(project, who, item, "not sure")
    item = workflow.current_item(project, "carol", "preference_expressed")
    assert item is not None
    workflow.flag(project, "carol", item, "the dialogue is cut off")
    return project


def test_status_counts_what_the_store_counts_and_does_not_load_sqlalchemy(full_project):
    store = full_project.store
    expected = store.status()
    assert list(expected) == [name for name, _table, _where in COUNTS]
    # every count is exercised: the packs add turns, both memory origins and the label log have rows
    assert expected["turns"] > store.count("turns") > 0
    for name in (
        "personas",
        "sessions",
        "instances",
        "packets",
        "memories_gold",
        "memories_candidate",
        "users",
        "tasks",
        "label_events",
        "dialogues",
    ):
        assert expected[name] > 0, name
    assert glance_counts(full_project.database) == expected
    assert cli_status(full_project) == expected
    assert "sqlalchemy" not in modules_of_status(full_project)


def test_the_glance_only_reads(full_project):
    db = Path(full_project.database)
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    assert glance_counts(str(db)) is not None
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before
    assert glance_counts(str(db.with_name("absent.db"))) is None
    assert not db.with_name("absent.db").exists()  # never created


def test_a_writer_holding_the_lock_does_not_hold_up_the_glance(project):
    """A WAL reader sees the last committed state while a write transaction is open."""
    db = project.database
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO failures (stage, item, error, created_at) VALUES ('t', 'i', 'e', 'now')")
    try:
        assert glance_counts(db)["failures"] == 0
    finally:
        writer.execute("COMMIT")
        writer.close()
    assert glance_counts(db)["failures"] == 1 == project.store.status()["failures"]


def _staging(project: Project) -> None:
    """A bulk import that is still writing: its dialogue is in the table but hidden from every count."""
    bulk = project.store.content.bulk_dialogues("wildchat").__enter__()
    bulk.add_packs([2], ['[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]'])
    bulk.start_source(ImportBundle("wildchat", "w.jsonl", "c" * 64, 1, Provenance(source="test")))
    bulk.add_dialogues(pa.record_batch({"dialogue_id": ["wc_staged"], "meta": ["{}"], "n_turns": [2]}))


def _newer_database(project: Project) -> None:
    """A database a later prefkit migrated further."""
    with sqlite3.connect(project.database) as raw:
        raw.execute("INSERT INTO _migrations VALUES (?, 'from_the_future', 'now')", (LATEST_MIGRATION + 1,))


def test_where_only_the_store_knows_status_asks_it(project):
    _staging(project)
    raw = sqlite3.connect(project.database)
    assert raw.execute("SELECT count(*) FROM dialogues").fetchone()[0] == 1
    assert raw.execute("SELECT count(*) FROM meta WHERE key LIKE ?", (STAGING + "%",)).fetchone()[0] == 1
    raw.close()
    assert glance_counts(project.database) is None
    counts = cli_status(project)
    assert counts == project.store.status()
    assert counts["dialogues"] == 0 and counts["turns"] == 0  # the staged rows stay hidden
    assert "sqlalchemy" in modules_of_status(project)


def test_a_database_of_another_version_is_counted_by_the_store(project):
    _newer_database(project)
    assert glance_counts(project.database) is None
    assert cli_status(project) == project.store.status()


def test_a_moved_database_is_the_stores_error(project):
    project.store.set_meta(MOVED_TO, "postgresql://elsewhere/db")
    assert glance_counts(project.database) is None
    done = CliRunner().invoke(cli, ["status", "--project", str(project.root)])
    assert done.exit_code == 1
    assert "is no longer this project's database" in done.output


def test_a_missing_database_is_created_by_the_store_as_before(project):
    project.close()
    for suffix in ("", "-wal", "-shm"):
        Path(project.database + suffix).unlink(missing_ok=True)
    counts = cli_status(project)
    assert set(counts.values()) == {0} and Path(project.database).is_file()
    assert glance_counts(project.database) == counts


@pytest.mark.postgres
def test_a_postgresql_project_is_counted_by_the_store(tmp_path, pg_url):
    project = Project.init(tmp_path / "pg", database=pg_url)
    project.store.accounts.add_user("alice", "annotator", "password-123")
    assert glance_counts(project.database) is None
    assert cli_status(project) == project.store.status()
    assert cli_status(project)["users"] == 1
    project.close()


def test_the_glance_expects_the_newest_migration():
    assert max(number for number, _name, _fn in MIGRATIONS) == LATEST_MIGRATION
    with pytest.raises(RuntimeError, match="raise LATEST_MIGRATION"):
        migration(LATEST_MIGRATION + 1, "unannounced")(lambda conn: None)
    assert max(number for number, _name, _fn in MIGRATIONS) == LATEST_MIGRATION
