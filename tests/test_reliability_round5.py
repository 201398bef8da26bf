"""Reliability round 5 (issue 42), the low findings: one-time passwords expire, My items search folds
case and width in every script on both backends, and a CSV label file whose quoted field never
closes is refused."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import people, workflow
from prefkit.curation.annotation.my_items import my_items
from prefkit.curation.project import Project
from prefkit.curation.store import StoreError
from test_release_support import add_users


def backdate_password(project: Project, name: str, hours: float) -> None:
    """Make ``name``'s password ``hours`` old (its account too)."""
    from datetime import UTC, datetime, timedelta

    then = (datetime.now(UTC) - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with project.store.write() as conn:
        u = project.store.t["users"]
        conn.execute(u.update().where(u.c.username == name).values(created_at=then, password_set_at=then))


# -- 7. one-time passwords expire ---------------------------------------------------------------------
def test_a_one_time_password_past_its_hours_is_refused_at_the_door_with_one_line(project):
    made = people.add(project, "shell:test", "nina", "annotator")
    backdate_password(project, "nina", 73)  # the default is 72 hours
    with pytest.raises(workflow.AuthError, match="has expired: ask a maintainer for a new one"):
        workflow.sign_in(project, "nina", made, client="10.0.0.1")
    with pytest.raises(StoreError, match="has expired"):
        people.choose_password(project, "nina", made, "my-own-password-1")
    assert project.store.accounts.user("nina").temporary  # nothing changed
    assert [a.outcome for a in project.store.accounts.sign_in_log("nina")][:1] == ["expired"]
    assert "expired" in next(p.state for p in people.people(project) if p.username == "nina")


def test_a_one_time_password_within_its_hours_still_opens_the_choice(project):
    made = people.add(project, "shell:test", "nina", "annotator")
    backdate_password(project, "nina", 71)
    assert workflow.sign_in(project, "nina", made, client="10.0.0.1").temporary
    assert not people.choose_password(project, "nina", made, "my-own-password-1").temporary


def test_a_reset_makes_a_new_one_time_password_counted_from_the_reset(project):
    made = people.add(project, "shell:test", "nina", "annotator")
    backdate_password(project, "nina", 100)  # the account is old; the reset is now
    result = CliRunner().invoke(
        cli, ["users", "password", "nina", "--generate-password", "-p", str(project.root)]
    )
    assert result.exit_code == 0, result.output
    fresh = result.output.strip().rsplit(": ", 1)[1]
    assert "works until" in result.output and fresh != made
    assert workflow.sign_in(project, "nina", fresh, client="10.0.0.1").temporary
    assert project.store.accounts.authenticate("nina", made) is None


def test_the_hours_come_from_the_config_and_are_shown_where_the_password_is_made(project):
    (project.root / "prefkit.toml").write_text(
        '[project]\nname = "t"\n[annotation.sign_in]\none_time_password_hours = 1\n'
    )
    result = CliRunner().invoke(
        cli, ["users", "add", "nina", "--role", "annotator", "--generate-password", "-p", str(project.root)]
    )
    assert result.exit_code == 0, result.output
    assert "works until" in result.output and " UTC" in result.output
    made = result.output.strip().rsplit(": ", 1)[1]
    reloaded = Project(project.root)
    backdate_password(reloaded, "nina", 2)
    with pytest.raises(workflow.AuthError, match="expired"):
        workflow.sign_in(reloaded, "nina", made)
    reloaded.close()


def test_one_time_password_hours_must_be_a_positive_finite_number():
    from prefkit.schemas.config import ConfigError, ProjectConfig

    assert ProjectConfig.parse({}).annotation.sign_in.one_time_password_hours == 72
    for bad in (0, float("inf"), -3):
        with pytest.raises(ConfigError, match="one_time_password_hours"):
            ProjectConfig.parse({"annotation": {"sign_in": {"one_time_password_hours": bad}}})


# -- 9. My items search folds case and width in every script -------------------------------------------
def search_project(project: Project) -> Project:
    from prefkit.curation.annotation.task_admin import create_tasks
    from prefkit.curation.store import PreferencePair
    from prefkit.schemas.curation import Provenance

    add_users(project.store, "alice")
    texts = ["Été chaud à Paris", "ＦＵＬＬ width reply", "Straße nach Köln", "ΣΊΣΥΦΟΣ myth", "plain text"]
    pairs = [
        PreferencePair(f"p{i}", f"Does it mention {t}?", "a candidate", "m") for i, t in enumerate(texts)
    ]
    project.store.content.add_preference_pairs(pairs, Provenance(source="test"))
    create_tasks(project, "preference_match", overlap=1, gold_rate=0)
    while (item := workflow.current_item(project, "alice", "preference_match")) is not None:
        workflow.submit(project, "alice", item, {"coverage": "fully"})
    return project


@pytest.mark.parametrize(
    ("search", "found"),
    [
        ("été chaud", "Été chaud"),
        ("ÉTÉ CHAUD", "Été chaud"),
        ("full WIDTH", "ＦＵＬＬ width"),
        ("strasse", "Straße"),
        ("σίσυφος", "ΣΊΣΥΦΟΣ"),
    ],
)
def test_a_search_folds_case_and_width_in_every_script_on_both_backends(any_project, search, found):
    page = my_items(search_project(any_project), "alice", search=search)
    assert page.total == 1 and found in page.items[0].task.payload["checklist_item"]


def test_a_search_keeps_accents(any_project):
    assert my_items(search_project(any_project), "alice", search="ete chaud").total == 0


def test_tasks_made_before_the_migration_are_searchable_after_it(any_project):
    from sqlalchemy import text

    search_project(any_project)
    with any_project.store.write() as conn:  # the database as it was before migration 25
        conn.execute(text("ALTER TABLE tasks DROP COLUMN search_text"))
        conn.execute(text("ALTER TABLE users DROP COLUMN password_set_at"))
        conn.execute(text("DELETE FROM _migrations WHERE number = 25"))
    any_project.close()
    reopened = Project(any_project.root)
    assert my_items(reopened, "alice", search="ÉTÉ CHAUD").total == 1
    assert my_items(reopened, "alice", search="does it mention").total == 5
    reopened.close()
