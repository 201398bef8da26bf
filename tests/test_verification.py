"""Verification decides what is released: session status from final labels, instances rebuilt from
their sessions, re-verification after a rewrite, gates that cannot pass on nothing."""

from __future__ import annotations

import json

import pytest
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.quality.gates import run_gates
from prefkit.curation.quality.verification import session_statuses
from prefkit.exports.release_data import build_configs
from prefkit.pipelines.ingest import cupid
from test_generation_run import generate
from test_release_support import add_users, cupid_row, import_cupid, label, plan, with_release

ANNOTATORS = ("ann1", "ann2", "ann3")


def expressed(task, missing: tuple[int, ...] = ()) -> dict:
    n = len(task.payload["checklist"])
    return {"items": [{"item": i, "expressed": i not in missing} for i in range(n)]}


def verify(store, task, missing: tuple[int, ...] = (), who=ANNOTATORS) -> None:
    for name in who:
        label(store, task.task_id, name, expressed(task, missing), kind="preference_expressed")


def tasks_by_session(store) -> dict[str, object]:
    """The latest verification task per session id."""
    out = {}
    for t in sorted(store.labels.tasks(kind="preference_expressed"), key=lambda t: t.item_ref):
        out[t.payload["dialogue_id"]] = t
    return out


def roles(store, persona_id: str) -> dict[str, str]:
    plan = store.generation.plan(persona_id)
    return {f"{persona_id}-s{s.index:02d}": s.role for s in plan.slots}


def fail_session_b(store) -> str:
    """Every session verified, the first persona's B session with checklist item 0 not expressed: its id."""
    role = roles(store, store.generation.personas()[0].persona_id)
    b_session = next(sid for sid, r in role.items() if r == "B")
    for sid, task in tasks_by_session(store).items():
        verify(store, task, missing=(0,) if sid == b_session else ())
    return b_session


@pytest.fixture
def gen(project):
    generate(project, personas=1, seed=0)
    add_users(project.store, *ANNOTATORS)
    add_users(project.store, "lead", role="maintainer")
    create_tasks(project, "preference_expressed", overlap=3, batch="b1")
    return project


def cupid_types(store) -> tuple[list[str], list[str]]:
    configs = {c.name: c for c in build_configs(store)}

    def types(name):
        return sorted(json.loads(line)["instance_type"] for line in configs[name].splits.get("test", []))

    return types("cupid"), types("cupid_unverified")


def test_a_project_without_labels_fails_the_alpha_gate_saying_which_config_needs_them(gen):
    results = {
        r.gate: r
        for r in run_gates(
            gen.store, gen.config.release, plan(gen.store, gen.config), agreement_rows=lambda _s: []
        )
    }
    assert not results["alpha"].passed
    assert "no labels for preference_expressed: the `cupid` config needs them" in results["alpha"].culprits
    assert "cupid" in results["alpha"].applies_to and "cupid_unverified" not in results["alpha"].applies_to
    assert results["offline"].applies_to[:2] == ["cupid", "cupid_unverified"]


def test_without_label_dependent_configs_the_label_gates_do_not_apply(gen):
    config = with_release(gen.config, configs=["cupid_unverified"])
    results = {
        r.gate: r
        for r in run_gates(gen.store, config.release, plan(gen.store, config), agreement_rows=lambda _s: [])
    }
    assert results["alpha"].passed and results["alpha"].summary.startswith("not applicable")
    assert results["alpha"].applies_to == [] and results["offline"].applies_to == ["cupid_unverified"]


def test_session_status_follows_the_final_labels(gen):
    store = gen.store
    tasks = list(tasks_by_session(store).values())
    verify(store, tasks[0])
    verify(store, tasks[1], missing=(0,), who=("ann1", "ann2"))
    verify(store, tasks[1], who=("ann3",))
    label(
        store,
        tasks[2].task_id,
        "ann1",
        action="flag",
        comment="assistant turn cut off",
        kind="preference_expressed",
    )
    statuses = session_statuses(store)
    got = [statuses[t.payload["dialogue_id"]] for t in tasks[:4]]
    assert [s.status for s in got] == ["verified", "failed", "failed", "unverified"]
    assert got[1].reason == "checklist item(s) [0] not expressed (majority)"
    assert got[2].reason == "flagged by ann1: assistant turn cut off"
    assert got[3].reason == "0 label(s), no final label"


def test_a_failed_session_drops_the_instances_that_depend_on_it_from_cupid_only(gen):
    store = gen.store
    fail_session_b(store)
    verified, unverified = cupid_types(store)
    assert verified == ["changing", "consistent"]  # the contrastive one needs B
    assert unverified == ["changing", "consistent", "contrastive"]
    cupid = next(c for c in build_configs(store) if c.name == "cupid")
    assert cupid.dropped == {"a session it depends on is failed": 1}


def test_a_rewrite_after_labelling_asks_for_reverification_and_reaches_the_release(gen):
    store = gen.store
    for task in tasks_by_session(store).values():
        verify(store, task)
    assert cupid_types(store)[0] == ["changing", "consistent", "contrastive"]
    role = roles(store, store.generation.personas()[0].persona_id)
    a_session = next(sid for sid, r in role.items() if r == "A")
    old = tasks_by_session(store)[a_session]
    user_turn = next(t["index"] for t in old.payload["turns"] if t["role"] == "user" and t["index"] > 0)
    workflow.rewrite_turn(gen, "ann1", old, user_turn, "Keep it to the point, like last time.", "clearer")

    new = tasks_by_session(store)[a_session]
    assert new.item_ref == f"session:{a_session}@r1" and new.batch == "b1" and new.overlap == 3
    assert new.payload["turns"][user_turn]["content"] == "Keep it to the point, like last time."
    assert session_statuses(store)[a_session].status == "needs_reverification"
    assert cupid_types(store)[0] == []  # every instance depends on the A sessions

    verify(store, new)
    assert session_statuses(store)[a_session].status == "verified"
    cupid = next(c for c in build_configs(store) if c.name == "cupid")
    assert cupid.count == 3 and all(
        "Keep it to the point, like last time." in row for row in cupid.splits["test"]
    )
    unverified = next(c for c in build_configs(store) if c.name == "cupid_unverified")
    assert not any("Keep it to the point, like last time." in row for row in unverified.splits["test"])
    gates = {
        r.gate: r
        for r in run_gates(store, gen.config.release, plan(store, gen.config), agreement_rows=lambda _s: [])
    }
    assert "min_labels" in gates and all(
        old.task_id not in c for c in gates["min_labels"].culprits
    )  # the superseded round


def test_imported_cupid_rows_yield_preference_expressed_tasks_for_their_sessions(project, tmp_path):
    import_cupid(project, tmp_path, 4)
    again = tmp_path / "more.jsonl"  # another file whose two rows reuse two of those sessions
    again.write_text(
        "".join(json.dumps({**cupid_row(i), "current_request": f"Another trip {i}."}) + "\n" for i in (2, 3)),
        encoding="utf-8",
    )
    project.store.content.import_bundle(cupid.build_bundle(again))
    assert create_tasks(project, "preference_expressed", overlap=2) == 4
    task = project.store.labels.tasks(kind="preference_expressed")[0]
    assert task.payload["checklist"] == ["Does the plan keep drives short?", "Does it include breaks?"]
    assert [t["role"] for t in task.payload["turns"]] == ["user", "assistant"]
    links = project.store.content.instance_links()
    assert len(links) == 6 and all(len(v) == 1 and v[0].relevant for v in links.values())


def test_repair_regenerates_a_failed_session_and_recovers_its_instance_after_reverification(gen):
    from prefkit.pipelines.generation.run import generation_settings, run_repair
    from prefkit.pipelines.llm import LLMLayer

    store = gen.store
    b_session = fail_session_b(store)
    before = store.content.dialogue(b_session).turns
    cfg = generation_settings(gen.config.generation, personas=1)

    def repair():
        with LLMLayer(store, llm_config=gen.config.llm, backend="offline", seed=0, progress=False) as layer:
            return run_repair(store, layer, cfg)

    first = repair()
    assert first.round == 1 and first.repaired == [b_session] and first.queued == 1
    assert first.waiting_instances == 1 and first.verified_instances == 2 and first.previous is None
    assert store.content.dialogue(b_session).turns != before
    assert store.content.session_versions(b_session)[0].turns == [
        {"index": t.index, "role": t.role, "content": t.content} for t in before
    ]
    assert session_statuses(store)[b_session].status == "needs_reverification"
    new = tasks_by_session(store)[b_session]
    assert new.item_ref == f"session:{b_session}@r1"
    verify(store, new)
    assert cupid_types(store)[0] == ["changing", "consistent", "contrastive"]
    second = repair()
    assert second.repaired == [] and second.previous == {
        "round": 1,
        "repaired": 1,
        "verified_instances": 2,
        "recovered": 1,
    }
