"""Matching pairs built from instances: each checklist item meets its own and the other preference."""

from prefkit.curation.store import Instance
from prefkit.pipelines.matching import pairs_from_instances
from prefkit.schemas.cupid import BenchmarkInstance


def _inst(iid, persona, kind, pref, items):
    record = BenchmarkInstance(
        persona_id=persona,
        instance_type=kind,
        current_request="Plan my week.",
        current_context_factor="a busy week",
        current_contextual_preference=pref,
        current_checklist=items,
        prior_interactions=[],
    )
    return Instance(iid, record, "prov")


def test_pairs_cover_same_and_other_preference_without_duplicates():
    instances = [
        _inst("i1", "p1", "consistent", "Short answers for Dana", ["Is it under 100 words?"]),
        _inst("i2", "p1", "contrastive", "Short answers for Dana", ["Is it under 100 words?"]),
        _inst("i3", "p1", "changing", "Detailed answers for Dana", ["Does it give step-by-step detail?"]),
    ]
    pairs = pairs_from_instances(instances)
    combos = {(p.checklist_item, p.candidate) for p in pairs}
    assert combos == {
        ("Is it under 100 words?", "Short answers for Dana"),
        ("Is it under 100 words?", "Detailed answers for Dana"),
        ("Does it give step-by-step detail?", "Detailed answers for Dana"),
        ("Does it give step-by-step detail?", "Short answers for Dana"),
    }
    assert len(pairs) == len({p.pair_id for p in pairs}) == 4
    relations = {(p.checklist_item, p.candidate): p.meta["relation"] for p in pairs}
    assert relations[("Is it under 100 words?", "Short answers for Dana")] == "same_preference"
    assert pairs == pairs_from_instances(list(reversed(instances)))  # order-independent


def test_cli_builds_pairs_from_generated_instances(tmp_path):
    from click.testing import CliRunner
    from prefkit.cli import cli
    from prefkit.curation.project import Project

    root = tmp_path / "p"
    runner = CliRunner()
    assert runner.invoke(cli, ["init", str(root)]).exit_code == 0
    assert runner.invoke(cli, ["generate", "-n", "1", "--project", str(root)]).exit_code == 0
    res = runner.invoke(cli, ["tasks", "pairs", "from-instances", "--project", str(root)])
    assert res.exit_code == 0, res.output
    project = Project(root)
    pairs = project.store.content.preference_pairs()
    checklist = {item for i in project.store.content.instances() for item in i.record.current_checklist}
    assert pairs and {pair.checklist_item for pair in pairs} == checklist
    again = runner.invoke(cli, ["tasks", "pairs", "from-instances", "--project", str(root)])
    assert "added 0 preference pairs" in again.output and len(
        project.store.content.preference_pairs()
    ) == len(pairs)
    project.close()


def test_current_request_sessions_get_no_expressed_task(tmp_path):
    from prefkit.curation.annotation.task_kinds import get_kind
    from prefkit.curation.project import Project
    from prefkit.demo import _generate

    project = Project.init(tmp_path / "p")
    _generate(project, personas=1, seed=0)
    tasks = get_kind("preference_expressed").build_tasks(project.store, overlap=2, batch="b")
    sessions = project.store.content.sessions()
    assert len(tasks) == len(sessions) - 1  # every session but the bare current request
    assert all(any(t["role"] == "assistant" for t in task.payload["turns"]) for task in tasks)
    project.close()
