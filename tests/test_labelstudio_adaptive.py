"""Adaptive overlap through a real Label Studio server: audit items are pushed with their own overlap,
and a pull hands every uncertain item to one more annotator there (its ``overlap`` raised), so /next
serves it to the next person and to nobody beyond its target."""

from __future__ import annotations

import os
import uuid

import pytest
from conftest import label_studio_server, require
from prefkit.annotate_app.labelstudio import bridge
from prefkit.annotate_app.labelstudio.accounts import login, signup
from prefkit.annotate_app.labelstudio.config import TASK_ID_KEY, ls_kind
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.curation.store import PreferencePair
from prefkit.schemas.curation import Provenance

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow]
KIND = "preference_match"
N = 12


def _label_all(annotator, project, pid: int) -> list[str]:
    done = []
    while (served := annotator.next_task(pid)) is not None:
        task = project.store.labels.task(served["data"][TASK_ID_KEY])
        annotator.submit(served["id"], ls_kind(KIND).results({"coverage": "fully"}, task), lead_time=5.0)
        done.append(task.task_id)
    return done


def test_audit_items_and_uncertain_items_get_their_overlap_in_label_studio(tmp_path):
    url, _key = label_studio_server()
    email, password = (
        os.environ.get("LABEL_STUDIO_ADMIN_EMAIL"),
        os.environ.get("LABEL_STUDIO_ADMIN_PASSWORD"),
    )
    require(bool(email and password), "LABEL_STUDIO_ADMIN_EMAIL / _PASSWORD not set (.ci/labelstudio.sh)")
    root = tmp_path / "proj"
    Project.init(root, name="ls-adaptive").close()
    cfg = root / "prefkit.toml"
    cfg.write_text(
        cfg.read_text().replace("overlap = 3", "overlap = { min = 1, max = 2, audit_share = 0.3 }")
    )
    project = Project(root)
    pairs = [PreferencePair(f"ad{i}", f"Is item {i} covered?", f"Candidate {i}", "test") for i in range(N)]
    project.store.content.add_preference_pairs(pairs, Provenance(source="test"))
    create_tasks(project, KIND)
    tasks = {t.task_id: t for t in project.store.labels.tasks(kind=KIND)}
    audit = {tid for tid, t in tasks.items() if t.audit}
    assert 0 < len(audit) < N and all(tasks[t].overlap == 2 for t in audit)

    report = bridge.push(project, KIND, url)
    client = bridge.connect(url, os.environ["LABEL_STUDIO_API_KEY"])
    ls_ids = project.store.labelstudio.task_ids(url, report.ls_project_id)
    overlap_in_ls = {int(t.id): t.overlap for t in client.tasks.list(project=report.ls_project_id)}
    assert {tid: overlap_in_ls[ls_ids[tid]] for tid in tasks} == {tid: t.overlap for tid, t in tasks.items()}

    admin = login(url, email, password)
    assert sorted(_label_all(admin, project, report.ls_project_id)) == sorted(tasks)
    pulled = bridge.pull(project, KIND, url)
    # nobody's reliability is established on gold: every lone label is uncertain
    assert sorted(pulled.raised) == sorted(set(tasks) - audit)
    overlap_in_ls = {int(t.id): t.overlap for t in client.tasks.list(project=report.ls_project_id)}
    assert all(overlap_in_ls[ls_ids[tid]] == 2 for tid in tasks)

    second = signup(url, f"ad-{uuid.uuid4().hex[:8]}@prefkit.example.com", "Label-Studio-2nd-user")
    assert sorted(_label_all(second, project, report.ls_project_id)) == sorted(tasks)
    third = signup(url, f"ad-{uuid.uuid4().hex[:8]}@prefkit.example.com", "Label-Studio-3rd-user")
    assert _label_all(third, project, report.ls_project_id) == []  # every item is at its target
    again = bridge.pull(project, KIND, url)
    assert again.labels == N and again.raised == []  # at max: nothing more to hand out
    per_task = {}
    for e in project.store.labels.events(kind=KIND):
        per_task.setdefault(e.task_id, set()).add(e.annotator)
    assert sorted(per_task) == sorted(tasks)
    assert all(len(who) == project.store.labels.task(tid).overlap == 2 for tid, who in per_task.items())
    project.close()
