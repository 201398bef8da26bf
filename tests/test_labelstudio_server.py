"""Against a real Label Studio server (started by .ci/labelstudio.sh): push every task kind, label as
two Label Studio users through /next, pull, and check what reaches the project store — on both
store backends (SQLite, PostgreSQL)."""

from __future__ import annotations

import os
import uuid
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from conftest import label_studio_admin, pg_admin
from prefkit.annotate_app.labelstudio import bridge
from prefkit.annotate_app.labelstudio.accounts import signup
from prefkit.annotate_app.labelstudio.config import TASK_ID_KEY, ls_kind
from prefkit.cli import cli
from prefkit.curation.annotation.guidelines import version_of
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.store import PreferencePair
from prefkit.schemas.curation import Provenance
from prefkit.schemas.generation import ChecklistItem, ContextFactor, ContextualPreference, Session, Turn

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow]
KINDS = ("preference_expressed", "preference_match", "memory_verify")


@pytest.fixture(scope="module")
def ls():
    return label_studio_admin()


def _session(i: int) -> Session:
    pref = ContextualPreference(
        text="Vegetarian recipes under 30 minutes", family="Content", preference_type="topic"
    )
    factor = ContextFactor(
        factor_id=f"f{i}",
        type="activity",
        name="weeknight dinners",
        background="Cooks after work.",
        task_types=["recipes"],
        preference=pref,
    )
    turns = [
        Turn(index=0, role="user", content=f"Session {i}: I only cook vegetarian food."),
        Turn(index=1, role="assistant", content="Here is a lentil stew that takes an hour."),
        Turn(index=2, role="user", content="Too long, I need it done in 30 minutes."),
    ]
    return Session(
        session_id=f"sess{i}",
        persona_id="p1",
        index=i,
        timestamp="2025-01-0{i}T18:00:00Z",
        context_factor=factor,
        preference=pref,
        checklist=[ChecklistItem(question="Is it vegetarian?"), ChecklistItem(question="Is it quick?")],
        turns=turns,
    )


def _pair(i: int) -> PreferencePair:
    return PreferencePair(f"pair{i}", f"Is item {i} covered?", f"Candidate preference {i}", "test")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_database(request):
    """The project store of this module's project: a SQLite file, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield None
        return
    from sqlalchemy.engine import make_url

    server = request.getfixturevalue("pg_server")
    name = "prefkit_ls_" + uuid.uuid4().hex[:12]
    pg_admin(server, f'CREATE DATABASE "{name}"')
    yield make_url(server).set(database=name).render_as_string(hide_password=False)
    pg_admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def project(tmp_path_factory, fixture_packets, store_database):
    root = tmp_path_factory.mktemp("ls") / "proj"
    Project.init(root, name="ls-test", database=store_database).close()
    cfg = root / "prefkit.toml"
    cfg.write_text(cfg.read_text().replace("overlap = 3", "overlap = 2"))
    from prefkit.pipelines.ingest import alpsbench

    project = Project(root)
    project.store.content.import_bundle(alpsbench.build_bundle(fixture_packets))
    for i in (1, 2):
        project.store.generation.add_session(_session(i), {}, [None, None, None], Provenance(source="test"))
    project.store.content.add_preference_pairs([_pair(i) for i in range(4)], Provenance(source="test"))
    create_tasks(project, "preference_match")
    gold = project.store.labels.tasks(kind="preference_match")[0]
    project.store.labels.set_gold(gold.task_id, {"coverage": "fully"})
    yield project
    project.close()


@pytest.fixture(scope="module")
def pushed(ls, project):
    return {kind: bridge.push(project, kind, ls.url) for kind in KINDS}


def _values(kind: str, task, disagree: bool) -> dict:
    """Yes to everything, or a different answer on one field when ``disagree``."""
    if kind == "preference_match":
        return {"coverage": "partially" if disagree else "fully"}
    if kind == "preference_expressed":
        n = len(task.payload["checklist"])
        return {
            "items": [{"item": i, "expressed": not (disagree and i == 1), "evidence": [0]} for i in range(n)]
        }
    keys = [c["key"] for c in task.payload["candidates"]]
    decisions = [{"key": k, "decision": "accept"} for k in keys]
    if disagree:
        decisions[0] = {"key": keys[0], "decision": "reject", "reason": "duplicate"}
    return {"decisions": decisions}


def _label_all(annotator, project, kind: str, pid: int, who: int) -> list[int]:
    """Take tasks from Label Studio's queue until it is empty; returns annotation ids."""
    ids = []
    regular = sorted(t.task_id for t in project.store.labels.tasks(kind=kind) if not t.is_gold)
    while (served := annotator.next_task(pid)) is not None:
        task = project.store.labels.task(served["data"][TASK_ID_KEY])
        disagree = who == 1 and task.task_id == regular[1]  # the second annotator differs on one task
        result = ls_kind(kind).results(_values(kind, task, disagree), task)
        ids.append(annotator.submit(served["id"], result, lead_time=10.0 + len(ids)))
    return ids


@pytest.fixture(scope="module")
def labelled(ls, project, pushed):
    second = signup(ls.url, f"ann-{uuid.uuid4().hex[:8]}@prefkit.example.com", "Label-Studio-2nd-user")
    anns = {}
    for kind in KINDS:
        pid = pushed[kind].ls_project_id
        anns[kind] = [_label_all(ls.admin, project, kind, pid, 0), _label_all(second, project, kind, pid, 1)]
    pushed_with = {kind: version_of(project.guidelines(kind)) for kind in KINDS}
    for kind in KINDS:  # edited after the push: the labels keep the version pushed with their task
        with (project.guidelines_dir / f"{kind}.md").open("a", encoding="utf-8") as fh:
            fh.write("\nA clarification made after the push.\n")
    first_pull = {kind: bridge.pull(project, kind, ls.url) for kind in KINDS}
    return SimpleNamespace(second=second, anns=anns, first_pull=first_pull, pushed_with=pushed_with)


def test_push_creates_a_project_per_kind_with_overlap_and_guidelines(ls, project, pushed):
    client = bridge.connect(ls.url, os.environ["LABEL_STUDIO_API_KEY"])
    assert pushed
    for kind, report in pushed.items():
        tasks = project.store.labels.tasks(kind=kind)
        assert report.project_created and report.imported == len(tasks) > 0 and not report.not_pushed
        info = client.projects.get(report.ls_project_id)
        assert info.maximum_annotations == 2
        assert (
            project.guidelines(kind).splitlines()[0].lstrip("# ").split(" — ")[0] in info.expert_instruction
        )
        mapped = project.store.labelstudio.task_ids(ls.url, report.ls_project_id)
        served = {int(t.id): t.data[TASK_ID_KEY] for t in client.tasks.list(project=report.ls_project_id)}
        assert served == {ls_id: task_id for task_id, ls_id in mapped.items()}


def test_gold_answer_is_uploaded_as_ground_truth(ls, project, pushed):
    gold = next(t for t in project.store.labels.tasks(kind="preference_match") if t.is_gold)
    ls_id = project.store.labelstudio.task_ids(ls.url, pushed["preference_match"].ls_project_id)[gold.task_id]
    anns = bridge.connect(ls.url, os.environ["LABEL_STUDIO_API_KEY"]).annotations.list(ls_id)
    assert pushed["preference_match"].gold == 1
    assert [(a.ground_truth, a.result[0]["value"]["choices"]) for a in anns] == [(True, ["fully"])]


def test_two_users_labels_arrive_as_validated_label_events(ls, project, labelled):
    for kind in KINDS:
        n = len(project.store.labels.tasks(kind=kind))
        # The pushing account made the gold task's ground truth, so /next does not serve it that task again.
        n_gold = sum(t.is_gold for t in project.store.labels.tasks(kind=kind))
        assert [len(ids) for ids in labelled.anns[kind]] == [n - n_gold, n]
        report = labelled.first_pull[kind]
        assert report.labels == 2 * n - n_gold and not report.invalid
        events = project.store.labels.events(kind=kind)
        assert len(events) == 2 * n - n_gold and {e.source for e in events} == {"labelstudio"}
        assert {e.annotator for e in events} == {"admin", labelled.second.email.split("@")[0]}
        assert min(e.time_spent_s for e in events) == 10.0
        assert {e.guidelines_version for e in events} == {labelled.pushed_with[kind]}
        assert version_of(project.guidelines(kind)) != labelled.pushed_with[kind]
    created = [u for r in labelled.first_pull.values() for u in r.users_created]
    second = labelled.second.email
    assert sorted(created) == sorted(
        [f"admin <{os.environ['LABEL_STUDIO_ADMIN_EMAIL']}>", f"{second.split('@')[0]} <{second}>"]
    )
    assert {u.role for u in project.store.accounts.users()} == {"annotator"}


def test_agreement_is_computed_over_the_pulled_labels(project, labelled):
    row = next(
        r
        for r in agreement_rows(project.store, "preference_match", n_boot=50)
        if r["comparison"] == "human-vs-human"
    )
    both = len(
        [t for t in project.store.labels.tasks(kind="preference_match") if not t.is_gold]
    )  # gold: one label only
    assert row["n_raters"] == 2 and row["n_units"] == both
    assert row["percent_agreement"] == pytest.approx((both - 1) / both)


def test_push_and_pull_again_change_nothing(ls, project, labelled):
    before = len(project.store.labels.events())
    for kind in KINDS:
        again = bridge.push(project, kind, ls.url)
        assert again.imported == 0 and again.already == len(project.store.labels.tasks(kind=kind))
        report = bridge.pull(project, kind, ls.url)
        assert (report.labels, report.updated, report.withdrawn, report.invalid) == (0, 0, 0, [])
        assert report.unchanged == len(project.store.labels.events(kind=kind))
    assert len(project.store.labels.events()) == before


def test_an_edit_supersedes_and_a_deletion_withdraws(ls, project, labelled):
    client = bridge.connect(ls.url, os.environ["LABEL_STUDIO_API_KEY"])
    edited, deleted = labelled.anns["preference_match"][0][:2]
    client.annotations.update(
        edited, result=ls_kind("preference_match").results({"coverage": "not_covered"}, None)
    )
    client.annotations.delete(deleted)
    report = bridge.pull(project, "preference_match", ls.url)
    assert (report.updated, report.withdrawn) == (1, 1)
    admin_live = {
        e.task_id: e
        for e in project.store.labels.effective_events("preference_match")
        if e.annotator == "admin"
    }
    n = len(project.store.labels.tasks(kind="preference_match"))
    assert len(admin_live) == n - 2  # the gold task (never served to admin) and the deleted one
    assert sum(e.values["coverage"] == "not_covered" for e in admin_live.values()) == 1
    latest = project.store.labels.events(kind="preference_match")[-2:]
    assert {e.action for e in latest} == {"label", "withdraw"} and all(e.supersedes for e in latest)


def test_a_result_that_does_not_fit_the_config_is_reported_not_recorded(ls, project, labelled, pushed):
    pid = pushed["preference_match"].ls_project_id
    some_task = next(iter(project.store.labelstudio.task_ids(ls.url, pid).values()))
    bogus = [
        {"from_name": "coverage", "to_name": "candidate", "type": "choices", "value": {"choices": ["mostly"]}}
    ]
    labelled.second.submit(some_task, bogus, lead_time=1.0)  # Label Studio stores it (201)
    before = len(project.store.labels.events())
    report = bridge.pull(project, "preference_match", ls.url)
    assert len(report.invalid) == 1 and "['mostly'] is not one of" in report.invalid[0]
    assert len(project.store.labels.events()) == before


def test_new_items_are_pushed_and_a_skip_comes_back_as_a_skip(ls, project, labelled, pushed):
    project.store.content.add_preference_pairs([_pair(9)], Provenance(source="test"))
    runner = CliRunner()
    out = runner.invoke(
        cli, ["labelstudio", "push", "preference_match", "--url", ls.url, "-p", str(project.root)]
    )
    assert out.exit_code == 0 and "imported 1 tasks" in out.output, out.output
    served = ls.admin.next_task(pushed["preference_match"].ls_project_id)
    assert served["data"][TASK_ID_KEY].startswith("preference_match_")
    ls.admin.submit(served["id"], [], lead_time=2.0, cancelled=True)
    out = runner.invoke(
        cli, ["labelstudio", "pull", "preference_match", "--url", ls.url, "-p", str(project.root)]
    )
    assert out.exit_code == 0 and "1 skips" in out.output, out.output
    skip = project.store.labels.events(kind="preference_match")[-1]
    assert (skip.action, skip.task_id, skip.annotator) == ("skip", served["data"][TASK_ID_KEY], "admin")


def test_status_lists_each_project_with_its_completion(ls, project, labelled):
    out = CliRunner().invoke(
        cli, ["labelstudio", "status", "--url", ls.url, "-p", str(project.root), "--json"]
    )
    assert out.exit_code == 0, out.output
    import json

    rows = {r["kind"]: r for r in json.loads(out.output)}
    assert set(rows) == set(KINDS)
    n = len(project.store.labels.tasks(kind="memory_verify"))
    assert rows["memory_verify"]["tasks"] == n and rows["memory_verify"]["annotators"] == 2
    assert rows["memory_verify"]["completion"] == f"{n}/{n} (100%)"


def test_a_project_deleted_in_label_studio_is_recreated_and_pulled_labels_stay(ls, project, labelled, pushed):
    before = len(project.store.labels.effective_events("preference_expressed"))
    bridge.connect(ls.url, os.environ["LABEL_STUDIO_API_KEY"]).projects.delete(
        pushed["preference_expressed"].ls_project_id
    )
    again = bridge.push(project, "preference_expressed", ls.url)
    assert again.project_created and again.ls_project_id != pushed["preference_expressed"].ls_project_id
    assert again.imported == len(project.store.labels.tasks(kind="preference_expressed"))
    assert bridge.pull(project, "preference_expressed", ls.url).withdrawn == 0
    assert len(project.store.labels.effective_events("preference_expressed")) == before > 0
