"""Against the real Label Studio server: suggestions go as predictions on the assisted arm only (a
control task has none), and a pulled annotation records the arm and the suggestion its task had."""

from __future__ import annotations

import pytest
from appkit import set_control_share
from prefkit.annotate_app.labelstudio import bridge
from prefkit.annotate_app.labelstudio.config import TASK_ID_KEY, ls_kind
from prefkit.curation.annotation.suggestions import EVERYONE, arm_of
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.curation.store import PreferencePair
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.suggestions import suggest
from prefkit.schemas.curation import Provenance
from test_labelstudio_server import ls  # noqa: F401 - the fixture (a real server and its admin)

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow]
KIND = "preference_match"


def half_assisted(root, name: str) -> Project:
    """A new project at ``root`` whose assist control share is 0.5."""
    Project.init(root, name=name).close()
    set_control_share(root, 0.5)
    return Project(root)


def test_control_tasks_get_no_prediction_and_a_pull_records_the_arm(ls, tmp_path):  # noqa: F811
    project = half_assisted(tmp_path / "proj", "ls-assist")
    try:
        pairs = [
            PreferencePair(
                f"p{i:02d}",
                f"Does the reply use metric units? ({i})",
                ("Prefers metric units" if i % 2 else "Likes jazz") + f" {i}",
                "test",
            )
            for i in range(12)
        ]
        project.store.content.add_preference_pairs(pairs, Provenance(source="test"))
        create_tasks(project, KIND, overlap=1)
        with LLMLayer(project.store, backend="offline", progress=False) as layer:
            assert suggest(project.store, layer, KIND).suggested == 12
        suggestions = project.store.suggestions.latest(KIND)
        report = bridge.push(project, KIND, ls.url)
        tasks = {t.task_id: t for t in project.store.labels.tasks(kind=KIND)}
        arms = {}
        for ls_task in bridge.connect(ls.url, ls.key).tasks.list(project=report.ls_project_id, fields="all"):
            task = tasks[ls_task.data[TASK_ID_KEY]]
            arm = arm_of(EVERYONE, KIND, task.item_ref, 0.5)
            arms[arm] = arms.get(arm, 0) + 1
            assert ls_task.data[bridge.ASSIST_KEY] == {
                "arm": arm,
                "suggestion_id": suggestions[task.task_id].suggestion_id,
            }
            predictions = ls_task.predictions or []
            if arm == "control":
                assert predictions == []
            else:
                (pred,) = predictions
                result = pred["result"] if isinstance(pred, dict) else pred.result
                assert ls_kind(KIND).values(result, task) == suggestions[task.task_id].values
        assert arms.get("control", 0) >= 2 and arms.get("assisted", 0) >= 2
        served = ls.admin.next_task(report.ls_project_id)
        task = tasks[served["data"][TASK_ID_KEY]]
        ls.admin.submit(served["id"], ls_kind(KIND).results({"coverage": "partially"}, task), lead_time=7.0)
        bridge.pull(project, KIND, ls.url)
        (ev,) = [e for e in project.store.labels.events() if e.task_id == task.task_id]
        assert ev.assist_arm == arm_of(EVERYONE, KIND, task.item_ref, 0.5)
        assert ev.suggestion_id == suggestions[task.task_id].suggestion_id
    finally:
        project.close()


def test_a_suggestion_made_after_the_push_is_added_to_unanswered_tasks_only(ls, tmp_path):  # noqa: F811
    project = half_assisted(tmp_path / "proj", "ls-assist-later")
    try:
        pairs = [
            PreferencePair(f"q{i:02d}", f"Is the reply short? ({i})", f"Prefers short replies {i}", "test")
            for i in range(10)
        ]
        project.store.content.add_preference_pairs(pairs, Provenance(source="test"))
        create_tasks(project, KIND, overlap=1)
        first = bridge.push(project, KIND, ls.url)  # no suggestion yet
        assert (first.imported, first.suggestions_added, first.suggestions_withheld) == (10, 0, 0)
        tasks = {t.task_id: t for t in project.store.labels.tasks(kind=KIND)}
        served = ls.admin.next_task(first.ls_project_id)  # answered before any suggestion exists
        answered = tasks[served["data"][TASK_ID_KEY]]
        ls.admin.submit(served["id"], ls_kind(KIND).results({"coverage": "fully"}, answered), lead_time=3.0)

        with LLMLayer(project.store, backend="offline", progress=False) as layer:
            assert suggest(project.store, layer, KIND).suggested == 10
        suggestions = project.store.suggestions.latest(KIND)
        second = bridge.push(project, KIND, ls.url)
        assert (second.imported, second.suggestions_added, second.suggestions_withheld) == (0, 9, 1)
        client = bridge.connect(ls.url, ls.key)
        listed = list(client.tasks.list(project=first.ls_project_id, fields="all"))
        assert len(listed) == 10
        for ls_task in listed:
            task = tasks[ls_task.data[TASK_ID_KEY]]
            predictions = ls_task.predictions or []
            if task.task_id == answered.task_id:  # its annotator saw no suggestion: it stays so
                assert bridge.ASSIST_KEY not in ls_task.data and predictions == []
                continue
            arm = arm_of(EVERYONE, KIND, task.item_ref, 0.5)
            assert ls_task.data[bridge.ASSIST_KEY] == {
                "arm": arm,
                "suggestion_id": suggestions[task.task_id].suggestion_id,
            }
            assert len(predictions) == (0 if arm == "control" else 1)
        third = bridge.push(project, KIND, ls.url)  # nothing newer: Label Studio is not even listed
        assert (third.imported, third.suggestions_added, third.suggestions_withheld) == (0, 0, 0)

        bridge.pull(project, KIND, ls.url)
        (ev,) = [e for e in project.store.labels.events() if e.task_id == answered.task_id]
        assert (ev.assist_arm, ev.suggestion_id) == (None, None)  # what the annotator saw: nothing
    finally:
        project.close()
