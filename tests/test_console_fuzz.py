"""Generated bad input (hypothesis) at the doors a careless or hostile person reaches: a crowd
study's entry URL (every query parameter any platform's link carries) and every form of the
maintainer's console (every text, number and choice field the pages draw, found on the page, so a
field added tomorrow is fuzzed without a new test). Whatever is typed: no traceback, each refusal one
line, and a refused action writes nothing (no row, no audit event)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from appkit import APP, MAYA, project_fixtures
from conftest import ROOT, crowd_study
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from prefkit.curation.annotation import studies
from streamlit.testing.v1 import AppTest

template, project = project_fixtures(env=True, n=4, overlap=2)
KIND = "preference_match"
#: The console's pages: every maintainers' page with a form (or a maintainer's action through
#: ``console.act``).
CONSOLE = sorted(
    p.stem
    for p in (ROOT / "annotate_app" / "views").glob("*.py")
    if 'ui.require("maintainer")' in p.read_text()
    and ("console.act(" in p.read_text() or "st.form(" in p.read_text())
)
HOSTILE = [
    "",
    " ",
    "\x00",
    "a\nb",
    "\u202eexe.txt",
    "\u200b",
    "x" * 5000,
    "<script>alert(1)</script>",
    "'; DROP TABLE users; --",
    "-1",
    "nan",
    "inf",
    "1e309",
    "2..",
    "0..0",
    "{",
    '{"coverage": 1}',
    "../../etc/passwd",
    "ａｌｉｃｅ",
    "maya",
    "default",
    "=HYPERLINK(1)",
    "\U0001f600",
    "\\",
    "%_",
]
TEXT = st.one_of(st.sampled_from(HOSTILE), st.text(st.characters(exclude_categories=("Cs",)), max_size=80))
#: Each example is a few runs of a page; the pages' state grows from example to example (accounts,
#: tasks), so a failing example is reported as found, not shrunk by replays.
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def written(project) -> tuple:
    """What an action could write: every audited change and the rows it makes."""
    store = project.store
    return (
        len(store.audit.events()),
        store.count("users"),
        store.count("tasks"),
        store.count("studies"),
        store.count("batches"),
        len(store.labels.gold_answers(KIND)),
    )


def one_liners(at: AppTest) -> list[str]:
    return [e.value for e in at.error if "\n" in e.value.strip() or "Traceback" in e.value]


# -- every console form ---------------------------------------------------------------------------------
def test_the_console_pages_are_found():
    assert {"people", "work", "release", "studies"} <= set(CONSOLE)


def _number(data, widget) -> float | None:
    low = widget.min if widget.min is not None else -1e6
    high = widget.max if widget.max is not None else 1e6
    return data.draw(st.one_of(st.sampled_from([low, high]), st.floats(low, high, allow_nan=False)))


@SETTINGS
@given(data=st.data())
def test_any_input_to_any_console_form_is_one_line_or_done(project, data):
    page = data.draw(st.sampled_from(CONSOLE), label="page")
    at = AppTest.from_file(APP, default_timeout=120)  # the app's navigation: its page links resolve
    at.session_state["user"] = MAYA
    at.run().switch_page(f"views/{page}.py").run()
    assert at.title and not at.exception, (page, at.exception)
    for group in [g for g in at.button_group if g.key and g.key.endswith("_action")]:
        group.set_value(data.draw(st.sampled_from(list(group.options)), label=group.key)).run()
    for widget in [*at.text_input, *at.text_area]:
        widget.input(data.draw(TEXT, label=str(widget.key)))
    for widget in at.number_input:
        widget.set_value(_number(data, widget))
    for widget in at.selectbox:
        if widget.options:
            widget.set_value(data.draw(st.sampled_from(list(widget.options)), label=str(widget.key)))
    buttons = [b for b in at.button if b.key not in ("signout",) and not b.disabled]
    if not buttons:
        return
    # drawn by label and place: an AppTest element cannot be printed in a failing example's report
    _label, i = data.draw(st.sampled_from([(b.label, i) for i, b in enumerate(buttons)]), label="button")
    button = buttons[i]
    before = written(project)
    button.click().run()
    assert not at.exception, at.exception
    assert one_liners(at) == []
    if at.error:  # refused: nothing written
        assert written(project) == before, [e.value for e in at.error]


# -- the entry URL ----------------------------------------------------------------------------------------
@pytest.fixture
def study(project):
    return crowd_study(project, completion_code="DONE7", screened_out_code="OUT7")


#: Every query parameter an entry link of any platform carries.
PARAMS = sorted(
    {"study"} | {n for p in studies.PLATFORMS.values() for n in (p.participant, p.study, p.session)}
)


def entry_params(data, created) -> dict[str, str]:
    """A query: each parameter valid, hostile or missing (the study token: the real one, forged or garbage)."""
    token = parse_qs(urlsplit(created.entry_url).query)["study"][0]
    valid = {
        "study": token,
        "PROLIFIC_PID": "p1",
        "SESSION_ID": "s1",
        "STUDY_ID": "x1",
        "PARTICIPANT_ID": "p1",
    }
    out = {}
    for name in PARAMS:
        choice = data.draw(st.sampled_from(["valid", "hostile", "missing"]), label=name)
        if choice == "valid":
            out[name] = valid.get(name, "v1")
        elif choice == "hostile":
            forged = [token[:-1] + ("A" if token[-1] != "A" else "B"), "pilot." + "x" * 32, token + "\x00"]
            out[name] = data.draw(st.one_of(TEXT, st.sampled_from(forged)), label=name)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_entry_url_opens_one_participant_or_is_refused_in_one_line(project, study, data):
    params = entry_params(data, study)
    before = project.store.studies.counts()
    try:
        arrival = studies.arrive(project, params)
    except studies.EntryRefused as exc:
        assert "\n" not in str(exc) and str(exc).strip()
        assert project.store.studies.counts() == before
        return
    pid = params["PROLIFIC_PID"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", pid) and re.fullmatch(
        r"[A-Za-z0-9_-]{1,64}", params["SESSION_ID"]
    )
    assert params["study"] == parse_qs(urlsplit(study.entry_url).query)["study"][0]
    assert arrival.participant.platform_id == pid and arrival.account.username == studies.username_for(
        "pilot", pid
    )


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_entry_url_in_the_app_is_one_page(project, study, data):
    params = entry_params(data, study)
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    before = project.store.studies.counts()
    at.run()
    assert not at.exception and one_liners(at) == []
    if at.error:
        assert [t.value for t in at.title] == ["This study link cannot be opened"]
        assert project.store.studies.counts() == before


def test_the_fuzz_reads_the_views_it_names():
    assert all(Path(ROOT / "annotate_app" / "views" / f"{p}.py").exists() for p in CONSOLE)
