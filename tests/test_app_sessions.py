"""Signed, expiring, revocable sign-in sessions and per-item drafts (library level): a reload keeps an
annotator signed in and their half-done form; nobody can make a token act as someone else.

The same in a real browser (cookie, reload, sign-out): tests/test_browser_fidelity.py.
"""

from __future__ import annotations

import base64

import pytest
from appkit import project_fixtures
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import sessions, workflow
from prefkit.curation.project import Project

template, project = project_fixtures(n=2, overlap=2)


def b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def test_a_token_signs_in_its_account_and_survives_a_restart(project):
    token = sessions.issue(project.store, "alice", hours=1, client="127.0.0.1")
    assert sessions.resume(project.store, token).username == "alice"
    project.close()
    reopened = Project(project.root)  # a server restart: the secret is in the store
    assert sessions.resume(reopened.store, token).username == "alice"
    reopened.close()


@pytest.mark.parametrize(
    "tamper",
    [
        lambda parts: [*parts[:2], b64("bob"), *parts[3:]],  # alice's token renamed to bob
        lambda parts: [*parts[:3], str(int(parts[3]) + 86400), parts[4]],  # a day more
        lambda parts: [parts[0], "0" * 32, *parts[2:]],  # another session id
        lambda parts: [*parts[:4], parts[4][:-2] + ("AA" if not parts[4].endswith("AA") else "BB")],
        lambda parts: ["v2", *parts[1:]],
        lambda parts: parts[:4],  # no signature
    ],
)
def test_an_altered_token_signs_nobody_in(project, tamper):
    token = sessions.issue(project.store, "alice", hours=1)
    assert sessions.resume(project.store, ".".join(tamper(token.split(".")))) is None
    assert sessions.resume(project.store, token).username == "alice"  # the real one still holds


def test_a_token_cannot_be_made_without_the_projects_secret(project, tmp_path):
    other = Project.init(tmp_path / "other", name="other")
    other.store.accounts.add_user("bob", "annotator", "correct-horse-9")
    theirs = sessions.issue(other.store, "bob", hours=1)  # bob of another project, its own secret
    project.store.sessions.open("bob", "2999-01-01T00:00:00.000000Z")  # even with a row to point at
    assert sessions.resume(project.store, theirs) is None
    assert sessions.resume(project.store, None) is None and sessions.resume(project.store, "garbage") is None
    assert sessions.cookie_name(project.store) != sessions.cookie_name(other.store)
    other.close()


def test_an_expired_token_is_refused_even_correctly_signed(project):
    token = sessions.issue(project.store, "alice", hours=1)
    parts = token.split(".")
    payload = ".".join([*parts[:3], "1000000000"])  # 2001: long past, signed with the real secret
    assert sessions.resume(project.store, f"{payload}.{sessions._sign(project.store, payload)}") is None


def test_sign_out_revokes_that_session_only(project):
    first = sessions.issue(project.store, "alice", hours=1)
    second = sessions.issue(project.store, "alice", hours=1)  # another browser
    assert sessions.close(project.store, first)
    assert sessions.resume(project.store, first) is None
    assert sessions.resume(project.store, second).username == "alice"
    assert not sessions.close(project.store, first.replace("v1.", "v1.x", 1))  # a forged one revokes nothing


def test_users_disable_ends_every_session_for_good(project):
    token = sessions.issue(project.store, "alice", hours=1)
    out = CliRunner().invoke(cli, ["users", "disable", "alice", "--project", str(project.root)])
    assert out.exit_code == 0, out.output
    assert sessions.resume(project.store, token) is None
    assert (
        CliRunner().invoke(cli, ["users", "enable", "alice", "--project", str(project.root)]).exit_code == 0
    )
    assert sessions.resume(project.store, token) is None  # enabled again: the old sessions stay ended
    assert sessions.resume(project.store, sessions.issue(project.store, "alice", hours=1)).username == "alice"
    assert all(s.revoked_at for s in project.store.sessions.of_user("alice")[1:])


def test_a_draft_is_the_showings_own_never_a_label_and_goes_with_the_submit(project):
    item = workflow.current_item(project, "alice", "preference_expressed")
    state = {"seeded": True, "exp:0": "Expressed", "ev:0": [2], "comment": "half-way"}
    workflow.save_draft(project, "alice", item, state)
    assert workflow.annotator_view(project, "alice", "preference_expressed").draft == state
    assert workflow.annotator_view(project, "bob", "preference_expressed").draft is None  # alice's alone
    assert project.store.labels.events() == []  # a draft is no label
    values = {"items": [{"item": 0, "expressed": True, "evidence": [2]}, {"item": 1, "expressed": False}]}
    workflow.submit(project, "alice", item, values)
    assert project.store.drafts.draft("alice", item.task.task_id) is None  # gone with the submit
    after = workflow.annotator_view(project, "alice", "preference_expressed")
    assert after.item.event_id != item.event_id and after.draft is None


def test_a_draft_of_an_earlier_showing_is_not_restored(project):
    item = workflow.current_item(project, "alice", "preference_match")
    # the store keeps no draft for a showing that is not the open one (issue 32)
    assert not project.store.drafts.save_draft(
        "alice", item.task.task_id, "ev_" + "1" * 32, '{"comment": "old"}'
    )
    assert project.store.drafts.draft("alice", item.task.task_id) is None
    assert workflow.annotator_view(project, "alice", "preference_match").draft is None
