"""No page reruns itself more than once per action of the person: every page reruns through
``ui.rerun`` (the guard), the guard stops a run the page started itself that asks for another, and
every page of the app, opened as the one who may see it and again after that account was disabled,
ends its run with at most one rerun and without the guard's stop."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import streamlit
from appkit import ALICE, MAYA, project_fixtures
from conftest import ROOT
from streamlit.testing.v1 import AppTest

template, project = project_fixtures(env=True, n=3, overlap=2)
APP_DIR = ROOT / "annotate_app"
VIEWS = sorted(p.stem for p in (APP_DIR / "views").glob("*.py") if p.stem != "__init__")
STOPPED = "This page stopped reloading itself"
#: pages of the navigation and who reaches each (the sign-in page and a study's page: nobody signed in)
ANNOTATOR_PAGES = {"annotate", "my_items", "guidelines"}
VISITOR_PAGES = {"sign_in", "study_entry"}


@pytest.fixture
def reruns(monkeypatch) -> list[str]:
    """Every ``st.rerun`` a run asks for (the real one still runs)."""
    calls: list[str] = []
    real = streamlit.rerun

    def counted(*args, **kwargs):
        calls.append("rerun")
        real(*args, **kwargs)

    monkeypatch.setattr(streamlit, "rerun", counted)
    return calls


def test_every_page_reruns_through_the_guard():
    direct = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in APP_DIR.rglob("*.py")
        if path.name != "ui.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bst\.(rerun|experimental_rerun)\(", line)
    ]
    assert direct == []
    assert len(VIEWS) >= 12  # the pages are found


def test_a_page_that_reruns_itself_again_is_stopped_after_one_rerun(tmp_path, reruns):
    script = Path(tmp_path / "loop.py")
    script.write_text(
        "import streamlit as st\nfrom prefkit.annotate_app import ui\n"
        "ui.begin_run()\nst.session_state['runs'] = st.session_state.get('runs', 0) + 1\nui.rerun()\n"
    )
    at = AppTest.from_file(str(script), default_timeout=30).run()
    assert at.session_state["runs"] == 2 and reruns == ["rerun"]
    assert [e.value for e in at.error] == [
        "This page stopped reloading itself: reload it, or open your link again."
    ]
    at.run()  # the person's next action may rerun once again
    assert at.session_state["runs"] == 4 and len(reruns) == 2


def open_page(view: str, user) -> AppTest:
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=60)
    if user is not None:
        at.session_state["user"] = user
        at.session_state["kind"] = "preference_match"
    at.run()
    if user is not None and view not in ("annotate", "dashboard"):
        at.switch_page(f"views/{view}.py")
        at.run()
    return at


@pytest.mark.parametrize("view", VIEWS)
def test_each_page_ends_its_run_with_at_most_one_rerun(project, view, reruns):
    user = None if view in VISITOR_PAGES else ALICE if view in ANNOTATOR_PAGES else MAYA
    at = open_page(view, user)
    assert not at.exception and len(reruns) <= 1
    assert not any(STOPPED in e.value for e in at.error)
    if user is None:
        return
    if user is MAYA:  # not the last maintainer
        project.store.accounts.add_user("spare", "maintainer", "correct-horse-9")
    project.store.accounts.set_user_active(user.username, False)  # disabled while the page is open
    reruns.clear()
    at.run()
    assert not at.exception and len(reruns) <= 1
    assert not any(STOPPED in e.value for e in at.error)
    assert "user" not in at.session_state  # signed out: the sign-in page, not a loop
