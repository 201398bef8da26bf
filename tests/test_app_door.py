"""At the door and on the queues: user names, sign-in throttling and unlock, idle items back to the
pool, counts that agree, batches of several kinds, who counts as an annotator."""

from __future__ import annotations

import json

import pytest
from appkit import PASSWORD, project_fixtures
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import workflow
from prefkit.curation.project import Project
from prefkit.curation.quality import dashboard
from prefkit.curation.store import StoreError
from prefkit.schemas.common import utcnow

THROTTLE = {
    "free_failures = 3": "free_failures = 2",
    "backoff_s = 2.0": "backoff_s = 60.0",
    "lockout_after = 10": "lockout_after = 4",
    "client_factor = 3": "client_factor = 2",
}


template, project = project_fixtures(n=6, overlap=2)


def run(project: Project, *args: str):
    return CliRunner().invoke(cli, [*args, "--project", str(project.root)])


def throttled(project: Project) -> Project:
    """The same project reopened with a short backoff schedule in its prefkit.toml."""
    project.close()
    path = project.root / "prefkit.toml"
    text = path.read_text(encoding="utf-8")
    for default, short in THROTTLE.items():
        assert default in text
        text = text.replace(default, short)
    path.write_text(text, encoding="utf-8")
    return Project(project.root)


# -- user names ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, why",
    [
        ("ALICE", "already exists"),  # case
        ("\uff41\uff4c\uff49\uff43\uff45", "already exists"),  # fullwidth letters: NFKC makes them "alice"
        ("\u0430lice", "looks like the existing 'alice'"),  # Cyrillic a
        ("b\u043eb", "looks like the existing 'bob'"),  # Cyrillic o
        ("x" * 5000, "at most 64 characters"),
        ("a b", "invalid user name"),
    ],
)
def test_look_alike_and_overlong_names_are_refused(project, name, why):
    with pytest.raises(StoreError, match=why):
        project.store.accounts.add_user(name, "annotator", PASSWORD)
    assert len(project.store.accounts.users()) == 3


def test_names_are_stored_normalized_and_signed_in_case_blind(project):
    project.store.accounts.add_user("  Zoë.Müller ", "annotator", PASSWORD)
    assert project.store.accounts.user("zoë.müller").username == "zoë.müller"
    assert workflow.sign_in(project, "ZOË.MÜLLER", PASSWORD).username == "zoë.müller"


# -- sign-in throttling -------------------------------------------------------------------------------
def test_failures_past_the_free_ones_are_refused_unchecked_even_with_the_right_password(project):
    project = throttled(project)
    for _ in range(2):
        with pytest.raises(workflow.AuthError, match="wrong password"):
            workflow.sign_in(project, "alice", "guess", client="10.0.0.9")
    with pytest.raises(workflow.AuthError, match="wait 60 s"):
        workflow.sign_in(project, "alice", PASSWORD, client="10.0.0.7")  # another address, same name
    outcomes = [r.outcome for r in project.store.accounts.sign_in_log("alice")]
    assert outcomes == ["throttled", "fail", "fail"]
    assert (
        workflow.sign_in(project, "bob", PASSWORD, client="10.0.0.7").username == "bob"
    )  # others unaffected
    project.close()


def test_lockout_is_logged_and_a_maintainer_unlocks_it(project, caplog):
    project = throttled(project)
    with project.store.write() as conn:  # three failures long ago: any backoff is over
        conn.execute(
            project.store.t["sign_in_log"].insert(),
            [
                {
                    "username": "alice",
                    "client": "10.0.0.9",
                    "outcome": "fail",
                    "created_at": "2026-01-01T00:00:00.000000Z",
                }
                for _ in range(3)
            ],
        )
    with pytest.raises(workflow.AuthError, match="wrong password"):
        workflow.sign_in(project, "alice", "guess-again", client="10.0.0.9")  # checked: the fourth failure
    with (
        caplog.at_level("WARNING", logger="prefkit.signin"),
        pytest.raises(workflow.AuthError, match="locked"),
    ):
        workflow.sign_in(project, "alice", PASSWORD, client="10.0.0.8")  # the right password, still locked
    assert "sign-in locked for 'alice' from 10.0.0.8" in caplog.text
    out = run(project, "users", "unlock", "alice")
    assert out.exit_code == 0 and out.output == "unlocked alice\n"
    assert workflow.sign_in(project, "alice", PASSWORD, client="10.0.0.8").username == "alice"
    log = json.loads(run(project, "users", "sign-ins", "alice", "--json").output)
    assert [r["outcome"] for r in log[:4]] == ["ok", "unlock", "locked", "fail"]
    project.close()


def test_one_client_trying_many_names_is_throttled_too(project):
    project = throttled(project)  # client allowance: 2 x 2 free failures
    for name in ("carl", "dora", "erik", "fay"):
        with pytest.raises(workflow.AuthError, match="wrong password"):
            workflow.sign_in(project, name, "guess", client="10.6.6.6")
    with pytest.raises(workflow.AuthError, match="wait"):
        workflow.sign_in(project, "alice", PASSWORD, client="10.6.6.6")
    assert workflow.sign_in(project, "alice", PASSWORD, client="10.0.0.1").username == "alice"
    out = run(project, "users", "unlock", "--client", "10.6.6.6")
    assert out.exit_code == 0
    assert workflow.sign_in(project, "bob", PASSWORD, client="10.6.6.6").username == "bob"
    project.close()


# -- idle items back to the pool ------------------------------------------------------------------------
def idle(project: Project, user: str, when: str = "2026-01-01T00:00:00.000000Z") -> None:
    a = project.store.t["assignments"]
    with project.store.write() as conn:
        conn.execute(a.update().where(a.c.annotator == user).values(assigned_at=when, shown_at=when))


def holders(project: Project) -> tuple[dict[str, int], dict[str, int]]:
    """Per preference_match task: the stored holder count and the assignments that exist."""
    a, t = project.store.t["assignments"], project.store.t["tasks"]
    with project.store.read() as conn:
        stored = dict(conn.execute(t.select().with_only_columns(t.c.task_id, t.c.n_assigned)).all())
        rows = conn.execute(a.select().with_only_columns(a.c.task_id)).scalars().all()
    return stored, {tid: rows.count(tid) for tid in stored}


def test_an_idle_queue_goes_back_to_the_pool_when_someone_else_needs_items(project):
    workflow.current_item(project, "bob", "preference_match")
    idle(project, "bob")
    workflow.current_item(
        project, "alice", "preference_match"
    )  # a new chunk for alice: bob's idle items return
    released = project.store.stale.assignment_releases("bob")
    assert len(released) == 6 and {r.kind for r in released} == {"preference_match"}
    assert workflow.progress(project, "bob")["preference_match"].assigned == 0
    stored, counted = holders(project)
    assert stored == counted  # holder counts match the assignments left


def test_a_busy_queue_is_kept_and_a_command_releases_on_demand(project):
    workflow.current_item(project, "bob", "preference_match")
    assert workflow.release_stale(project) == []  # shown just now: not idle
    out = run(project, "tasks", "release", "--idle-hours", "0", "--annotator", "bob")
    assert out.exit_code == 0 and out.output.startswith("released 6 items from 1 idle queue(s)")
    assert (
        project.store.assignments.open_assignment("bob", "preference_match", 10, 0) is not None
    )  # bob can go on later


def test_a_label_for_an_item_released_while_on_screen_is_kept(project):
    item = workflow.current_item(project, "bob", "preference_match")
    workflow.release_stale(project, hours=0, annotator="bob")
    assert workflow.submit(project, "bob", item, {"coverage": "fully"})
    assert project.store.labels.event(item.event_id).values == {"coverage": "fully"}
    assert workflow.progress(project, "bob")["preference_match"].done == 1


# -- counts, batches, annotators ------------------------------------------------------------------------
def test_counts_brought_up_to_date_equal_counting_again(project):
    workflow.current_item(project, "alice", "preference_match")
    before = workflow.progress(project, "alice")
    seen = project.store.progress.queue_version("alice")[0]
    for _ in range(3):
        item = workflow.current_item(project, "alice", "preference_match")
        workflow.submit(project, "alice", item, {"coverage": "fully"})
    item = workflow.current_item(project, "alice", "preference_match")
    workflow.skip(project, "alice", item, "cannot judge")
    fresh = workflow.progress(project, "alice")
    assert before["preference_match"].assigned == fresh["preference_match"].assigned
    assert workflow.progress_after(project, "alice", before, seen, utcnow()[:10]) == fresh
    assert fresh["preference_match"].today == fresh["preference_match"].done == 4
    assert fresh["preference_expressed"].today == 0  # today counts the same kind as done


def test_counts_across_a_new_chunk_equal_counting_again(project):
    """A new chunk adds its items to the counts kept (no count of the whole queue), then the events since."""
    chunk = lambda: project.store.assignments.open_assignment("alice", "preference_match", 2, 0)  # noqa: E731
    chunk()
    version = project.store.progress.queue_version("alice")
    memo = workflow.progress_memo(project, "alice", None, version)
    for _ in range(3):  # the chunk of two, then one of the next
        if _ == 2:
            chunk()
        workflow.submit(
            project,
            "alice",
            workflow.current_item(project, "alice", "preference_match"),
            {"coverage": "fully"},
        )
    now = project.store.progress.queue_version("alice")
    assert now[1] > version[1]  # a new chunk was assigned
    kept = workflow.progress_memo(project, "alice", memo, now).counts
    assert kept == workflow.progress(project, "alice")
    assert (kept["preference_match"].assigned, kept["preference_match"].done) == (4, 3)


def test_a_batch_lists_every_kind_it_holds_and_annotators_are_people_who_labelled(project):
    assert [(b.batch_id, b.kinds) for b in project.store.labels.batches()] == [
        ("default", "preference_expressed, preference_match")
    ]
    assert dashboard.overview(project.store)["annotators"] == 0  # accounts alone are not annotators
    item = workflow.current_item(project, "alice", "preference_match")
    workflow.submit(project, "alice", item, {"coverage": "fully"})
    assert dashboard.overview(project.store)["annotators"] == 1
