"""Span questions of a declared kind through a real Label Studio server: Labels over the text field,
ParagraphLabels over the chat's Paragraphs, offsets in the browser's UTF-16 units there and code points
in prefkit; three people mark words there and the pull gives the hand-worked decisions."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import label_studio_admin, three_label
from prefkit.annotate_app.labelstudio import bridge
from prefkit.annotate_app.labelstudio.config import ls_kind
from prefkit.cli import cli
from prefkit.curation.annotation.task_kinds import LabelError
from prefkit.curation.quality.consensus import final_labels
from spankind import ANSWERS, DECIDED, ITEMS, NAME, declared_project

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow]

#: A second item whose words follow an emoji with its skin tone (2 code points, 4 UTF-16 units).
EMOJI = {**ITEMS[0], "id": "s2", "response": "\U0001f44d\U0001f3fd great bike lane"}
EMOJI_SPAN = {"marks": [{"start": 9, "end": 18, "label": "pref"}]}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("lsspans") / "proj"
    project = declared_project(root, "ls-spans", items=[*ITEMS, EMOJI])
    yield project
    project.close()


def test_the_config_uses_labels_over_the_fields(project):
    result = CliRunner().invoke(cli, ["labelstudio", "config", NAME, "-p", str(project.root)])
    assert result.exit_code == 0, result.output
    assert '<Labels name="marks" toName="response" granularity="word">' in result.output
    assert '<Label value="pref"/>' in result.output and '<Label value="bad"/>' in result.output
    assert '<ParagraphLabels name="said" toName="history">' in result.output


def test_offsets_are_utf16_in_label_studio_and_a_region_across_turns_is_refused(project):
    task = next(t for t in project.store.labels.tasks(kind=NAME) if t.item_ref == "s2")
    (region,) = ls_kind(NAME).results(EMOJI_SPAN, task)
    assert region["value"] == {"start": 11, "end": 20, "labels": ["pref"], "text": "bike lane"}
    said = {
        "from_name": "said",
        "to_name": "history",
        "type": "paragraphlabels",
        "value": {"start": 0, "end": 1, "startOffset": 0, "endOffset": 2, "paragraphlabels": ["pref"]},
    }
    with pytest.raises(LabelError, match="said: region .* mark words within one turn of history"):
        ls_kind(NAME).values([said], task)


def test_people_mark_words_in_label_studio_and_the_pull_gives_the_decided_spans(ls, project):
    report = bridge.push(project, NAME, ls.url)
    assert report.project_created and report.imported == 2 and not report.not_pushed

    def answer(who, task, served):
        return ANSWERS[who] if task.item_ref == "s1" else EMOJI_SPAN

    assert three_label(ls, project, report.ls_project_id, answer) == {"ann1": 2, "ann2": 2, "ann3": 2}
    pulled = bridge.pull(project, NAME, ls.url)
    assert pulled.labels == 6 and not pulled.invalid
    events = project.store.labels.events(kind=NAME)
    by_person = {(e.annotator, project.store.labels.task(e.task_id).item_ref): e.values for e in events}
    assert by_person[("admin", "s1")] == ANSWERS["ann1"] and by_person[("admin", "s2")] == EMOJI_SPAN
    finals = {
        project.store.labels.task(t).item_ref: f.values for t, f in final_labels(project.store, NAME).items()
    }
    assert finals == {"s1": DECIDED, "s2": EMOJI_SPAN}


@pytest.fixture(scope="module")
def ls():
    return label_studio_admin()
