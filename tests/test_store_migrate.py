"""``prefkit store migrate``: a SQLite project with a row in every table moves to PostgreSQL,
verified, and the release cut from PostgreSQL has the same bytes as the one cut from SQLite."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fixtures_alps import write_packets
from prefkit.cli import cli
from prefkit.curation.annotation import workflow
from prefkit.curation.project import Project
from prefkit.curation.store import ProjectStore, StoreError, migrate_store
from prefkit.curation.store.backend import make_engine
from prefkit.schemas import LabelEvent, utcnow
from sqlalchemy import func, inspect, select
from test_release_support import cut, data_bytes, labelled_project

pytestmark = pytest.mark.postgres

#: Every table of the store when this test was written: each must hold rows before the move.
TABLES = {
    "_migrations",
    "meta",
    "sources",
    "provenance",
    "personas",
    "context_factors",
    "session_plans",
    "dialogues",
    "turns",
    "turn_revisions",
    "sessions",
    "instances",
    "packets",
    "memories",
    "preference_pairs",
    "failures",
    "users",
    "batches",
    "tasks",
    "assignments",
    "label_events",
    "adjudications",
    "llm_cache",
    "llm_ledger",
    "llm_batches",
    "releases",
    "ls_projects",
    "ls_tasks",
    "ls_annotations",
    "checklists",
    "generation_drops",
}


def build_everything(project: Project, tmp) -> None:
    """One project holding a row of every kind: generated content with its LLM cache and ledger,
    imported AlpsBench packets and CUPID instances, tasks, queues, labels, an adjudication, a turn
    revision, a failure, a dropped persona, Label Studio maps, an LLM batch and a cut release."""
    from prefkit.demo import _generate
    from prefkit.pipelines.ingest import alpsbench

    cfg = project.root / "prefkit.toml"
    cfg.write_text(cfg.read_text().replace("allow_offline = false", "allow_offline = true"))
    project.__dict__.pop("config", None)
    store = project.store
    _generate(project, personas=1, seed=0)
    store.content.import_bundle(alpsbench.build_bundle(write_packets(tmp / "packets", 2)))
    made = labelled_project(project, tmp)
    workflow.current_item(project, "ann1", "preference_match")  # an open assignment with its event id
    did = store.content.dialogue_ids("alpsbench")[0]
    store.content.revise_turn(did, 0, "A clearer opening.", author="lead", reason="unnatural")
    store.content.record_failure("generate.sessions", "p-x", "model refused", raw="{}")
    store.generation.drop_persona("p-x", "sessions", "kept failing")
    store.llm.batch_save("batch_1", "sessions", "file_1", ["k1", "k2"], "127.0.0.1")
    url, task_id = "http://127.0.0.1:1", made["tasks"][0].task_id
    store.labelstudio.set_project(url, "preference_match", 7, "prefkit preference_match")
    store.labelstudio.add_tasks(url, 7, {task_id: 70})
    ev = LabelEvent(
        event_id="ls_ev_1",
        task_id=task_id,
        kind="preference_match",
        annotator="ann1",
        values={"coverage": "fully"},
        source="labelstudio",
        created_at=utcnow(),
    )
    store.labels.append_event(ev)
    store.labelstudio.map_annotation(
        url, 7, 700, task_id=task_id, annotator="ann1", event_id=ev.event_id, updated_at=utcnow()
    )
    cut(project, "1.0.0", override="a migration test")  # the library records it in the release log


def test_store_migrate_moves_every_row_verifies_it_and_releases_stay_byte_identical(tmp_path, pg_url):
    project = Project.init(tmp_path / "p")
    build_everything(project, tmp_path)
    before = {name: project.store.count(name) for name in project.store.t}
    assert {name for name, n in before.items() if n > 0} >= TABLES
    old_db, runner = project.database, CliRunner()
    project.close()

    dry = runner.invoke(
        cli, ["store", "migrate", "-p", str(project.root), "--to", pg_url, "--dry-run", "--json"]
    )
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.output)
    assert planned["dry_run"] and {t["table"]: t["rows"] for t in planned["tables"]} == before
    assert Project(project.root).configured_database == "project.db"  # nothing switched
    engine = make_engine(pg_url)
    assert inspect(engine).get_table_names() == []  # nothing written
    engine.dispose()

    out = runner.invoke(cli, ["store", "migrate", "-p", str(project.root), "--to", pg_url])
    assert out.exit_code == 0, out.output
    assert f"copied and verified {sum(before.values())} rows in {len(before)} tables" in out.output

    moved = Project(project.root)
    assert moved.configured_database == pg_url and moved.store.backend == "postgresql"
    assert {name: moved.store.count(name) for name in moved.store.t} == before
    with pytest.raises(StoreError, match="no longer this project's database"):
        ProjectStore(old_db)

    # Releases read PostgreSQL through the same library path: the same state, the same bytes.
    second = cut(moved, "1.0.1", override="a migration test")
    assert data_bytes(second.path) == data_bytes(moved.releases_dir / "1.0.0")

    # Sequences continue after the copied rows; new work goes on as before.
    e = moved.store.t["label_events"]
    with moved.store.read() as conn:
        top = conn.execute(select(func.max(e.c.seq))).scalar()
    item = workflow.current_item(moved, "ann1", "preference_match")  # the item open before the move
    assert item is not None and workflow.submit(moved, "ann1", item, {"coverage": "fully"})
    with moved.store.read() as conn:
        assert conn.execute(select(e.c.seq).where(e.c.event_id == item.event_id)).scalar() == top + 1
    moved.close()


def test_store_migrate_refuses_a_database_that_is_not_empty(tmp_path, pg_url):
    ProjectStore(pg_url).close()  # someone's tables are already there
    project = Project.init(tmp_path / "p")
    project.store.accounts.add_user("ann", "annotator", "pass-word-1")
    with pytest.raises(StoreError, match="is not empty"):
        migrate_store(project, pg_url)
    assert project.configured_database == "project.db" and project.store.count("users") == 1
    project.close()


def test_a_project_moves_to_postgres_and_back_to_a_sqlite_file(tmp_path, pg_url):
    project = Project.init(tmp_path / "p")
    labelled_project(project, tmp_path)
    before = {name: project.store.count(name) for name in project.store.t}
    assert migrate_store(project, pg_url).switched and project.store.backend == "postgresql"
    dry = migrate_store(project, "back.db", dry_run=True)
    assert dry.total_rows == sum(before.values()) and not (project.root / "back.db").exists()
    back = migrate_store(project, "back.db")
    assert all(t.verified for t in back.tables) and project.store.backend == "sqlite"
    assert project.configured_database == str(project.root / "back.db")
    assert {name: project.store.count(name) for name in project.store.t} == before
    with pytest.raises(StoreError, match="no longer this project's database"):
        ProjectStore(pg_url)
    project.close()
