"""Consensus and adjudication: majority per unit, ties to the queue, adjudications supersede."""

import pytest
from prefkit.curation.annotation.task_kinds import LabelError, get_kind
from prefkit.curation.quality.consensus import (
    AdjudicationError,
    FinalLabel,
    adjudicate,
    decide_units,
    disagreements,
    final_labels,
)
from prefkit.schemas import utcnow
from prefkit.schemas.common import content_hash
from prefkit.schemas.curation import AnnotationTask
from test_release_support import add_users, cover, label, match_tasks


@pytest.fixture
def three(project):
    add_users(project.store, "ann1", "ann2", "ann3")
    add_users(project.store, "lead", role="maintainer")
    return project.store


def test_majority_decides_a_two_to_one_split(three):
    (t,) = match_tasks(three, 1)
    cover(three, t.task_id, ann1="fully", ann2="fully", ann3="partially")
    final = final_labels(three, "preference_match")[t.task_id]
    assert final.values == {"coverage": "fully"}
    assert (final.decided_by, final.n_labels) == ("majority", 3)


def test_unanimous_labels_are_marked_unanimous_and_not_in_the_queue(three):
    (t,) = match_tasks(three, 1)
    cover(three, t.task_id, ann1="partially", ann2="partially", ann3="partially")
    assert final_labels(three, "preference_match")[t.task_id].decided_by == "unanimous"
    assert disagreements(three) == []


def test_a_tie_is_undecided_and_queued_for_adjudication(three):
    (t,) = match_tasks(three, 1)
    cover(three, t.task_id, ann1="fully", ann2="partially", ann3="not_covered")
    final = final_labels(three, "preference_match")[t.task_id]
    assert final.values is None and final.decided_by == "undecided"
    (queued,) = disagreements(three)
    assert queued.task_id == t.task_id and queued.adjudicated is False
    assert queued.labels == {
        "ann1": {"coverage": "fully"},
        "ann2": {"coverage": "partially"},
        "ann3": {"coverage": "not_covered"},
    }


def test_a_second_adjudication_supersedes_the_first(three):
    (t,) = match_tasks(three, 1)
    cover(three, t.task_id, ann1="fully", ann2="partially")
    first = adjudicate(three, t.task_id, "lead", {"coverage": "fully"}, "first look")
    second = adjudicate(three, t.task_id, "lead", {"coverage": "partially"}, "re-read the checklist")
    assert second.supersedes == first.adjudication_id
    final = final_labels(three, "preference_match")[t.task_id]
    assert final == FinalLabel({"coverage": "partially"}, "adjudicated", n_labels=2, tied=())
    assert disagreements(three)[0].adjudicated is True


def test_an_adjudication_id_is_made_from_the_decision_not_drawn(three):
    (t,) = match_tasks(three, 1)
    cover(three, t.task_id, ann1="fully", ann2="partially")
    first = adjudicate(three, t.task_id, "lead", {"coverage": "fully"}, "first look")
    assert (
        adjudicate(three, t.task_id, "lead", {"coverage": "fully"}, "first look") == first
    )  # in force: nothing new
    second = adjudicate(three, t.task_id, "lead", {"coverage": "partially"}, "re-read")
    back = adjudicate(
        three, t.task_id, "lead", {"coverage": "fully"}, "first look"
    )  # the first decision again
    assert [a.adjudication_id for a in three.labels.adjudications()] == [
        first.adjudication_id,
        second.adjudication_id,
        back.adjudication_id,
    ]
    assert len({first.adjudication_id, second.adjudication_id, back.adjudication_id}) == 3
    assert back.supersedes == second.adjudication_id
    assert first.adjudication_id.startswith("adj_") and len(first.adjudication_id) == 36
    # the released id must not let anyone confirm the maintainer's user name by guessing it
    assert (
        content_hash(
            {
                "task_id": t.task_id,
                "decider": "lead",
                "values": {"coverage": "fully"},
                "note": "first look",
                "supersedes": None,
            },
            32,
        )
        not in first.adjudication_id
    )


def test_only_an_active_maintainer_may_adjudicate(three):
    (t,) = match_tasks(three, 1)
    with pytest.raises(AdjudicationError, match="ann1"):
        adjudicate(three, t.task_id, "ann1", {"coverage": "fully"})
    add_users(three, "deputy", role="maintainer")  # the last active maintainer cannot be disabled
    three.accounts.set_user_active("lead", False)
    with pytest.raises(AdjudicationError, match="not an active maintainer"):
        adjudicate(three, t.task_id, "lead", {"coverage": "fully"})


def test_adjudicated_values_are_validated_by_the_task_kind(three):
    (t,) = match_tasks(three, 1)
    with pytest.raises(LabelError, match="coverage"):
        adjudicate(three, t.task_id, "lead", {"coverage": "mostly"})
    assert three.labels.adjudications() == []


def test_final_labels_follow_edits_and_withdrawals_in_the_log(three):
    (t,) = match_tasks(three, 1)
    cover(three, t.task_id, ann1="fully", ann2="partially", ann3="partially")
    assert final_labels(three, "preference_match")[t.task_id].values == {"coverage": "partially"}
    label(three, t.task_id, "ann2", {"coverage": "fully"})  # ann2 changes their mind
    assert final_labels(three, "preference_match")[t.task_id].values == {"coverage": "fully"}
    label(three, t.task_id, "ann1", action="withdraw")
    assert final_labels(three, "preference_match")[t.task_id].decided_by == "undecided"  # 1-1 tie


def test_skips_and_flags_are_not_votes(three):
    (t,) = match_tasks(three, 1)
    cover(three, t.task_id, ann1="fully")
    label(three, t.task_id, "ann2", action="skip", comment="unsure")
    label(three, t.task_id, "ann3", action="flag", comment="broken pair")
    assert final_labels(three, "preference_match")[t.task_id].n_labels == 1


def _expressed_task(store) -> AnnotationTask:
    task = AnnotationTask(
        task_id="preference_expressed_t1",
        kind="preference_expressed",
        item_ref="session:s1",
        payload={
            "checklist": ["short?", "metric?"],
            "turns": [
                {"index": 0, "role": "user", "content": "hi"},
                {"index": 1, "role": "assistant", "content": "hello"},
                {"index": 2, "role": "user", "content": "km"},
            ],
        },
        created_at=utcnow(),
    )
    store.labels.add_tasks([task])
    return task


def test_units_decided_by_different_majorities_assemble_into_a_valid_label(three):
    task = _expressed_task(three)
    votes = {"ann1": (True, False), "ann2": (True, True), "ann3": (False, True)}
    for who, (a, b) in votes.items():
        values = {
            "items": [
                {"item": 0, "expressed": a, "evidence": [0] if a else []},
                {"item": 1, "expressed": b, "evidence": [2] if b else []},
            ]
        }
        label(three, task.task_id, who, values, kind="preference_expressed")
    final = final_labels(three, "preference_expressed")[task.task_id]
    assert final.decided_by == "majority"
    assert final.values["items"] == [
        {"item": 0, "expressed": True, "evidence": [0]},
        {"item": 1, "expressed": True, "evidence": [2]},
    ]
    get_kind("preference_expressed").validate(final.values, task)  # no LabelError


def test_memory_decisions_take_the_majority_per_candidate():
    d = lambda key, decision, **kw: {"key": key, "decision": decision, **kw}  # noqa: E731
    labels = {
        "a": {"decisions": [d("m:0", "accept"), d("m:1", "reject", reason="too_generic")]},
        "b": {"decisions": [d("m:0", "accept"), d("m:1", "reject", reason="not_grounded")]},
        "c": {
            "decisions": [d("m:0", "reject", reason="duplicate"), d("m:1", "reject", reason="not_grounded")]
        },
    }
    units, tied, decided_by = decide_units("memory_verify", labels)
    assert decided_by == "majority" and tied == []

    values = get_kind("memory_verify").assemble(units, labels)
    assert values["decisions"] == [d("m:0", "accept"), d("m:1", "reject", reason="not_grounded")]


# -- reliability-weighted consensus ([release] consensus = "dawid_skene" | "mace") ------------------------
def _two_careless_outvote_one_reliable(store, n_gold: int = 8):
    """ann1 answers every gold item right; ann2 and ann3 say "not_covered" whatever the truth. On the
    last task ann1 says "fully" and the two careless ones outvote it."""
    tasks = match_tasks(store, n_gold + 1)
    for i, t in enumerate(tasks[:n_gold]):
        truth = ("fully", "partially")[i % 2]
        store.labels.set_gold(t.task_id, {"coverage": truth})
        cover(store, t.task_id, ann1=truth, ann2="not_covered", ann3="not_covered")
    last = tasks[-1].task_id
    cover(store, last, ann1="fully", ann2="not_covered", ann3="not_covered")
    return last


@pytest.mark.parametrize("method", ["dawid_skene", "mace"])
def test_a_reliability_model_weighs_the_reliable_annotator_over_two_careless_ones(three, method):
    last = _two_careless_outvote_one_reliable(three)
    assert final_labels(three, "preference_match")[last].values == {"coverage": "not_covered"}  # majority
    three.consensus_method = method
    final = final_labels(three, "preference_match")[last]
    assert final.values == {"coverage": "fully"} and final.decided_by == method
    assert [d.task_id for d in disagreements(three) if d.decided_by == "undecided"] == []


def test_the_config_file_chooses_the_reliability_model(project):
    """`[release] consensus = "dawid_skene"` in prefkit.toml (not a setting poked into the store) is what
    a reopened project decides with, and its `consensus_confidence` too."""
    from prefkit.curation.project import Project
    from prefkit.curation.project_dir import CONFIG_NAME

    store = project.store
    add_users(store, "ann1", "ann2", "ann3")
    last = _two_careless_outvote_one_reliable(store)
    assert final_labels(store, "preference_match")[last].decided_by != "dawid_skene"
    cfg = project.root / CONFIG_NAME
    text = cfg.read_text()
    assert 'consensus = "majority"' in text and "consensus_confidence = 0.9" in text
    cfg.write_text(
        text.replace('consensus = "majority"', 'consensus = "dawid_skene"').replace(
            "consensus_confidence = 0.9", "consensus_confidence = 0.8"
        )
    )
    reopened = Project(project.root)
    try:
        assert (reopened.store.consensus_method, reopened.store.consensus_confidence) == ("dawid_skene", 0.8)
        final = final_labels(reopened.store, "preference_match")[last]
        assert final.values == {"coverage": "fully"} and final.decided_by == "dawid_skene"
    finally:
        reopened.close()


def test_a_unit_below_the_confidence_waits_for_adjudication(three):
    (t,) = match_tasks(three, 1)
    cover(three, t.task_id, ann1="fully", ann2="partially")  # no gold: nobody's reliability is known
    three.consensus_method = "dawid_skene"
    final = final_labels(three, "preference_match")[t.task_id]
    assert final.values is None and final.decided_by == "undecided" and final.tied == (("", "coverage"),)
    (queued,) = disagreements(three)
    assert queued.task_id == t.task_id and queued.decided_by == "undecided"
