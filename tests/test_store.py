"""The project store on both backends (SQLite, PostgreSQL): migrations, concurrent readers and
writers, append-only events, revisions. ``database`` and ``any_project`` run each test on both."""

import time

import pytest
from conftest import Forked
from prefkit.curation.project import Project
from prefkit.curation.store import PreferencePair, ProjectStore, StoreError
from prefkit.curation.store.migrations import MIGRATIONS
from prefkit.schemas import LabelEvent, utcnow
from sqlalchemy import text


def test_migrations_apply_from_empty_and_only_once(database):
    store = ProjectStore(database)
    applied = store.applied_migrations()
    assert applied == [f"m{n:03d}_{name}" for n, name, _ in MIGRATIONS]
    assert store.migrate() == []  # a second open applies nothing
    assert ProjectStore(database).applied_migrations() == applied
    store.close()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path):
    store = ProjectStore(tmp_path / "p.db")
    with store.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
    store.close()


def test_init_is_idempotent_and_keeps_user_config(tmp_path):
    project = Project.init(tmp_path / "x", name="first")
    cfg = project.root / "prefkit.toml"
    cfg.write_text(cfg.read_text().replace('name = "first"', 'name = "renamed"'))
    project.close()
    again = Project.init(tmp_path / "x", name="second")
    assert again.name == "renamed"
    assert (again.guidelines_dir / "memory_verify.md").read_text().startswith("# Memory verification")
    again.close()


def test_opening_a_non_project_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="not a prefkit project"):
        Project(tmp_path)


def _writer(db, n, go):
    store = ProjectStore(db)
    go.wait(60)  # start writing only once the reader is open, so it can watch the writes happen
    for i in range(n):
        store.content.record_failure("stage", f"item{i}", "boom")
        time.sleep(0.002)
    store.close()


def test_a_second_process_reads_while_the_first_writes(database):
    db = database
    ProjectStore(db).close()
    ctx = Forked(__name__)
    go = ctx.Event()
    proc = ctx.Process(target=_writer, args=(str(db), 300, go))
    proc.start()
    reader = ProjectStore(db)
    go.set()
    seen = []
    while proc.is_alive():
        seen.append(reader.count("failures"))  # never blocks, never errors
        time.sleep(0.005)
    proc.join()
    assert proc.exitcode == 0
    assert seen == sorted(seen)  # monotone: readers see committed prefixes only
    assert reader.count("failures") == 300
    assert any(0 < s < 300 for s in seen), "reader should observe the writer mid-way"
    reader.close()


def _event(task_id="t1", annotator="ann", event_id="e1", **kw):
    return LabelEvent(
        event_id=event_id,
        task_id=task_id,
        kind="preference_match",
        annotator=annotator,
        values={"coverage": "fully"},
        created_at=utcnow(),
        **kw,
    )


@pytest.fixture
def labelled(any_project):
    from prefkit.curation.annotation.task_kinds import get_kind

    store = any_project.store
    store.accounts.add_user("ann", "annotator", "correct horse")
    store.content.add_preference_pairs(
        [PreferencePair("pair1", "Is it short?", "Prefers brevity", "test")],
        provenance=__import__("schemas").Provenance(source="test"),
    )
    kind = get_kind("preference_match")
    task = kind.build_tasks(store, overlap=3, batch="b1")[0]
    store.labels.add_tasks([task])
    return store, task


def test_submit_is_idempotent_and_edits_append(labelled):
    store, task = labelled
    assert store.labels.append_event(_event(task.task_id)) is True
    assert store.labels.append_event(_event(task.task_id)) is False  # double click / retry
    edit = _event(task.task_id, event_id="e2", supersedes="e1")
    edit = edit.model_copy(update={"values": {"coverage": "partially"}})
    assert store.labels.append_event(edit)
    events = store.labels.events(task_id=task.task_id)
    assert [e.event_id for e in events] == ["e1", "e2"]  # the original is kept
    live = store.labels.effective_events("preference_match")
    assert len(live) == 1 and live[0].values == {"coverage": "partially"}


def test_withdrawn_label_leaves_no_effective_label(labelled):
    store, task = labelled
    store.labels.append_event(_event(task.task_id))
    store.labels.append_event(_event(task.task_id, event_id="e9", action="withdraw", supersedes="e1"))
    assert store.labels.effective_events("preference_match") == []
    assert len(store.labels.events()) == 2


def test_events_need_a_real_user_and_task(labelled):
    store, task = labelled
    with pytest.raises(Exception, match="(?i)foreign key"):
        store.labels.append_event(_event(task.task_id, annotator="mallory"))
    with pytest.raises(Exception, match="(?i)foreign key"):
        store.labels.append_event(_event("no-such-task"))
    assert store.labels.events() == []


def test_passwords_are_hashed_and_checked(labelled):
    store, _ = labelled
    with store.read() as conn:
        raw = conn.execute(text("select password_hash from users")).scalar_one()
    assert raw.startswith("$argon2") and "correct horse" not in raw
    assert store.accounts.authenticate("ann", "correct horse").role == "annotator"
    assert store.accounts.authenticate("ann", "wrong") is None
    assert store.accounts.authenticate("nobody", "correct horse") is None
    with pytest.raises(StoreError, match="already exists"):
        store.accounts.add_user("ann", "annotator", "another pass")


def test_outside_the_test_suite_passwords_are_hashed_at_argon2s_real_cost():
    """The suite hashes cheaply (tests/conftest.py); a user's process must not."""
    import subprocess
    import sys

    made = subprocess.run(
        [
            sys.executable,
            "-c",
            "from prefkit.curation.store.accounts import _hasher; print(_hasher.hash('pw'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert made.stdout.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    from prefkit.curation.store import accounts

    assert "m=1024,t=1,p=1$" in accounts._hasher.hash("pw")  # and the suite's is the cheap one


def test_turn_revision_keeps_original_and_flags_dialogue(any_project, fixture_packets):
    from prefkit.pipelines.ingest import alpsbench

    store = any_project.store
    store.content.import_bundle(alpsbench.build_bundle(sorted(fixture_packets.rglob("sess_*.json"))[0]))
    did = store.content.dialogue_ids("alpsbench")[0]
    store.accounts.add_user("rev", "annotator", "password1")
    before = store.content.dialogue(did).turns[0].content
    store.content.revise_turn(did, 0, "A clearer opening.", author="rev", reason="unnatural")
    after = store.content.dialogue(did)
    assert after.turns[0].content == "A clearer opening." and after.needs_reverification
    rev = store.content.revisions(did)[-1]
    assert (rev.original, rev.revised, rev.author) == (before, "A clearer opening.", "rev")
    assert store.content.original_turns(did)[0].content == before


def test_every_migration_applies_without_importing_the_area_mixins(database):
    import subprocess
    import sys

    code = (
        "import sys; from prefkit.curation.store.engine import StoreCore; "
        "print(len(StoreCore(sys.argv[1]).applied_migrations()))"
    )
    out = subprocess.run([sys.executable, "-c", code, database], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(MIGRATIONS) >= 8  # m001-m008 at least (numbers are reserved per area)


def test_a_process_opening_a_sqlite_store_during_a_migration_waits_for_it(tmp_path):
    import subprocess
    import sys

    db = tmp_path / "p.db"
    store = ProjectStore(db)
    code = "import sys; from prefkit.curation.store.engine import StoreCore; print(len(StoreCore(sys.argv[1]).applied_migrations()))"
    with store.write() as conn:  # the write lock a migrating process holds (BEGIN IMMEDIATE)
        conn.execute(text("UPDATE _migrations SET applied_at = applied_at"))
        opener = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)
        assert opener.poll() is None  # waiting for the lock, not failing
    out, _ = opener.communicate(timeout=60)
    assert opener.returncode == 0 and int(out) == len(MIGRATIONS)
    store.close()


def test_stores_at_one_schema_share_its_reflection_and_another_schema_gets_its_own(tmp_path):
    """A SQLite schema is reflected once per process, keyed by its definitions' text: a database whose
    schema differs (one more column) is reflected for itself, never served the other's tables."""
    a, b = ProjectStore(tmp_path / "a.db"), ProjectStore(tmp_path / "b.db")
    assert a.t["tasks"] is b.t["tasks"]  # the same schema: one reflection
    with b.engine.begin() as conn:
        conn.execute(text("ALTER TABLE personas ADD COLUMN note TEXT"))
    b.close()
    c = ProjectStore(tmp_path / "b.db")
    assert "note" in c.t["personas"].c and "note" not in a.t["personas"].c
    assert c.t["personas"] is not a.t["personas"]
    a.close()
    c.close()
