"""The maintainer's console below the pages: people, work and the audit log through the library
functions the People and Work pages call, and the ``prefkit`` commands that are shells over the same
functions (in-process, CliRunner), reading the store back afterwards."""

from __future__ import annotations

import json

import pytest
from appkit import PASSWORD, project_fixtures, seed_pairs
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import people, sessions, work, workflow
from prefkit.curation.store import StoreError
from prefkit.schemas.common import PrefkitError
from test_release_support import add_users

template, project = project_fixtures(n=3, overlap=2)


def run(project, *args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, [*args, "--project", str(project.root)], input=stdin)


def test_the_last_active_maintainer_cannot_be_disabled_or_demoted_from_the_shell_or_the_library(project):
    out = run(project, "users", "disable", "maya")
    assert out.exit_code == 1 and out.output.startswith("error: maya is the last active maintainer")
    out = run(project, "users", "role", "maya", "annotator")
    assert out.exit_code == 1 and "last active maintainer" in out.output and out.output.count("\n") == 1
    with pytest.raises(StoreError, match="last active maintainer"):
        people.disable(project, "maya", "maya")
    maya = project.store.accounts.user("maya")
    assert (maya.role, maya.active) == ("maintainer", True)
    assert project.store.audit.events() == []  # a refusal records nothing
    people.set_role(project, "maya", "alice", "maintainer")  # another maintainer: now maya may go
    people.disable(project, "alice", "maya")
    assert not project.store.accounts.user("maya").active


def test_a_generated_password_is_shown_once_and_stored_only_hashed(project):
    out = run(project, "users", "add", "nina", "--role", "annotator", "--generate-password")
    assert out.exit_code == 0, out.output
    password = out.output.split("sign-in): ")[1].strip()
    assert len(password) == 16 and project.store.accounts.authenticate("nina", password).temporary
    with project.store.read() as conn:  # nowhere in the database in clear
        dump = "\n".join(conn.connection.iterdump())
    assert password not in dump
    [event] = project.store.audit.events()
    assert (event.action, event.target, event.detail["role"]) == ("user.add", "nina", "annotator")
    assert event.actor.startswith("shell") and password not in json.dumps(event.detail)


def test_a_role_change_ends_the_persons_sessions_and_is_audited(project):
    token = sessions.issue(project.store, "alice", 1)
    assert people.set_role(project, "maya", "alice", "maintainer") == 1
    assert sessions.resume(project.store, token) is None  # the next click signs in again, as a maintainer
    assert project.store.accounts.user("alice").role == "maintainer"
    with pytest.raises(StoreError, match="already a maintainer"):
        people.set_role(project, "maya", "alice", "maintainer")
    [event] = project.store.audit.events(action="user")
    assert (event.actor, event.action, event.target, event.detail) == (
        "maya",
        "user.role",
        "alice",
        {"role": "maintainer"},
    )


def test_people_show_state_last_sign_in_and_failures_since(project):
    workflow.sign_in(project, "alice", PASSWORD, client="10.0.0.1")
    for _ in range(3):
        with pytest.raises(workflow.AuthError):
            workflow.sign_in(project, "bob", "wrong-password", client="10.0.0.2")
    rows = {p.username: p for p in people.people(project)}
    assert rows["alice"].last_sign_in is not None and rows["alice"].failures == 0
    assert rows["bob"].last_sign_in is None and rows["bob"].failures == 3
    assert rows["bob"].state.startswith("backing off") and rows["maya"].state == "active"
    people.unlock(project, "maya", "bob")
    assert {p.username: p for p in people.people(project)}["bob"].state == "active"
    with pytest.raises(StoreError, match="no user 'zed'"):
        people.unlock(project, "maya", "zed")
    out = run(project, "users", "status", "--json")
    assert {r["username"]: r["failures"] for r in json.loads(out.output)}["bob"] == 0


def test_work_rows_name_overlap_progress_and_stale_items(project):
    seed_pairs(project, 5)  # 2 new pairs beyond the template's 3
    n = work.create(project, "maya", "preference_match", overlap="2..4", batch="week2")
    assert n == 2
    workflow.current_item(project, "alice", "preference_match")  # alice holds items now
    rows = {(r.kind, r.batch): r for r in work.rows(project)}
    assert rows[("preference_match", "default")].overlap == "2"
    # each item goes to 2 now, an audit item (a stable 10% share) to 4
    assert rows[("preference_match", "week2")].overlap in ("2..4 adaptive (now 2)", "2..4 adaptive (now 2-4)")
    assert rows[("preference_match", "default")].stale == 0
    idle = work.stale_queues(project, hours=0)
    assert [(q.annotator, q.kind) for q in idle] == [("alice", "preference_match")]
    released = work.hand_back(project, "maya", hours=0, annotator="alice")
    assert released and work.stale_queues(project, hours=0) == []
    actions = [e.action for e in project.store.audit.events()]
    assert actions == ["tasks.release", "tasks.create"]


def test_work_refusals_are_one_line_and_write_nothing(project):
    with pytest.raises(PrefkitError, match="at most 100 annotators"):
        work.create(project, "maya", "preference_match", overlap="101")
    with pytest.raises(PrefkitError, match="give the batch a name"):
        work.create(project, "maya", "preference_match", overlap="2", batch="  ")
    out = run(project, "tasks", "create", "--kind", "preference_match", "--overlap", "0")
    assert out.exit_code == 1 and out.output.count("\n") == 1 and "at least 1 annotator" in out.output
    assert project.store.audit.events() == []


def test_gold_marked_and_unmarked_one_item_at_a_time(project):
    task = project.store.labels.tasks(kind="preference_match")[0]
    out = run(project, "tasks", "gold", "mark", task.task_id, "--answer", '{"coverage": "sometimes"}')
    assert out.exit_code == 1 and out.output.startswith("error: ") and out.output.count("\n") == 1
    out = run(project, "tasks", "gold", "mark", task.task_id, "--answer", "{coverage")
    assert out.exit_code == 1 and "not valid JSON" in out.output
    assert not project.store.labels.task(task.task_id).is_gold
    out = run(project, "tasks", "gold", "mark", task.task_id, "--answer", '{"coverage": "fully"}')
    assert out.exit_code == 0 and project.store.labels.gold_answers()[task.task_id][1] == {
        "coverage": "fully"
    }
    assert run(project, "tasks", "gold", "unmark", task.task_id).exit_code == 0
    out = run(project, "tasks", "gold", "unmark", task.task_id)
    assert out.exit_code == 1 and "is not a gold item" in out.output
    assert [e.action for e in project.store.audit.events()] == ["gold.unmark", "gold.mark"]


def test_audit_list_shows_page_and_shell_actions_newest_first(project):
    work.set_batch_status(project, "maya", "default", "closed")
    assert run(project, "batches", "open", "default").exit_code == 0
    add_users(project.store, "zoe")
    out = run(project, "audit", "list", "--json")
    rows = json.loads(out.output)
    assert [(r["action"], r["target"]) for r in rows] == [
        ("batch.open", "default"),
        ("batch.close", "default"),
    ]
    assert rows[1]["actor"] == "maya" and rows[0]["actor"].startswith("shell")
    text = run(project, "audit", "list", "--actor", "maya").output
    assert "batch.close" in text and "batch.open" not in text
    out = run(project, "batches", "close", "no-such-batch")
    assert out.exit_code == 1 and len(json.loads(run(project, "audit", "list", "--json").output)) == 2


def test_a_one_time_password_only_lets_the_person_choose_their_own(project):
    given = people.add(project, "maya", "nina", "annotator")
    with pytest.raises(StoreError, match="not the one you were given"):
        people.choose_password(project, "nina", given, given)
    with pytest.raises(StoreError, match="not right"):
        people.choose_password(project, "nina", "a-wrong-one", "nina-own-pass")
    with pytest.raises(StoreError, match="not right"):  # nobody replaces another's password this way
        people.choose_password(project, "alice", PASSWORD, "taken-over-1")
    account = people.choose_password(project, "nina", given, "nina-own-pass")
    assert account.username == "nina" and not account.temporary
    assert project.store.accounts.authenticate("nina", given) is None
    with pytest.raises(StoreError, match="replaced already|not right"):  # one time only
        people.choose_password(project, "nina", "nina-own-pass", "another-pass")
    own = project.store.audit.events(actor="nina")
    assert [(e.action, e.detail) for e in own] == [("user.password", {"own": True})]


def test_unlocking_a_client_address_clears_its_failures_and_names_it_in_the_audit(project):
    for name in ("nobody-1", "nobody-2", "nobody-3"):
        with pytest.raises(workflow.AuthError):
            workflow.sign_in(project, name, "wrong-password", client="10.0.0.9")
    assert project.store.accounts.sign_in_failures(client="10.0.0.9")[0] == 3
    out = run(project, "users", "unlock", "--client", "10.0.0.9")
    assert out.exit_code == 0 and project.store.accounts.sign_in_failures(client="10.0.0.9")[0] == 0
    [event] = project.store.audit.events()
    assert (event.action, event.target) == ("user.unlock", "client 10.0.0.9")
    with pytest.raises(StoreError, match="give a user name or a client address"):
        people.unlock(project, "maya", None, "  ")


def test_a_cut_from_the_shell_is_audited_and_a_refused_one_is_not(project):
    out = run(project, "release", "cut", "--version", "1.0.0")
    assert out.exit_code == 1 and out.output.startswith("error: gates failed")
    assert project.store.audit.events() == []
    out = run(project, "release", "cut", "--version", "1.0.0", "--override", "pilot round")
    assert out.exit_code == 0, out.output
    [event] = project.store.audit.events()
    assert (event.action, event.target, event.detail["override"]) == ("release.cut", "1.0.0", "pilot round")
    assert event.actor.startswith("shell") and "alpha" in event.detail["failed_gates"]
    out = run(project, "release", "verify", str(project.releases_dir / "1.0.0"))
    assert out.exit_code == 0 and "the project's release log" in out.output


def test_tasks_status_prints_the_work_pages_table(project):
    rows = json.loads(run(project, "tasks", "status", "--json").output)
    assert {(r["kind"], r["batch"], r["overlap"], r["status"]) for r in rows["batches"]} == {
        ("preference_expressed", "default", "2", "open"),
        ("preference_match", "default", "2", "open"),
    }
    assert rows["stale_queues"] == []
