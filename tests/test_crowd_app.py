"""A crowd study's page under Streamlit's AppTest (annotate_app/views/study_entry.py): the entry URL
opens the participant's page with no sign-in form, a bad URL is one page that records nothing, items
are labelled there, and the end shows the code."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from appkit import APP, project_fixtures
from conftest import crowd_study
from prefkit.curation.annotation import people, studies, workflow

template, project = project_fixtures(env=True, n=8, overlap=2)
KIND = "preference_match"


@pytest.fixture
def study(project):
    return crowd_study(project, completion_code="DONE7", screened_out_code="OUT7")


def tab(created, **params):
    """A new browser tab on the study's entry URL with ``params`` filled in for the placeholders."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    query = {k: v[0] for k, v in parse_qs(urlsplit(created.entry_url).query).items()}
    query.update({"PROLIFIC_PID": "p1", "STUDY_ID": "st1", "SESSION_ID": "se1"})
    for key, value in params.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def texts(at) -> str:
    return " ".join(
        str(e.value) for e in [*at.title, *at.markdown, *at.info, *at.error, *at.success, *at.warning]
    )


def test_the_entry_url_opens_the_guidelines_without_a_sign_in_form(project, study):
    at = tab(study)
    assert not at.exception
    assert [t.value for t in at.title] == ["Preference matching"]  # a title, never the study's id
    said = texts(at)
    assert "You will see 4 items; it takes about 3 minutes (at most 30)" in said  # 4 x 40 s, rounded up
    assert not {"check", "gold", "attention"} & set(re.findall(r"[a-z]+", said.lower())), said
    assert not [w for w in at.text_input if w.label in ("User name", "Password")]
    assert [p.platform_id for p in project.store.studies.participants("pilot")] == ["p1"]


@pytest.mark.parametrize(
    "params",
    [
        {"PROLIFIC_PID": None},
        {"PROLIFIC_PID": "x" * 1000},
        {"PROLIFIC_PID": "p\x07"},
        {"study": "pilot.forged-secret-forged-secret"},
    ],
)
def test_a_bad_entry_url_is_one_page_that_records_nothing(project, study, params):
    before = project.store.studies.counts()
    at = tab(study, **params)
    assert not at.exception
    assert [t.value for t in at.title] == ["This study link cannot be opened"]
    assert len(at.error) == 1
    assert project.store.studies.counts() == before


def test_a_participant_labels_their_items_and_gets_the_completion_code(project, study):
    at = tab(study)
    at.button(key="study_start").click().run()
    assert "item 1 of 4" in texts(at)
    for _ in range(4):
        who = studies.username_for("pilot", "p1")
        item = workflow.current_item(project, who, KIND)
        value = "fully" if item.task.is_gold else "partially"
        at.button(key=f"{item.event_id}:{value}").click().run()
    assert [t.value for t in at.title] == ["Thank you! You have finished this study"]
    assert "DONE7" in texts(at)
    assert at.get("link_button")[0].proto.url == "https://app.prolific.com/submissions/complete?cc=DONE7"
    assert [e.event for e in project.store.studies.events("pilot")] == ["arrived", "completed"]


def test_a_disabled_participant_reopening_the_link_gets_one_page_and_writes_nothing(project, study):
    tab(study)  # arrived, then disabled by a maintainer
    people.disable(project, "maya", studies.username_for("pilot", "p1"))
    before = (project.store.studies.counts(), project.store.studies.count("app_sessions"))
    at = tab(study)  # the same link again: once refused, not a session ended and reloaded without end
    assert not at.exception
    assert [t.value for t in at.title] == ["This study link cannot be opened"]
    assert "closed by the researchers" in at.error[0].value
    assert (project.store.studies.counts(), project.store.studies.count("app_sessions")) == before


def maintainer_on_studies():
    from appkit import MAYA, app

    at = app(MAYA)
    at.switch_page("views/studies.py")
    return at.run()


def test_the_studies_page_reviews_a_study_with_its_platform_files(project, study):
    tab(study)  # p1 arrives
    at = maintainer_on_studies()
    assert not at.exception
    assert at.dataframe[0].value["study"].tolist() == ["pilot"]
    review = at.dataframe[1].value
    assert review["participant"].tolist() == ["p1"] and review["decision"].tolist() == ["none"]
    assert list(review.columns)[:3] == ["participant", "decision", "reason"]  # in view at 800 px wide
    assert [b.label for b in at.get("download_button")] == ["decisions.csv", "approve.txt", "bonuses.csv"]


def test_a_study_created_on_the_studies_page_shows_its_url_once_and_is_audited(project, study):
    at = maintainer_on_studies()
    at.text_input(key="study_create_id").input("wave-2")
    at.selectbox(key="study_create_kind").select(KIND)
    at.number_input(key="study_create_items").set_value(2)
    at.number_input(key="study_create_gold").set_value(0.5)
    at.text_input(key="study_create_code").input("W2DONE")
    at.text_input(key="study_create_out").input("W2OUT")
    at.number_input(key="study_create_places").set_value(30)
    at.button(key="FormSubmitter:study_create-Create study").click().run()
    assert not at.exception and not at.error
    assert [s.study_id for s in project.store.studies.studies()] == ["pilot", "wave-2"]
    assert "study=wave-2." in at.code[0].value and "PROLIFIC_PID={{%PROLIFIC_PID%}}" in at.code[0].value
    assert [e.action for e in project.store.audit.events(action="study")] == ["study.create"]
    assert project.store.studies.study("wave-2").rules["places"] == 30
    at.run()
    assert not at.code  # the URL is not shown again


def test_a_refused_study_on_the_studies_page_is_one_line_and_nothing_is_stored(project, study):
    at = maintainer_on_studies()
    at.text_input(key="study_create_id").input("Bad Id")
    at.button(key="FormSubmitter:study_create-Create study").click().run()
    assert len(at.error) == 1 and at.error[0].value.startswith("Not created: a study id is 1")  # escaped
    assert [s.study_id for s in project.store.studies.studies()] == ["pilot"]


def test_a_participant_never_reaches_the_maintainer_pages(project, study):
    at = tab(study)
    # the study's page is the only page registered for a participant's browser
    with pytest.raises(ValueError, match=r"Known pages: \['[^']*/views/study_entry.py'\]"):
        at.switch_page("views/studies.py")
