"""Release gates on crafted projects: each gate failing names what is behind it."""

import pytest
from prefkit.curation.quality.consensus import adjudicate
from prefkit.curation.quality.gates import PolicyError, check_policy, evidence_problem, run_gates
from prefkit.curation.store import DialogueTurn
from prefkit.schemas.config import ReleasePolicy
from test_release_support import (
    add_users,
    cover,
    fast_agreement,
    gold_task,
    label,
    labelled_project,
    match_tasks,
    plan,
    with_release,
)


def gates(project, **release) -> dict:
    config = with_release(project.config, **release)
    return {
        r.gate: r
        for r in run_gates(
            project.store, config.release, plan(project.store, config), agreement_rows=fast_agreement
        )
    }


@pytest.fixture
def good(project, tmp_path):
    return project, labelled_project(project, tmp_path)


def test_a_clean_labelled_project_passes_every_gate(good):
    project, _ = good
    results = gates(project)
    assert [name for name, r in results.items() if not r.passed] == []
    assert results["alpha"].value >= 0.8 and results["min_labels"].value == 3


def test_alpha_gate_fails_naming_the_field_with_its_interval(project):
    add_users(project.store, "ann1", "ann2", "ann3")
    tasks = match_tasks(project.store, 9)
    levels = ("fully", "partially", "not_covered")
    for i, t in enumerate(tasks):
        cover(project.store, t.task_id, ann1=levels[i % 3], ann2=levels[(i + 1) % 3], ann3=levels[i % 3])
    r = gates(project)["alpha"]
    assert not r.passed and r.value < 0.8
    assert r.culprits[0].startswith("preference_match.coverage: α ") and "< 0.800" in r.culprits[0]


def test_min_labels_gate_names_tasks_with_too_few_labels(good):
    project, made = good
    extra = match_tasks(project.store, 1, prefix="late")[0]
    cover(project.store, extra.task_id, ann1="fully", ann2="fully")
    r = gates(project)["min_labels"]
    assert not r.passed and r.culprits == [
        f"{extra.task_id} [{extra.item_ref} · Does the answer use metric units? (late 0)] (2 of 3)"
    ]
    assert (r.value, r.threshold) == (2, 3)  # the figure compared: the fewest labels, and the need
    assert gates(project, min_labels_per_item=2)["min_labels"].passed


def test_min_labels_asks_each_task_for_the_overlap_it_was_created_with(good):
    """Tasks made with overlap 2 and labelled twice pass without a setting (the demo's case: 2 of 2
    labels each, where a fixed 3 could never pass); ``min_labels_per_item`` still raises the bar."""
    project, _ = good
    two = match_tasks(project.store, 1, prefix="two", overlap=2)[0]
    cover(project.store, two.task_id, ann1="fully", ann2="fully")
    r = gates(project)["min_labels"]
    assert r.passed and (r.value, r.threshold) == (2, "2-3"), (r.value, r.threshold, r.culprits)
    r = gates(project, min_labels_per_item=3)["min_labels"]
    assert (
        not r.passed
        and r.culprits
        == [f"{two.task_id} [{two.item_ref} · Does the answer use metric units? (two 0)] (2 of 3)"]
        and r.threshold == 3
    )


def test_adjudicated_gate_names_an_open_tie_and_passes_once_decided(good):
    project, _ = good
    tie = match_tasks(project.store, 1, prefix="tie")[0]
    cover(project.store, tie.task_id, ann1="fully", ann2="partially", ann3="not_covered")
    r = gates(project)["adjudicated"]
    assert not r.passed and r.culprits == [
        f"{tie.task_id} [{tie.item_ref} · Does the answer use metric units? (tie 0)] (preference_match)"
    ]
    adjudicate(project.store, tie.task_id, "lead", {"coverage": "partially"})
    assert gates(project)["adjudicated"].passed


def test_adjudicate_all_policy_requires_majority_disagreements_too(good):
    project, made = good
    r = gates(project, adjudicate="all")["adjudicated"]
    assert not r.passed and r.culprits[0].startswith(f"{made['tasks'][18].task_id} [")
    assert r.culprits[0].endswith("] (preference_match)") and len(r.culprits) == 1


def test_flag_gate_names_task_annotator_and_reason_until_resolved(good):
    project, made = good
    t = made["tasks"][0].task_id
    label(project.store, t, "ann2", action="flag", comment="candidate text is cut off")
    r = gates(project)["flags"]
    assert not r.passed and r.culprits == [
        f"{t} [{made['tasks'][0].item_ref} · {made['tasks'][0].payload['checklist_item']}] flagged by ann2: candidate text is cut off"
    ]
    adjudicate(project.store, t, "lead", {"coverage": "fully"}, "text is fine in the source")
    assert gates(project)["flags"].passed


def test_gold_accuracy_gate_names_the_annotator_below_threshold(project):
    add_users(project.store, "ann1", "ann2")
    gold = gold_task(project.store, answer="fully")
    cover(project.store, gold.task_id, ann1="fully", ann2="not_covered")
    r = gates(project)["gold_accuracy"]
    assert not r.passed and r.value == 0.0
    assert r.culprits == ["ann2 on preference_match: 0.000 over 1 gold"]


def test_offline_gate_names_offline_records_unless_allowed(project):
    match_tasks(project.store, 2, offline=True, prefix="gen")
    r = gates(project)["offline"]
    assert not r.passed and r.culprits == ["preference_pairs:gen000", "preference_pairs:gen001"]
    assert gates(project, allow_offline=True)["offline"].passed


def test_gold_evidence_gate_names_failing_memories_of_the_real_alpsbench_sample(alps_project):
    r = gates(alps_project)["gold_evidence"]
    # 71 fail + 14 near misses (the same counts `prefkit memories check-evidence --source gold` gives).
    assert not r.passed and r.value == len(r.culprits) == 85
    assert (
        "sess_0016d4107292/m2: quote not found at utterance_index 8 nor in any other turn" in r.culprits
    )  # "Зеркалы" vs "Зеркала"
    assert sum("empty quote" in c for c in r.culprits) == 22
    assert sum("; found in turn" in c for c in r.culprits) == 14


TURNS = [
    DialogueTurn(0, "user", "I live in Lyon.  I cook  every day."),
    DialogueTurn(1, "assistant", "Nice!"),
    DialogueTurn(2, "user", "I hate cilantro"),
]


@pytest.mark.parametrize(
    ("evidence", "problem"),
    [
        ({"text": "I live in Lyon. I cook every day", "utterance_index": 0}, None),
        ({"text": "i LIVE in lyon ... every day", "utterance_index": 0}, None),
        ({"text": "hate cilantro", "utterance_index": [1, 2]}, None),
        ({"text": "I live in Lyon!!! I cook, every day.", "utterance_index": 0}, None),
        ({"text": "I live [12 characters] every day", "utterance_index": 0}, None),
        (
            {"text": "every day ... I live", "utterance_index": 0},
            "quote not found at utterance_index 0 nor in any other turn",
        ),
        ({"text": "hate cilantro", "utterance_index": 0}, "not in cited turn 0; found in turn 2"),
        (
            {"text": "hate cilantro", "utterance_index": [0, 7]},
            "utterance_index [7] outside the dialogue (3 turns)",
        ),
        ({"text": None, "utterance_index": 0}, "empty quote"),
        ({"text": "Nice", "utterance_index": None}, "no utterance_index; quote found in turn 1"),
    ],
)
def test_evidence_check_handles_int_and_list_indexes_and_elisions(evidence, problem):
    assert evidence_problem({"evidence": evidence}, TURNS) == problem


def test_policy_floor_depends_on_final_or_tentative():
    assert check_policy(ReleasePolicy(alpha_min=0.8)).alpha_for("k", "f") == 0.8
    with pytest.raises(PolicyError, match="tentative"):
        check_policy(ReleasePolicy(alpha_min=0.7))
    assert check_policy(ReleasePolicy(alpha_min=0.667, policy="tentative")).alpha_for("k", "f") == 0.667
    with pytest.raises(PolicyError, match="0.667"):
        check_policy(ReleasePolicy(alpha_min=0.6, policy="tentative"))
    per_field = check_policy(
        ReleasePolicy(policy="tentative", alpha_min={"default": 0.8, "preference_match.coverage": 0.7})
    )
    assert (
        per_field.alpha_for("preference_match", "coverage"),
        per_field.alpha_for("memory_verify", "decision"),
    ) == (0.7, 0.8)


def test_a_gate_whose_input_is_unavailable_fails_and_says_why(project):
    from prefkit.curation.quality.gates import GateUnavailable

    def missing(_store):
        raise GateUnavailable("prefkit.curation.quality.agreement.agreement_rows is not available")

    match_tasks(project.store, 1)  # a matching config, which depends on labels

    (alpha,) = [
        r
        for r in run_gates(
            project.store, project.config.release, plan(project.store, project.config), agreement_rows=missing
        )
        if r.gate == "alpha"
    ]
    assert not alpha.passed and alpha.culprits == [
        "prefkit.curation.quality.agreement.agreement_rows is not available"
    ]
