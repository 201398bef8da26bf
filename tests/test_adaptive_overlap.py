"""Adaptive overlap: an item goes to ``min`` annotators, one more while its labels are uncertain, up to
``max``; a stable audit share always gets ``max``; min = 1 only for annotators established on gold."""

from __future__ import annotations

import pytest
from appkit import seed_pairs
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import overlap, workflow
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.quality.gates import ConfigPlan, run_gates
from prefkit.schemas.common import utcnow
from prefkit.schemas.config import ConfigError, OverlapRange
from prefkit.schemas.curation import AnnotationTask

KIND = "preference_match"
USERS = ("ann1", "ann2", "ann3", "ann4")


@pytest.fixture
def project(tmp_path):
    project = Project.init(tmp_path / "p")
    with project.store.write() as conn:
        conn.execute(
            project.store.t["users"].insert(),
            [
                {
                    "username": u,
                    "role": "annotator",
                    "password_hash": "x",
                    "email": None,
                    "active": True,
                    "created_at": utcnow(),
                }
                for u in USERS
            ],
        )
    yield project
    project.close()


def _label(project, who: str, answer) -> int:
    n = 0
    while (item := workflow.current_item(project, who, KIND)) is not None:
        workflow.submit(project, who, item, {"coverage": answer(item.task)})
        n += 1
    return n


def _pair_no(task: AnnotationTask) -> int:
    return int(task.payload["pair_id"].removeprefix("pair_"))


def test_the_audit_share_is_a_stable_draw_of_about_its_size():
    ids = [f"preference_match_{i:05d}" for i in range(4000)]
    drawn = [t for t in ids if overlap.is_audit(t, 0.1)]
    assert 0.08 < len(drawn) / len(ids) < 0.12
    assert drawn == [t for t in ids if overlap.is_audit(t, 0.1)]
    assert not any(overlap.is_audit(t, 0.0) for t in ids) and all(overlap.is_audit(t, 1.0) for t in ids)


def test_tasks_start_at_min_audit_items_at_max_and_gold_is_never_audit(project):
    seed_pairs(project, 60)
    create_tasks(project, KIND, overlap=OverlapRange(min=2, max=4, audit_share=0.2), gold_rate=0)
    tasks = project.store.labels.tasks(kind=KIND)
    assert {(t.overlap_min, t.overlap_max) for t in tasks} == {(2, 4)}
    assert {t.overlap for t in tasks if t.audit} == {4} and {t.overlap for t in tasks if not t.audit} == {2}
    assert [t.audit for t in tasks] == [overlap.is_audit(t.task_id, 0.2) for t in tasks]
    gold = AnnotationTask(task_id="g", kind=KIND, item_ref="x", payload={}, is_gold=True, created_at=utcnow())
    assert overlap.apply_overlap([gold], OverlapRange(min=1, max=3, audit_share=1.0))[0].audit is False


def test_the_cli_takes_a_range_and_refuses_a_bad_one_in_one_line(project):
    seed_pairs(project, 5)
    runner = CliRunner()
    out = runner.invoke(
        cli, ["tasks", "create", "-p", str(project.root), "--kind", KIND, "--overlap", "2..3"]
    )
    assert out.exit_code == 0, out.output
    assert {(t.overlap_min, t.overlap_max) for t in project.store.labels.tasks(kind=KIND)} == {(2, 3)}
    bad = runner.invoke(
        cli, ["tasks", "create", "-p", str(project.root), "--kind", KIND, "--overlap", "4..2"]
    )
    assert (
        bad.exit_code == 1
        and bad.output == "error: overlap '4..2': overlap: Value error, overlap max 2 is below min 4\n"
    )
    with pytest.raises(ConfigError, match="give a number"):
        OverlapRange.parse("two")


def test_agreeing_items_stop_at_min_and_disagreeing_ones_go_to_more_annotators(project):
    seed_pairs(project, 10)
    create_tasks(project, KIND, overlap=OverlapRange(min=2, max=4, audit_share=0), gold_rate=0)
    # even pairs: everyone says fully; odd pairs: each annotator says something else
    answers = ("fully", "partially", "not_covered", "not_covered")
    for i, who in enumerate(USERS):
        _label(project, who, lambda t, i=i: "fully" if _pair_no(t) % 2 == 0 else answers[i])
    tasks = project.store.labels.tasks(kind=KIND)
    assert len(tasks) == 10
    for t in tasks:
        n = len(project.store.labels.events(task_id=t.task_id))
        assert (t.overlap, n) == ((2, 2) if _pair_no(t) % 2 == 0 else (4, 4)), t.payload["pair_id"]


def test_a_lone_label_stands_only_from_an_annotator_established_on_gold(project):
    seed_pairs(project, 20)
    rule = OverlapRange(min=1, max=3, audit_share=0, gold_items=5)
    create_tasks(project, KIND, overlap=rule, gold_rate=0.5)
    for t in project.store.labels.tasks(kind=KIND)[:5]:
        project.store.labels.set_gold(t.task_id, {"coverage": "fully"})
    first_chunk = []
    for _ in range(10):  # a chunk of 10: the 5 gold items (answered right) and 5 regular ones
        item = workflow.current_item(project, "ann2", KIND)
        workflow.submit(project, "ann2", item, {"coverage": "fully"})
        first_chunk.append(item.task)
    assert sum(t.is_gold for t in first_chunk) == 5
    # the snapshot the submits read was fitted before ann2 had any gold label: not established yet
    regular = [project.store.labels.task(t.task_id) for t in first_chunk if not t.is_gold]
    assert {t.overlap for t in regular} == {2}
    overlap.refresh(project.store, KIND, force=True)
    assert overlap.read_snapshot(project.store, KIND).gold["ann2"] == 5
    item = workflow.current_item(project, "ann2", KIND)
    workflow.submit(project, "ann2", item, {"coverage": "fully"})
    assert project.store.labels.task(item.task.task_id).overlap == 1  # the lone label stands


def test_agreement_is_measured_on_the_audit_share_and_the_gate_reads_the_target(project):
    seed_pairs(project, 40)
    create_tasks(project, KIND, overlap=OverlapRange(min=2, max=3, audit_share=0.3), gold_rate=0)
    for who in USERS[:3]:
        _label(
            project, who, lambda t, who=who: "fully" if (who != "ann3" or _pair_no(t) % 3) else "partially"
        )
    rows = agreement_rows(project.store, kind=KIND, n_boot=50)
    audit, everything = rows[0], rows[1]
    assert (audit["comparison"], audit["share"]) == ("human-vs-human", "audit")
    assert (everything["comparison"], everything["share"]) == ("human-vs-human, all items", "all")
    n_audit = sum(t.audit for t in project.store.labels.tasks(kind=KIND))
    assert audit["n_units"] == n_audit < everything["n_units"] == 40
    (gate,) = [
        g
        for g in run_gates(project.store, project.config.release, [ConfigPlan("matching", (KIND,), 40)])
        if g.gate == "min_labels"
    ]
    assert gate.passed  # every task has the labels of its target (2 or 3)
    strict = project.config.release.model_copy(update={"min_labels_per_item": 3})
    (gate,) = [
        g
        for g in run_gates(project.store, strict, [ConfigPlan("matching", (KIND,), 40)])
        if g.gate == "min_labels"
    ]
    assert gate.passed  # a fixed number applies to tasks of a fixed overlap: adaptive ones need their target


def test_a_stale_item_goes_back_to_the_pool_within_its_target(project):
    seed_pairs(project, 3)
    create_tasks(project, KIND, overlap=OverlapRange(min=2, max=3, audit_share=0), gold_rate=0)
    held = workflow.current_item(project, "ann1", KIND)
    released = workflow.release_stale(project, hours=0, annotator="ann1")
    assert [r.task_id for r in released] == [t.task_id for t in project.store.labels.tasks(kind=KIND)]
    for who in USERS[1:3]:
        _label(project, who, lambda t: "fully")
    task = project.store.labels.task(held.task.task_id)
    assert task.overlap == 2 and len(project.store.labels.events(task_id=task.task_id)) == 2
    assert workflow.current_item(project, "ann4", KIND) is None  # nothing over its target is offered


def test_tasks_adapt_refits_and_hands_out_what_is_no_longer_certain(project):
    import numpy as np
    from prefkit.schemas.common import canonical_json

    seed_pairs(project, 3)
    create_tasks(project, KIND, overlap=OverlapRange(min=1, max=2, audit_share=0), gold_rate=0)
    sure = np.full((3, 3), 0.01) + np.eye(3) * 0.97  # a snapshot that trusts ann1 on 10 gold labels
    fields = {
        "coverage": {
            "classes": [canonical_json(v) for v in ("not_covered", "partially", "fully")],
            "priors": np.full(3, 1 / 3),
            "confusion": {"ann1": sure},
        }
    }
    project.store.set_meta(
        overlap.snapshot_key(KIND), overlap.Snapshot(10**9, "dawid_skene", fields, {"ann1": 10}).dumps()
    )
    assert _label(project, "ann1", lambda t: "fully") == 3
    assert {t.overlap for t in project.store.labels.tasks(kind=KIND)} == {1}  # lone labels stood
    out = CliRunner().invoke(cli, ["tasks", "adapt", "-p", str(project.root)])
    assert out.exit_code == 0, out.output
    # refitted on the real log: ann1 has no gold label at all, so no lone label of theirs stands
    assert out.output == "preference_match: 3 item(s) handed to one more annotator\n"
    assert {t.overlap for t in project.store.labels.tasks(kind=KIND)} == {2}
    assert _label(project, "ann2", lambda t: "fully") == 3


def test_an_item_is_certain_only_with_a_value_somebody_gave():
    """The stopping rule agrees with the consensus, which never decides a value nobody chose: one label
    from an annotator known to say the opposite points at another value with high posterior, and the
    item must get another label instead of stopping undecidable."""
    import numpy as np
    from prefkit.schemas.common import canonical_json

    classes = [canonical_json(v) for v in ("not_covered", "partially", "fully")]
    flip = np.array([[0.2, 0.0, 0.8], [0.0, 0.2, 0.8], [0.8, 0.0, 0.2]])  # rows: truth, columns: said
    good = np.array([[0.95, 0.025, 0.025], [0.025, 0.95, 0.025], [0.025, 0.025, 0.95]])
    snap = overlap.Snapshot(
        seq=0,
        method="dawid_skene",
        fields={
            "coverage": {
                "classes": classes,
                "priors": np.array([0.15, 0.25, 0.6]),
                "confusion": {"flip": flip, "good": good},
            }
        },
        gold={"flip": 20, "good": 20},
    )
    rule = OverlapRange(min=1, max=4, confidence=0.85)
    from prefkit.curation.annotation.reliability_models import unit_posterior

    post = unit_posterior([("flip", 0)], snap.fields["coverage"]["priors"], {"flip": flip})
    assert post.argmax() == 2 and post[2] > 0.9  # "not_covered" from flip: almost surely "fully"
    assert not overlap.certain(KIND, {"flip": {"coverage": "not_covered"}}, snap, rule)
    assert overlap.certain(KIND, {"good": {"coverage": "fully"}}, snap, rule)
    both = {"flip": {"coverage": "not_covered"}, "good": {"coverage": "fully"}}
    assert overlap.certain(KIND, both, snap, rule)  # now somebody gave the value the labels point at
