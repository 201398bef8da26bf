"""The maintainer's console pages (People, Work, Release) through Streamlit's AppTest: each page's
write path reaches the library and the audit log, each shows a refusal in words and writes nothing,
and annotators can neither see nor run them."""

from __future__ import annotations

import json

import pytest
from appkit import ALICE, MAYA, PASSWORD, app, project_fixtures, skip_to
from conftest import ROOT
from prefkit.annotate_app.safe_text import md_escape
from prefkit.curation.annotation import workflow
from prefkit.exports.release_integrity import load_manifest
from streamlit.testing.v1 import AppTest

template, project = project_fixtures(env=True, n=3, overlap=2)


def page(name: str) -> AppTest:
    at = app(MAYA)
    at.switch_page(f"views/{name}.py")
    return at.run()


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def show(at: AppTest, page: str, form: str) -> None:
    """Pick the page's form (its keyed "Change" control)."""
    at.button_group(key=f"{page}_action").set_value(form).run()


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


@pytest.mark.parametrize("name", ["people", "work", "release"])
def test_annotators_can_neither_see_nor_run_the_console_pages(project, name):
    at = app(ALICE, "preference_match")
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page(f"views/{name}.py")
    direct = AppTest.from_file(str(ROOT / "annotate_app" / "views" / f"{name}.py"), default_timeout=60)
    direct.session_state["user"] = ALICE
    direct.run()
    assert "not a maintainer" in direct.error[0].value and not direct.dataframe


def test_people_adds_an_account_with_a_password_shown_once(project):
    at = page("people")
    assert {"alice", "bob", "maya"} <= set(at.dataframe[0].value["user"])
    at.text_input(key="people_add_name").input("nina")
    button(at, "Add user").click().run()
    [shown] = [c.value for c in at.code]
    assert project.store.accounts.authenticate("nina", shown).role == "annotator"
    assert "nina" in set(at.dataframe[0].value["user"])
    at.run()  # the next run: the password is gone from the page and the session
    assert not at.code and "_people_made" not in at.session_state
    [event] = project.store.audit.events()
    assert (event.actor, event.action, event.target) == ("maya", "user.add", "nina")


def test_people_refuses_to_disable_the_last_maintainer_in_words(project):
    at = page("people")
    show(at, "people", "Disable or enable")
    at.selectbox(key="people_access_who").set_value("maya").run()
    button(at, "Disable").click().run()
    assert any("maya is the last active maintainer" in e for e in errors(at))
    assert project.store.accounts.user("maya").active and project.store.audit.events() == []
    show(at, "people", "Role")
    at.selectbox(key="people_role_who").set_value("maya")
    at.radio(key="people_role_to").set_value("annotator")
    button(at, "Change role").click().run()
    assert any("last active maintainer" in e for e in errors(at))
    assert project.store.accounts.user("maya").role == "maintainer"


def test_people_disables_unlocks_and_sets_a_password(project):
    for _ in range(3):
        with pytest.raises(workflow.AuthError):
            workflow.sign_in(project, "bob", "not-it", client="10.1.1.1")
    at = page("people")
    assert at.dataframe[0].value.set_index("user").loc["bob", "failed sign-ins since"] == 3
    show(at, "people", "Unlock")
    at.selectbox(key="people_unlock_who").set_value("bob")
    button(at, "Unlock").click().run()
    assert at.dataframe[0].value.set_index("user").loc["bob", "failed sign-ins since"] == 0
    show(at, "people", "Disable or enable")
    at.selectbox(key="people_access_who").set_value("alice")
    button(at, "Disable").click().run()
    assert not project.store.accounts.user("alice").active
    show(at, "people", "Password")
    at.selectbox(key="people_pw_who").set_value("bob")
    at.text_input(key="people_pw_1").input("new-password-1")
    at.text_input(key="people_pw_2").input("new-password-2")
    button(at, "Set password").click().run()
    assert "the two passwords differ" in errors(at)[0]
    assert project.store.accounts.authenticate("bob", PASSWORD) is not None
    at.text_input(key="people_pw_1").input("short")
    at.text_input(key="people_pw_2").input("short")
    button(at, "Set password").click().run()
    assert "at least 8 characters" in errors(at)[0]
    assert [e.action for e in project.store.audit.events()] == ["user.disable", "user.unlock"]


def test_work_creates_tasks_with_an_overlap_and_refuses_a_bad_one(project):
    at = page("work")
    at.selectbox(key="work_create_kind").set_value("preference_expressed")
    at.text_input(key="work_create_batch").input("week2")
    at.text_input(key="work_create_overlap").input("0")
    button(at, "Create tasks").click().run()
    assert "at least 1 annotator per item" in errors(at)[0] and project.store.audit.events() == []
    from appkit import seed_sessions

    seed_sessions(project, 5)  # two sessions without a task yet
    at.text_input(key="work_create_overlap").input("2..3")
    button(at, "Create tasks").click().run()
    table = at.dataframe[0].value
    row = table[(table["batch"] == "week2")].iloc[0]
    assert (row["tasks"], row["overlap"][:4]) == (2, "2..3")
    assert project.store.audit.events()[0].target == "preference_expressed / week2"


def test_work_marks_and_unmarks_gold_and_closes_a_batch(project):
    at = page("work")
    show(at, "work", "Gold items")
    at.selectbox(key="work_gold_kind").set_value("preference_match").run()
    task_id = at.selectbox(key="work_gold_task").value
    at.text_area(key=f"gold_answer:{task_id}").input('{"coverage": "maybe"}')
    button(at, "Mark as gold").click().run()
    assert errors(at) and not project.store.labels.task(task_id).is_gold
    at.text_area(key=f"gold_answer:{task_id}").input('{"coverage": "fully"}')
    button(at, "Mark as gold").click().run()
    assert project.store.labels.gold_answers()[task_id][1] == {"coverage": "fully"}
    button(at, "Unmark gold").click().run()
    assert not project.store.labels.task(task_id).is_gold
    show(at, "work", "Batches")
    at.selectbox(key="work_batch").set_value("default")
    button(at, "Close batch").click().run()
    assert {b.batch_id: b.status for b in project.store.labels.batches()}["default"] == "closed"
    actions = [e.action for e in project.store.audit.events()]
    assert actions == ["batch.close", "gold.unmark", "gold.mark"]


def test_gold_is_marked_for_every_kind_on_the_item_picked_by_reference_batch_and_text(project):
    """*Preference expressed* (one preference text in several sessions): the picker tells the items
    apart, the decided label is filled in, and it is checked against the picked item's own turns."""
    kind = "preference_expressed"
    task = project.store.labels.tasks(kind=kind)[1]
    values = {"items": [{"item": 0, "expressed": True, "evidence": [2]}, {"item": 1, "expressed": False}]}
    for who in ("alice", "bob"):
        skip_to(project, who, kind, task.item_ref)
        workflow.submit(project, who, workflow.current_item(project, who, kind), values)
    at = page("work")
    show(at, "work", "Gold items")
    at.selectbox(key="work_gold_kind").set_value(kind).run()
    picker = at.selectbox(key="work_gold_task")
    assert f"{task.item_ref} · batch {task.batch} · " in picker.format_func(task.task_id)
    picker.set_value(task.task_id).run()
    answer = at.text_area(key=f"gold_answer:{task.task_id}")
    assert json.loads(answer.value)["items"][0] == {"item": 0, "expressed": True, "evidence": [2]}
    button(at, "Mark as gold").click().run()
    assert errors(at) == [] and project.store.labels.task(task.task_id).is_gold
    [event] = project.store.audit.events()
    assert (event.action, event.target) == ("gold.mark", task.task_id)


def test_an_item_is_marked_gold_from_its_own_page(project):
    task = project.store.labels.tasks(kind="preference_match")[0]
    at = app(MAYA)
    at.query_params["task"] = task.task_id
    at.switch_page("views/item.py").run()
    assert any(
        md_escape(task.task_id) in m.value and md_escape(task.item_ref) in m.value for m in at.markdown
    )
    at.text_area(key=f"gold_answer:{task.task_id}").input('{"coverage": "partially"}')
    button(at, "Mark as gold").click().run()
    assert project.store.labels.gold_answers()[task.task_id][1] == {"coverage": "partially"}


def test_work_hands_back_stale_items(project):
    workflow.current_item(project, "bob", "preference_match")
    at = page("work")
    show(at, "work", "Stale items")
    at.number_input(key="work_stale_hours").set_value(0.0).run()
    assert list(at.dataframe[1].value["annotator"]) == ["bob"]
    button(at, "Hand back").click().run()
    assert project.store.stale.assignment_releases("bob")
    assert project.store.audit.events()[0].action == "tasks.release"


def test_release_shows_each_gate_then_cuts_with_confirmation_and_an_override(project):
    at = page("release")
    gates = at.dataframe[0].value
    assert "FAIL" in set(gates["result"]) and {"gate", "figure", "threshold", "why"} <= set(gates.columns)
    button(at, "Cut release").click().run()
    assert errors(at) == ["Not cut: tick the confirmation first"]
    at.checkbox(key="release_sure").check()
    button(at, "Cut release").click().run()
    assert errors(at)[0].startswith("Not cut: gates failed") and not (project.releases_dir / "1.0.0").exists()
    at.text_input(key="release_override").input("pilot round, gates reviewed")
    at.checkbox(key="release_sure").check()
    button(at, "Cut release").click().run()
    assert load_manifest(project.releases_dir / "1.0.0").override_reason == "pilot round, gates reviewed"
    # the form is empty again: no tick, no reason carried over, the next minor as the version
    assert at.text_input(key="release_version").value == "1.1.0"
    assert at.text_input(key="release_override").value == "" and not at.checkbox(key="release_sure").value
    [verified] = [df.value for df in at.dataframe if "check" in df.value.columns]
    assert set(verified["result"]) == {"OK"} and any(
        "files match the manifest" in c for c in verified["check"]
    )
    [event] = project.store.audit.events()
    assert (event.actor, event.action, event.target) == ("maya", "release.cut", "1.0.0")
    assert (
        event.detail["override"] == "pilot round, gates reviewed" and "alpha" in event.detail["failed_gates"]
    )
    at.text_input(key="release_version").input("1.0.0")  # again: refused, nothing written
    at.checkbox(key="release_sure").check()
    button(at, "Cut release").click().run()
    assert errors(at)[0].startswith("Not cut: release") and "already exists" in errors(at)[0]
    assert at.text_input(key="release_version").value == "1.0.0"
    at.text_input(key="release_version").input("1.1.0")
    at.text_input(key="release_override").input("second pilot round")  # asked again: not carried over
    at.checkbox(key="release_sure").check()
    button(at, "Cut release").click().run()
    assert errors(at) == [] and (project.releases_dir / "1.1.0").exists()
    assert at.selectbox(key="release_shown").value == "1.1.0"
    assert any("Changes from 1.0.0 to 1.1.0" in m.value and "patch" in m.value for m in at.markdown)
    [listed] = [df.value for df in at.dataframe if "version" in df.value.columns]
    assert list(listed["version"]) == ["1.1.0", "1.0.0"]


def test_the_dashboards_batch_buttons_are_the_work_pages_call_and_audited(project):
    at = app(MAYA)  # maintainers land on the dashboard
    at.selectbox(key="batch_pick").set_value("default")
    at.button(key="batch_close").click().run()
    assert {b.batch_id: b.status for b in project.store.labels.batches()}["default"] == "closed"
    [event] = project.store.audit.events()
    assert (event.actor, event.action, event.target) == ("maya", "batch.close", "default")


def test_a_one_time_password_signs_in_only_after_the_person_chooses_their_own(project):
    at = page("people")
    at.text_input(key="people_add_name").input("nina")
    button(at, "Add user").click().run()
    [given] = [c.value for c in at.code]
    door = app()  # nina's browser
    door.text_input(key="signin_user").input("nina")
    door.text_input(key="signin_password").input(given)
    door.button[0].click().run()
    assert "user" not in door.session_state and any(
        s.value == "Choose your own password" for s in door.subheader
    )
    door.text_input(key="choose_given").input(given)
    door.text_input(key="choose_new").input(given)
    door.text_input(key="choose_again").input(given)
    button(door, "Set my password and sign in").click().run()
    assert "not the one you were given" in errors(door)[0] and "user" not in door.session_state
    door.text_input(key="choose_given").input(given)
    door.text_input(key="choose_new").input("nina-own-pass")
    door.text_input(key="choose_again").input("nina-own-pass")
    button(door, "Set my password and sign in").click().run()
    assert door.session_state["user"].username == "nina"
    assert project.store.accounts.authenticate("nina", "nina-own-pass") is not None
    assert project.store.accounts.authenticate("nina", given) is None
