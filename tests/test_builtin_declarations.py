"""prefkit's own simple kinds are declarations with hooks: a project made before (labels written as
the hand-written kinds wrote them) reads the same; a project's declaration names hooks the same way,
and a bad hook is one line naming the file and the key."""

from __future__ import annotations

import uuid

from appkit import seed_pairs
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import work
from prefkit.curation.annotation.declared import DeclaredKind, use_project_kinds
from prefkit.curation.annotation.task_admin import TaskFileError, create_tasks
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.quality.consensus import final_labels
from prefkit.exports.release_data import build_configs
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import LabelEvent

HOOKED = """name = "echo"
title = "Echo"
[[fields]]
name = "text"
type = "text"
[[questions]]
name = "same"
type = "label"
labels = ["yes", "no"]
[hooks]
items = "{module}:items"
gold = "{module}:gold"
"""


def _users(project) -> None:
    for who in ("ann1", "ann2", "ann3"):
        project.store.accounts.add_user(who, "annotator", "a-long-password")


def _old_label(project, task, who: str, values: dict) -> None:
    """A label event exactly as the hand-written kinds' forms and Label Studio pulls wrote it."""
    ev = LabelEvent(
        event_id=uuid.uuid4().hex,
        task_id=task.task_id,
        kind=task.kind,
        annotator=who,
        action="label",
        values=values,
        time_spent_s=9.0,
        source="labelstudio",
        created_at=utcnow(),
    )
    assert project.store.labels.append_event(ev)


def test_matching_labels_written_before_are_decided_measured_and_released_as_they_were(project):
    seed_pairs(project, 3)
    assert create_tasks(project, "preference_match", overlap=3) == 3
    tasks = sorted(project.store.labels.tasks(kind="preference_match"), key=lambda t: t.item_ref)
    _users(project)
    assert [t.item_ref for t in tasks] == ["pair:pair_0000", "pair:pair_0001", "pair:pair_0002"]
    votes = [
        ("fully", "fully", "partially"),
        ("not_covered", "not_covered", "not_covered"),
        ("partially",) * 3,
    ]
    for task, answers in zip(tasks, votes, strict=True):
        for who, coverage in zip(("ann1", "ann2", "ann3"), answers, strict=True):
            _old_label(project, task, who, {"coverage": coverage, "comment": f"{who} on {task.item_ref}"})
    use_project_kinds(project.root, project.store)  # as Project does when it opens: nothing refused
    assert isinstance(get_kind("preference_match"), DeclaredKind)
    assert "preference_match" not in project.store.labels.kind_declarations()  # prefkit's: never pinned
    finals = final_labels(project.store, "preference_match")
    assert [finals[t.task_id].values["coverage"] for t in tasks] == ["fully", "not_covered", "partially"]
    rows = [r for r in agreement_rows(project.store, kind="preference_match", n_boot=20) if r.get("field")]
    assert [(r["field"], r["level"]) for r in rows] == [("coverage", "ordinal")]
    (matching,) = [c for c in build_configs(project.store, ["matching"])]
    assert matching.count == 3 and matching.needs == ("preference_match",)
    assert '"coverage":"fully"' in matching.splits["test"][0]


def test_task_qc_labels_written_before_decide_which_built_rows_ship(project):
    kind = get_kind("task_qc")
    task = kind.make_task("alps:task3_d100:b1", {"track": "task3_d100", "benchmark_id": "b1"}, 2, "qc")
    project.store.labels.add_tasks([task])
    _users(project)
    for who in ("ann1", "ann2"):
        _old_label(project, task, who, {"leakage": "none", "answer": "correct", "comment": "fine"})
    final = final_labels(project.store, "task_qc")[task.task_id]
    assert final.values == {"leakage": "none", "answer": "correct"}
    assert kind.release_hook("alpsbench_*")(final.values) is True
    assert kind.release_hook("alpsbench_*")({"leakage": "leaks", "answer": "correct"}) is False


def test_a_project_declaration_builds_its_tasks_and_gold_items_from_its_hooks(project, tmp_path, monkeypatch):
    module = f"echohooks_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(
        "def items(store):\n"
        "    yield 'e1', {'text': 'one'}\n"
        "    yield 'e2', {'text': 'two'}\n"
        "def gold(store):\n"
        "    return {'e1': {'same': 'yes'}}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (project.root / "kinds" / "echo.toml").write_text(HOOKED.format(module=module), encoding="utf-8")
    assert use_project_kinds(project.root, project.store) == {}
    assert create_tasks(project, "echo", overlap=2) == 2
    tasks = {t.item_ref: t for t in project.store.labels.tasks(kind="echo")}
    assert sorted(tasks) == ["e1", "e2"] and tasks["e2"].payload == {"text": "two"}
    assert (tasks["e1"].is_gold, tasks["e1"].gold_answer, tasks["e2"].is_gold) == (
        True,
        {"same": "yes"},
        False,
    )
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "e3", "text": "three"}\n', encoding="utf-8")
    try:  # a kind built from the project's content takes no item file
        work.create(project, "t", "echo", overlap="1", items=items)
        raise AssertionError("an item file was taken")
    except TaskFileError as exc:
        assert "built from the project's content" in str(exc)


def test_a_bad_hook_reference_is_one_line_naming_the_file_and_the_key(project):
    bad = HOOKED.format(module="prefkit_no_such_module")
    (project.root / "kinds" / "echo.toml").write_text(bad, encoding="utf-8")
    done = CliRunner().invoke(cli, ["kinds", "check", "--project", str(project.root)])
    line = "kinds/echo.toml: key hooks.items: 'prefkit_no_such_module:items' cannot be loaded: ModuleNotFoundError"
    assert done.exit_code == 1 and line in done.output
    assert len([x for x in done.output.splitlines() if "echo.toml" in x]) == 1
    release = bad.replace('gold = "prefkit_no_such_module:gold"', 'release = { nope = "x:y" }')
    release = release.replace(
        "prefkit_no_such_module:items", "prefkit.curation.annotation.kinds.task_qc:items"
    )
    (project.root / "kinds" / "echo.toml").write_text(release, encoding="utf-8")
    done = CliRunner().invoke(cli, ["kinds", "check", "--project", str(project.root)])
    assert (
        done.exit_code == 1 and "kinds/echo.toml: key hooks.release.nope: not a release config" in done.output
    )
