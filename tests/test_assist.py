"""Judge-assisted labelling: suggestions through the LLM layer, stored apart from labels; the stable
control arm; the arms' figures against hand-computed values; the anchoring gate."""

import json
import uuid

import numpy as np
import pytest
from click.testing import CliRunner
from fakeopenai import fake_openai_fixture  # noqa: F401 - the fixture
from prefkit.cli import cli
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.suggestions import arm_of, exposure
from prefkit.curation.annotation.task_kinds import declared_part, get_kind
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.quality.consensus import adjudicate, final_labels
from prefkit.curation.quality.reliability import krippendorff_alpha
from prefkit.curation.quality.suggestions import anchoring_units, assist_report
from prefkit.curation.store import Suggestion, SuggestionRun
from prefkit.exports.release import release_view
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.suggestions import suggest
from prefkit.schemas.curation import AnnotationTask, LabelEvent
from test_gates import gates
from test_release_support import add_users, cover, match_tasks, release_configs

KIND = "preference_match"
RUN = SuggestionRun("sugg-test", KIND, "judge-x", "offline", True, "abc123", 0, {})


def suggest_values(store, values_by_task: dict[str, str]) -> dict[str, str]:
    """Store one suggestion per task (coverage values); returns ``{task_id: suggestion_id}``."""
    made = [
        Suggestion(Suggestion.make_id(RUN.run_id, t), RUN.run_id, t, KIND, {"coverage": v}, {})
        for t, v in values_by_task.items()
    ]
    store.suggestions.add(RUN, made)
    return {s.task_id: s.suggestion_id for s in made}


def arm_label(store, task_id, who, coverage, arm, sid, time_s=None):
    store.labels.append_events(
        [
            LabelEvent(
                event_id=uuid.uuid4().hex,
                task_id=task_id,
                kind=KIND,
                annotator=who,
                values={"coverage": coverage},
                time_spent_s=time_s,
                created_at="2026-11-20T10:00:00.000000Z",
                assist_arm=arm,
                suggestion_id=sid,
            )
        ]
    )


# -- suggestions -----------------------------------------------------------------------------------------
def test_offline_suggestions_are_stored_apart_and_never_count_as_labels_or_votes(project):
    add_users(project.store, "ann1", "ann2")
    tasks = match_tasks(project.store, 6)
    cover(project.store, tasks[0].task_id, ann1="fully", ann2="partially")
    before = (
        project.store.labels.events(),
        final_labels(project.store, KIND),
        agreement_rows(project.store, n_boot=20),
    )
    with LLMLayer(project.store, backend="offline", progress=False) as layer:
        report = suggest(project.store, layer, KIND)
        again = suggest(project.store, layer, KIND)
    assert (report.suggested, report.offline, again.suggested, again.done_before) == (6, True, 0, 6)
    assert len(project.store.suggestions.latest(KIND)) == 6
    after = (
        project.store.labels.events(),
        final_labels(project.store, KIND),
        agreement_rows(project.store, n_boot=20),
    )
    assert after == before  # no event, no vote, no rating came from the suggestions
    assert final_labels(project.store, KIND)[tasks[1].task_id].decided_by == "undecided"
    ((run, n),) = project.store.suggestions.runs()
    assert run.offline and run.model == "gpt-4o-mini" and len(run.prompt_hash) == 12 and n == 6


def test_suggest_through_the_real_openai_client_records_model_prompt_and_resumes(
    project, fake_openai, monkeypatch
):
    server = fake_openai(lambda body: {"reason": "the candidate names it", "coverage": "partially"})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-assist")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    match_tasks(project.store, 3)
    runner = CliRunner()
    args = [
        "suggest",
        "--kind",
        KIND,
        "--backend",
        "openai",
        "--model",
        "judge-model",
        "-p",
        str(project.root),
    ]
    first = runner.invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert first.output.startswith("estimate: 3 calls (0 cached)") and "3 new suggestion(s)" in first.output
    second = runner.invoke(cli, args)
    assert "estimate: 0 calls" in second.output and "0 new suggestion(s), 3 made before" in second.output
    assert server.count() == 3
    assert server.chat_requests()[0].body["model"] == "judge-model"
    sugg = list(project.store.suggestions.latest(KIND).values())
    assert {s.values["coverage"] for s in sugg} == {"partially"} and {s.model for s in sugg} == {
        "judge-model"
    }
    assert not any(s.offline for s in sugg) and project.store.count("label_events") == 0


def task_of(task_id: str, kind: str, item_ref: str, payload: dict) -> AnnotationTask:
    """A task of ``kind`` outside any store, made on 2026-11-20."""
    return AnnotationTask(
        task_id=task_id, kind=kind, item_ref=item_ref, created_at="2026-11-20T10:00:00Z", payload=payload
    )


def test_memory_suggestions_come_from_the_evidence_check_without_a_call():
    task = task_of(
        "mv1",
        "memory_verify",
        "dialogue:d1",
        {
            "dialogue_id": "d1",
            "turns": [
                {"index": 0, "role": "user", "content": "I moved to Lyon last spring and I cycle to work."},
                {"index": 1, "role": "assistant", "content": "Nice!"},
            ],
            "candidates": [
                {
                    "key": "m:0",
                    "memory": {"value": "Lives in Lyon", "evidence_text": "moved to Lyon last spring"},
                },
                {"key": "m:1", "memory": {"value": "Owns a car", "evidence_text": "I drive my car daily"}},
            ],
        },
    )
    s = declared_part(get_kind("memory_verify"), "suggestions")
    assert s.requests(task, False) == []
    values, detail = s.values(task, [], False)
    assert values["decisions"] == [
        {"key": "m:0", "decision": "accept"},
        {"key": "m:1", "decision": "reject", "reason": "not_grounded"},
    ]
    assert detail["memories"]["m:0"]["found_in"] == 0 and detail["memories"]["m:1"]["evidence"] == "fail"
    assert len(s.requests(task, True)) == 2  # --judge: one call per candidate


def test_task_qc_suggestion_lists_the_checks_that_failed():
    from prefkit.pipelines.llm.types import LLMResponse
    from prefkit.schemas.assist import TaskQcJudgement
    from prefkit.schemas.curation import Provenance

    task = task_of(
        "qc1",
        "task_qc",
        "alps:task4_ability2:b1",
        {
            "track": "task4_ability2",
            "benchmark_id": "b1",
            "question": "q",
            "generated": "As a vegan who loves hiking, what should I cook?",
            "memory": "Preferences/Food: vegan who loves hiking",
            "gold_answer": "m1: vegan",
            "checks": {},
        },
    )
    judged = TaskQcJudgement(
        leak_reason="fine", leaks=False, answer_reason="wrong memory", answer_correct=False
    )
    answer = LLMResponse(None, True, judged, judged.model_dump_json(), None, Provenance(source="t"))
    values, detail = declared_part(get_kind("task_qc"), "suggestions").values(task, [answer], True)
    assert values == {"leakage": "leaks", "answer": "incorrect"}
    assert detail["failed"] == ["leakage (programmatic)", "answer (judge)"]


# -- arms ----------------------------------------------------------------------------------------------
def test_the_control_arm_is_stable_per_annotator_kind_and_item_and_about_its_share():
    arms = [arm_of("alice", KIND, f"pair:{i}", 0.2) for i in range(5000)]
    assert arms == [arm_of("alice", KIND, f"pair:{i}", 0.2) for i in range(5000)]
    assert 0.18 < arms.count("control") / 5000 < 0.22
    bob = [arm_of("bob", KIND, f"pair:{i}", 0.2) for i in range(5000)]
    assert arms != bob  # drawn per annotator
    assert {arm_of("alice", KIND, "pair:1", share) for share in (0.0,)} == {"assisted"}
    assert {arm_of("alice", KIND, "pair:1", share) for share in (1.0,)} == {"control"}


def test_a_control_exposure_carries_no_suggested_value(project):
    task = match_tasks(project.store, 1)[0]
    sid = suggest_values(project.store, {task.task_id: "fully"})[task.task_id]
    sugg = project.store.suggestions.for_task(task.task_id)
    control = exposure(sugg, "alice", task, 1.0)
    assisted = exposure(sugg, "alice", task, 0.0)
    assert (control.arm, control.values, control.detail, control.shown) == ("control", None, None, False)
    assert (assisted.arm, assisted.values, assisted.suggestion_id) == ("assisted", {"coverage": "fully"}, sid)


def test_a_submit_and_its_edit_record_the_arm_and_the_suggestion(project):
    add_users(project.store, "alice")
    task = match_tasks(project.store, 1)[0]
    suggest_values(project.store, {task.task_id: "partially"})
    item = workflow.current_item(project, "alice", KIND)
    shown = exposure(project.store.suggestions.for_task(task.task_id), "alice", task, 0.0)
    workflow.submit(project, "alice", item, {"coverage": "partially"}, assist=shown)
    (ev,) = project.store.labels.events()
    assert (ev.assist_arm, ev.suggestion_id) == ("assisted", shown.suggestion_id)
    edit = workflow.edit_label(project, "alice", ev.event_id, {"coverage": "fully"})
    assert (edit.assist_arm, edit.suggestion_id) == ("assisted", shown.suggestion_id)


# -- the arms' figures, by hand ------------------------------------------------------------------------------
@pytest.fixture
def arms_project(project):
    """Gold g0..g3 (answer fully); suggestions wrong (not_covered) on g0-g2, right on g3; t4 adjudicated
    'partially'; t5, t6 regular. ann1, ann2 assisted; ann3 control."""
    store = project.store
    add_users(store, "ann1", "ann2", "ann3")
    add_users(store, "lead", role="maintainer")
    tasks = match_tasks(store, 7)
    for t in tasks[:4]:
        store.labels.set_gold(t.task_id, {"coverage": "fully"})
    ids = [t.task_id for t in tasks]
    sid = suggest_values(
        store,
        {
            ids[0]: "not_covered",
            ids[1]: "not_covered",
            ids[2]: "not_covered",
            ids[3]: "fully",
            ids[4]: "fully",
            ids[5]: "fully",
            ids[6]: "partially",
        },
    )
    a, c = "assisted", "control"
    for tid, who, cov, arm, secs in [
        (ids[0], "ann1", "not_covered", a, 4),
        (ids[1], "ann1", "not_covered", a, 6),
        (ids[2], "ann1", "fully", a, 8),
        (ids[3], "ann1", "fully", a, 10),
        (ids[0], "ann2", "fully", a, 12),
        (ids[1], "ann2", "not_covered", a, 20),
        (ids[0], "ann3", "fully", c, 30),
        (ids[1], "ann3", "fully", c, 10),
        (ids[2], "ann3", "not_covered", c, 20),
        (ids[4], "ann1", "partially", a, None),
        (ids[4], "ann2", "fully", a, None),
        (ids[4], "ann3", "partially", c, None),
        (ids[5], "ann1", "fully", a, None),
        (ids[5], "ann2", "fully", a, None),
        (ids[6], "ann1", "partially", a, None),
        (ids[6], "ann2", "not_covered", a, None),
    ]:
        arm_label(store, tid, who, cov, arm, sid[tid], secs)
    adjudicate(store, ids[4], "lead", {"coverage": "partially"})
    return project


def test_the_arms_figures_match_hand_computed_values(arms_project):
    r = assist_report(arms_project.store, n_boot=200, seed=1)
    k = r.kinds[KIND]
    a, c = k.arms["assisted"], k.arms["control"]
    assert (r.n_assisted, r.n_control, a.n_labels, c.n_labels) == (12, 4, 12, 4)
    # anchoring: assisted 3 kept of 5 wrong gold units (ann1 g0 g1 g2, ann2 g0 g1); control 1 of 3
    assert (a.anchoring_rate.value, a.anchoring_rate.n) == (0.6, 5)
    assert (c.anchoring_rate.value, c.anchoring_rate.n) == (pytest.approx(1 / 3), 3)
    assert k.anchoring_difference.value == pytest.approx(0.6 - 1 / 3)
    # time on item: assisted 4 6 8 10 12 20 -> median 9, p90 12 + 0.5 * 8 = 16; control 10 20 30 -> 20, 28
    assert (a.time_median.value, a.time_p90.value, c.time_median.value, c.time_p90.value) == (9, 16, 20, 28)
    # gold: assisted 0 0 1 1 1 0 -> 0.5; control 1 1 0 -> 2/3; adjudicated (t4 partially): 1, 0 -> 0.5; 1
    assert (a.gold_agreement.value, c.gold_agreement.value) == (0.5, pytest.approx(2 / 3))
    assert (a.adjudicated_agreement.value, a.adjudicated_agreement.n, c.adjudicated_agreement.value) == (
        0.5,
        2,
        1.0,
    )
    # suggestions right on 1 of the 4 gold units
    assert k.suggestion_gold_accuracy.value == 0.25
    # α among the assisted labels of t4..t6 (ordinal ranks: not_covered 0, partially 1, fully 2)
    want = krippendorff_alpha(np.array([[1, 2, 1], [2, 2, 0]], dtype=float), "ordinal")
    assert a.alpha["coverage"].value == pytest.approx(want) and a.alpha["coverage"].n == 3
    assert c.alpha["coverage"].value is None  # the control arm rated no unit twice
    for est in (a.anchoring_rate, a.time_median, a.gold_agreement):
        assert est.ci_low <= est.value <= est.ci_high


def test_anchoring_counts_only_gold_units_the_suggestion_got_wrong():
    assert anchoring_units(
        KIND, {"coverage": "partially"}, {"coverage": "partially"}, {"coverage": "fully"}
    ) == (1, 1)
    assert anchoring_units(KIND, {"coverage": "fully"}, {"coverage": "fully"}, {"coverage": "fully"}) == (
        0,
        0,
    )
    assert anchoring_units(
        KIND, {"coverage": "fully"}, {"coverage": "not_covered"}, {"coverage": "fully"}
    ) == (0, 1)


def test_agreement_assist_prints_both_arms(arms_project):
    out = CliRunner().invoke(cli, ["agreement", "--assist", "--boot", "100", "-p", str(arms_project.root)])
    assert out.exit_code == 0, out.output
    assert "preference_match  assisted" in out.output and "preference_match  control" in out.output
    assert "0.600 [" in out.output and "protocol: live human labels by arm" in out.output


# -- the gate ------------------------------------------------------------------------------------------
def simulated(project, copy_probability: float, n_gold: int = 40, seed: int = 0):
    """Gold items whose suggestion is wrong; ann1/ann2 see it (and copy it with ``copy_probability``),
    ann3 is the control arm and answers from the item."""
    rng = np.random.default_rng(seed)
    release_configs(project)
    store = project.store
    add_users(store, "ann1", "ann2", "ann3")
    tasks = match_tasks(store, n_gold)
    for t in tasks:
        store.labels.set_gold(t.task_id, {"coverage": "fully"})
    sid = suggest_values(store, {t.task_id: "not_covered" for t in tasks})
    for t in tasks:
        for who in ("ann1", "ann2"):
            cov = "not_covered" if rng.random() < copy_probability else "fully"
            arm_label(store, t.task_id, who, cov, "assisted", sid[t.task_id], 5.0)
        arm_label(
            store,
            t.task_id,
            "ann3",
            "not_covered" if rng.random() < 0.05 else "fully",
            "control",
            sid[t.task_id],
            9.0,
        )
    return project


def test_the_gate_fails_on_a_simulated_anchoring_project(project):
    r = gates(simulated(project, copy_probability=0.6))["assist_anchoring"]
    assert not r.passed and r.value == 80
    assert (
        r.culprits[0].startswith("preference_match: anchoring 0.")
        and "control, difference +0." in r.culprits[0]
    )


def test_the_gate_passes_on_a_clean_project(project):
    r = gates(simulated(project, copy_probability=0.05))["assist_anchoring"]
    assert r.passed and "not significantly above control" in r.summary


def test_the_gate_fails_with_assisted_labels_and_nothing_to_measure(project):
    release_configs(project)
    add_users(project.store, "ann1")
    (t,) = match_tasks(project.store, 1)
    sid = suggest_values(project.store, {t.task_id: "fully"})
    arm_label(project.store, t.task_id, "ann1", "fully", "assisted", sid[t.task_id])
    r = gates(project)["assist_anchoring"]
    assert not r.passed and "nothing to measure" in r.culprits[0]


def test_forbid_fails_and_control_only_leaves_assisted_labels_out(project):
    release_configs(project)
    add_users(project.store, "ann1", "ann2", "ann3")
    (t,) = match_tasks(project.store, 1)
    sid = suggest_values(project.store, {t.task_id: "fully"})[t.task_id]
    arm_label(project.store, t.task_id, "ann1", "fully", "assisted", sid)
    arm_label(project.store, t.task_id, "ann2", "fully", "assisted", sid)
    arm_label(project.store, t.task_id, "ann3", "partially", "control", sid)
    assert not gates(project, assisted="forbid")["assist_anchoring"].passed
    assert gates(project, assisted="control_only")["assist_anchoring"].passed
    assert final_labels(project.store, KIND)[t.task_id].values == {"coverage": "fully"}
    (project.root / "prefkit.toml").write_text(
        (project.root / "prefkit.toml").read_text().replace('assisted = "allow"', 'assisted = "control_only"')
    )
    project.__dict__.pop("config", None)
    with release_view(project):
        fl = final_labels(project.store, KIND)[t.task_id]
    assert (fl.values, fl.n_labels) == ({"coverage": "partially"}, 1)
    assert final_labels(project.store, KIND)[t.task_id].n_labels == 3  # the log keeps them


def test_the_anchoring_test_is_the_adjusted_difference_and_never_trusts_an_empty_arm():
    from prefkit.curation.quality.suggestions import anchoring_test

    zero = np.zeros(10)
    low, high, p05 = anchoring_test((6, 191), (0, 49), zero, zero)
    pa, pc = 7 / 193, 1 / 51  # one kept and one not-kept unit added to each arm
    se = ((pa * (1 - pa) / 193) + (pc * (1 - pc) / 51)) ** 0.5
    assert (low, high, p05) == pytest.approx(
        (pa - pc - 1.959964 * se, pa - pc + 1.959964 * se, pa - pc - 1.644854 * se)
    )
    assert p05 < 0  # 6/191 against 0/49 is no evidence of anchoring
    wide = np.array([0.0, 1.0] * 5)  # a bootstrap variance above the binomial one is used instead
    assert anchoring_test((6, 191), (0, 49), wide, zero)[2] < p05
    assert anchoring_test((120, 191), (2, 49), zero, zero)[2] > 0


def test_the_card_states_the_assisted_labels_and_control_only_leaves_them_out(project):
    from prefkit.exports.release import cut_release

    simulated(project, copy_probability=0.05)
    first = cut_release(project, "1.0.0", override="test: other gates aside")
    card = (first.path / "README.md").read_text(encoding="utf-8")
    assert "**80 labels made with a model's suggestion on screen are in this release**" in card
    assert "40 control labels were made without it" in card and "Protocol: live human labels by arm" in card
    assert "- preference_match: anchoring difference assisted − control" in card
    labels = first.path / "data" / "labels" / "preference_match.jsonl"
    assert len(labels.read_text().splitlines()) == 120
    cfg = project.root / "prefkit.toml"
    cfg.write_text(cfg.read_text().replace('assisted = "allow"', 'assisted = "control_only"'))
    project.__dict__.pop("config", None)
    # what `release check` and the Release page list is what the cut then writes
    checked = CliRunner().invoke(cli, ["release", "check", "--json", "-p", str(project.root)])
    listed = {c["name"]: c["rows"] for c in json.loads(checked.output)["configs"]}
    assert listed["labels"] == 40, listed
    second = cut_release(project, "2.0.0", override="test: other gates aside")
    card = (second.path / "README.md").read_text(encoding="utf-8")
    assert "The 80 labels made with a model's suggestion on screen are **left out** of this release" in card
    rows = (second.path / "data" / "labels" / "preference_match.jsonl").read_text().splitlines()
    assert len(rows) == 40  # ann3's control labels only
    gate = next(g for g in second.manifest.gates if g["gate"] == "assist_anchoring")
    assert gate["passed"] and "80 assisted label(s) left out" in gate["summary"]
