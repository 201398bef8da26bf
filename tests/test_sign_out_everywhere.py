"""A sign-in session ends in every tab at once (issue 32, items 1 and 8): a sign-out in one tab, the
session's expiry, a revocation (``users disable``, ``users password``) or a disabled account is
checked by every later run and every write, not only by a new load of the cookie; and
``prefkit users password`` sets a new password and ends every session of the account.

Before: each run checked only that the account was active, so a second tab (or a second browser
holding the same cookie) stayed signed in and recorded labels after its owner signed out.
"""

from __future__ import annotations

import json

import pytest
from appkit import PASSWORD, make_project, project_fixtures, require_chromium
from click.testing import CliRunner
from conftest import ROOT
from prefkit.annotate_app import ui
from prefkit.cli import cli
from prefkit.curation.annotation import sessions, workflow
from prefkit.curation.project import Project
from sqlalchemy import update
from streamlit.testing.v1 import AppTest
from test_browser_app import open_kind, serve, settle, sign_in
from test_browser_fidelity import session_cookie

APP = str(ROOT / "annotate_app" / "app.py")
KIND = "preference_match"

template, project = project_fixtures(env=True, n=2, overlap=2)


def no_events(project: Project, who: str = "alice") -> bool:
    return project.store.labels.events(annotator=who) == []


# -- (a) the library: the per-run check and the write's own check ---------------------------------------
def end_by_sign_out(project: Project, token: str) -> None:
    assert sessions.close(project.store, token)  # *Sign out* in another tab of the same session


def end_by_revocation(project: Project, token: str) -> None:
    assert sessions.revoke_user(project.store, "alice") == 1


def end_by_disabling(project: Project, token: str) -> None:
    project.store.accounts.set_user_active("alice", False)  # the account alone, its sessions untouched


def end_by_expiry(project: Project, token: str) -> None:
    s = project.store.t["app_sessions"]  # the row's end passed (the token's own expiry is still ahead)
    with project.store.write() as conn:
        conn.execute(update(s).values(expires_at="2001-01-01T00:00:00.000000Z"))


@pytest.mark.parametrize("end", [end_by_sign_out, end_by_revocation, end_by_disabling, end_by_expiry])
def test_an_ended_session_is_refused_by_the_run_check_and_by_every_write(project, end):
    token = sessions.issue(project.store, "alice", hours=1)
    item = workflow.current_item(project, "alice", KIND)
    assert sessions.holds(project.store, token, "alice")
    assert workflow.annotator_view(project, "alice", KIND, token).active
    end(project, token)
    assert not sessions.holds(project.store, token, "alice")
    assert not workflow.annotator_view(project, "alice", KIND, token).active
    for write in (
        lambda: workflow.submit(project, "alice", item, {"coverage": "fully"}, signed_in=True, session=token),
        lambda: workflow.skip(project, "alice", item, "cannot judge", signed_in=True, session=token),
        lambda: workflow.flag(project, "alice", item, "broken", signed_in=True, session=token),
    ):
        with pytest.raises(workflow.SessionEnded):
            write()
    assert no_events(project)
    assert workflow.current_item(project, "alice", KIND) == item  # still open, unchanged


def submit_is_refused(project, item, token) -> None:
    """Alice's submit of ``item`` under ``token`` is refused and records nothing."""
    with pytest.raises(workflow.SessionEnded):
        workflow.submit(project, "alice", item, {"coverage": "fully"}, session=token)
    assert no_events(project)


def test_a_token_past_its_own_expiry_records_nothing(project):
    token = sessions.issue(project.store, "alice", hours=-0.01)  # token and row ended 36 s ago
    item = workflow.current_item(project, "alice", KIND)
    assert sessions.live_id(project.store, token) is None and not sessions.holds(
        project.store, token, "alice"
    )
    assert not workflow.annotator_view(project, "alice", KIND, token).active
    submit_is_refused(project, item, token)


def test_another_users_open_session_does_not_act_for_alice(project):
    bobs = sessions.issue(project.store, "bob", hours=1)
    item = workflow.current_item(project, "alice", KIND)
    assert not sessions.holds(project.store, bobs, "alice")
    submit_is_refused(project, item, bobs)


def test_an_edit_from_an_ended_session_records_nothing(project):
    token = sessions.issue(project.store, "alice", hours=1)
    item = workflow.current_item(project, "alice", KIND)
    assert workflow.submit(project, "alice", item, {"coverage": "fully"}, signed_in=True, session=token)
    sessions.close(project.store, token)
    with pytest.raises(workflow.SessionEnded):
        workflow.edit_label(
            project, "alice", item.event_id, {"coverage": "partially"}, signed_in=True, session=token
        )
    assert [e.values for e in project.store.labels.events(annotator="alice")] == [{"coverage": "fully"}]


def test_set_password_ends_every_session_and_is_logged(project):
    first, second = (sessions.issue(project.store, "alice", hours=1) for _ in range(2))
    bobs = sessions.issue(project.store, "bob", hours=1)
    assert project.store.accounts.set_password("ALICE", "a-new-password-7") == 2  # the name normalized
    assert not sessions.holds(project.store, first, "alice") and not sessions.holds(
        project.store, second, "alice"
    )
    assert sessions.holds(project.store, bobs, "bob")  # nobody else's
    assert project.store.accounts.authenticate("alice", PASSWORD) is None
    assert project.store.accounts.authenticate("alice", "a-new-password-7").username == "alice"
    [entry] = [e for e in project.store.accounts.sign_in_log("alice") if e.outcome == "password"]
    assert entry.client == "maintainer"


# -- (b) the app: two browser sessions holding one token --------------------------------------------
def signed_in_through_the_form() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="signin_user").input("alice")
    at.text_input(key="signin_password").input(PASSWORD)
    at.button[0].click().run()
    assert at.session_state["user"].username == "alice"
    return at


def holding(first: AppTest) -> AppTest:
    """Another browser session signed in by the same token (what a second tab, or a second browser
    given the cookie, is after ``session.resume``), on the matching queue."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["user"] = first.session_state["user"]
    at.session_state[ui.TOKEN] = first.session_state[ui.TOKEN]
    at.session_state["kind"] = KIND
    at.session_state[f"intro:{KIND}"] = True
    return at.run()


def shows_sign_in(at: AppTest) -> bool:
    return [t.label for t in at.text_input] == ["User name", "Password"] and "user" not in at.session_state


def test_a_sign_out_in_one_tab_ends_the_other_at_its_next_submit(project):
    first = signed_in_through_the_form()
    second = holding(first)
    x = workflow.current_item(project, "alice", KIND)
    second.button(key=f"{x.event_id}:fully").click().run()  # the shared session holds: recorded
    assert project.store.labels.event(x.event_id).values == {"coverage": "fully"}
    y = workflow.current_item(project, "alice", KIND)
    assert y.event_id != x.event_id

    first.button(key="signout").click().run()
    assert shows_sign_in(first)
    second.button(key=f"{y.event_id}:not_covered").click().run()  # the tab still showed y
    assert project.store.labels.event(y.event_id) is None  # nothing recorded
    assert shows_sign_in(second)
    assert not [b for b in second.button if b.label in ("Fully covered", "Submit")]
    assert workflow.current_item(project, "alice", KIND) == y  # still open for a later sign-in


def test_a_revoked_session_shows_the_sign_in_at_the_tabs_next_run(project):
    first = signed_in_through_the_form()
    second = holding(first)
    assert not shows_sign_in(second)
    project.store.accounts.set_password("alice", "a-new-password-7")  # `prefkit users password alice`
    second.run()  # any run, not a submit: the per-run check reads the session
    assert shows_sign_in(second)
    first.run()
    assert shows_sign_in(first)


# -- (c) the command ------------------------------------------------------------------------------------
def users(project: Project, *args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, ["users", *args, "--project", str(project.root)], input=stdin)


def test_users_password_sets_it_and_ends_every_session(project):
    token = sessions.issue(project.store, "alice", hours=1)
    out = users(project, "password", "alice", "--password-stdin", stdin="a-new-password-7\n")
    assert out.exit_code == 0 and out.output == "set a new password for alice; 1 open session(s) ended\n"
    assert sessions.resume(project.store, token) is None
    with pytest.raises(workflow.AuthError):
        workflow.sign_in(project, "alice", PASSWORD)
    assert workflow.sign_in(project, "alice", "a-new-password-7").username == "alice"
    log = json.loads(users(project, "sign-ins", "alice", "--json").output)  # newest first
    assert [(e["client"], e["outcome"]) for e in log] == [
        ("local", "ok"),
        ("local", "fail"),
        ("maintainer", "password"),
    ]


def test_users_password_asks_twice_without_stdin(project):
    out = users(project, "password", "bob", stdin="another-pass-8\nanother-pass-8\n")
    assert out.exit_code == 0, out.output
    assert out.output.endswith("set a new password for bob; 0 open session(s) ended\n")
    assert project.store.accounts.authenticate("bob", "another-pass-8").username == "bob"


def test_users_password_refusals_are_one_line_and_change_nothing(project):
    project.store.accounts.add_user("judge.model-x", "annotator", "judge-password-1", judge=True)
    token = sessions.issue(project.store, "alice", hours=1)
    for args, stdin, line in [
        (("nobody",), "long-enough-1\n", "error: no user 'nobody'\n"),
        (("alice",), "short\n", "error: password must be at least 8 characters\n"),
        (("alice",), "\n", "error: password must be at least 8 characters\n"),
        (
            ("judge.model-x",),
            "long-enough-1\n",
            "error: 'judge.model-x' is an LLM judge's account: nobody signs in with a password\n",
        ),
    ]:
        out = users(project, "password", *args, "--password-stdin", stdin=stdin)
        assert (out.exit_code, out.output) == (1, line)
    out = users(project, "password", "--password-stdin", stdin="long-enough-1\n")
    assert out.exit_code == 2 and "NAME" in out.output  # the usage error of a missing argument
    assert sessions.holds(project.store, token, "alice")  # nothing revoked
    assert project.store.accounts.authenticate("alice", PASSWORD).username == "alice"
    assert project.store.accounts.authenticate("judge.model-x", "long-enough-1") is None


#: The run numbers of the run marks on a page (``ui.run_mark``).
RUN_MARKS = """() => [...document.querySelectorAll('[class*="st-key-prefkit-run-"]')]
  .map(e => Number([...e.classList].find(c => c.startsWith('st-key-prefkit-run-')).slice(19)))"""


def run_marks(page) -> list[int]:
    return page.evaluate(RUN_MARKS)


# -- (d) a real browser: two contexts holding one cookie ----------------------------------------------------
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require_chromium()
    yield from serve(make_project(tmp_path_factory.mktemp("signout") / "proj", n=3, overlap=2))


@pytest.mark.browser
def test_a_sign_out_in_one_browser_ends_another_holding_the_cookie(served, browser):
    project, url, _ = served
    owner = sign_in(browser, url, "alice")
    other = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
    other.context.add_cookies([session_cookie(owner)])  # the same cookie in a second browser
    other.goto(url)
    other.get_by_text("signed in as alice").wait_for()
    settle(other)
    open_kind(other, "Preference matching")
    shown = workflow.current_item(project, "alice", KIND)

    owner.get_by_role("button", name="Sign out").click()
    owner.get_by_label("User name").wait_for()
    before = run_marks(other)
    other.keyboard.press("3")  # "Not covered" for the item still on its screen
    other.get_by_label("User name").wait_for()
    # the run that showed the sign-in form counts on from the runs before it: the key guard, which
    # waits after a key for a higher run mark, lets keys go at once (a count started again held them 20 s)
    other.wait_for_function(f"() => ({RUN_MARKS})().some(n => n > {max(before)})")
    settle(other)
    assert other.get_by_text("signed in as").count() == 0
    assert project.store.labels.event(shown.event_id) is None and no_events(project)
    assert workflow.current_item(project, "alice", KIND) == shown
    other.reload()  # the cookie it still holds signs nobody in either
    other.get_by_label("User name").wait_for()
    owner.context.close()
    other.context.close()
