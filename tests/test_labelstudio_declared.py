"""A declared kind through a real Label Studio server: the generated config (Choices, Rating, Ranker,
TextArea over Text and Paragraphs) is accepted, three people label there, and the pulled labels give
the decisions and agreement worked out by hand in tests/test_declared_kinds.py."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import label_studio_admin, three_label
from declaredkind import ANSWERS, DECIDED, NAME, declared_project
from prefkit.annotate_app.labelstudio import bridge
from prefkit.cli import cli
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.quality.consensus import final_labels

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow]


@pytest.fixture(scope="module")
def ls():
    return label_studio_admin()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("lsdecl") / "proj"
    project = declared_project(root, "ls-declared")
    yield project
    project.close()


def test_the_config_names_each_control_after_its_question(project):
    result = CliRunner().invoke(cli, ["labelstudio", "config", NAME, "-p", str(project.root)])
    assert result.exit_code == 0, result.output
    xml = result.output
    for control in (
        '<Choices name="better"',
        '<Rating name="strength"',
        'maxRating="5"',
        '<Choices name="tags" toName="history" choice="multiple"',
        '<Ranker name="order"',
        '<TextArea name="why"',
        '<Paragraphs name="history"',
        '<Text name="preferences"',
    ):
        assert control in xml


def test_three_people_label_in_label_studio_and_the_pull_gives_the_hand_computed_results(ls, project):
    report = bridge.push(project, NAME, ls.url)
    assert report.project_created and report.imported == 2 and not report.not_pushed

    def answer(who, task, served):
        assert served["data"]["preferences"] == "• short answers\n• no jargon"
        return ANSWERS[who][task.item_ref]

    assert three_label(ls, project, report.ls_project_id, answer) == {"ann1": 2, "ann2": 2, "ann3": 2}
    pulled = bridge.pull(project, NAME, ls.url)
    assert pulled.labels == 6 and not pulled.invalid
    events = project.store.labels.events(kind=NAME)
    assert {e.source for e in events} == {"labelstudio"} and len(events) == 6
    by_person = {(e.annotator, project.store.labels.task(e.task_id).item_ref): e.values for e in events}
    assert by_person[("admin", "i1")] == ANSWERS["ann1"]["i1"]
    finals = final_labels(project.store, NAME)
    assert {project.store.labels.task(t).item_ref: f.values for t, f in finals.items()} == DECIDED
    rows = {r["field"]: r["alpha"] for r in agreement_rows(project.store, kind=NAME, n_boot=50)}
    assert rows["better"] == pytest.approx(0.375) and rows["strength"] == pytest.approx(158 / 178)
    assert rows["order"] == pytest.approx(1 - (14 / 18) / (432 / 306))
    again = bridge.pull(project, NAME, ls.url)
    assert again.labels == 0 and len(project.store.labels.events(kind=NAME)) == 6


def test_a_label_past_the_overlap_is_recorded_counted_and_named(ls, project):
    import uuid

    from prefkit.annotate_app.labelstudio.accounts import signup
    from prefkit.annotate_app.labelstudio.config import ls_kind
    from prefkit.curation.quality.dashboard import overview

    if not project.store.labels.events(kind=NAME):  # run alone: the three people label first
        test_three_people_label_in_label_studio_and_the_pull_gives_the_hand_computed_results(ls, project)
    task_id = project.store.labels.task_ids_by_ref(NAME, ["i1"])["i1"]
    task = project.store.labels.task(task_id)
    ls_task = project.store.labelstudio.task_ids(ls.url, project.store.labelstudio.project_id(ls.url, NAME))
    fourth = signup(ls.url, f"ann4-{uuid.uuid4().hex[:8]}@prefkit.example.com", "Label-Studio-4th-user")
    fourth.submit(ls_task[task_id], ls_kind(NAME).results(ANSWERS["ann2"]["i1"], task), lead_time=4.0)
    result = CliRunner().invoke(cli, ["labelstudio", "pull", NAME, "--url", ls.url, "-p", str(project.root)])
    assert result.exit_code == 0, result.output
    assert "1 new labels" in result.output
    assert f"  beyond overlap, recorded: i1 ({NAME}): 4 labels, overlap 3" in result.output.splitlines()
    assert overview(project.store)["beyond_overlap"] == [f"i1 ({NAME}): 4 labels, overlap 3"]
    assert final_labels(project.store, NAME)[task_id].n_labels == 4
