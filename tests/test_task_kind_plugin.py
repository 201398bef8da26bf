"""A task kind from one module (tests/toykind.py, plus its form and Label Studio config) runs through
tasks → labels → agreement → release with nothing else in prefkit edited: the registry is the only
way in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT
from prefkit.cli import cli
from prefkit.curation.store import PreferencePair
from prefkit.schemas.curation import Provenance
from test_release_support import add_users, release_configs

SOURCE_DIRS = ("schemas", "pipelines", "curation", "annotate_app", "exports", "prefkit", "docs", "bench")


@pytest.fixture(scope="module")
def toy():
    import toykind
    from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY

    yield toykind
    # Other tests count the built-in kinds: leave the registry as it was.
    TASK_KIND_REGISTRY.pop(toykind.NAME, None)


def test_registering_the_kind_imports_its_module_and_nothing_else_of_prefkit():
    """In a fresh interpreter with prefkit's CLI, app forms, Label Studio configs and kinds loaded, the
    toy kind, its form and its config come from ``toykind`` alone; no other prefkit file names it."""
    script = (
        "import json, sys\n"
        "import prefkit.cli, prefkit.annotate_app.forms, prefkit.annotate_app.labelstudio.config\n"
        "from prefkit.curation.annotation.task_kinds import kind_names\n"
        "kind_names()  # the built-in kinds load on first use\n"
        "before = set(sys.modules)\n"
        "import toykind\n"
        "from prefkit.curation.annotation.task_kinds import kind_names\n"
        "from prefkit.annotate_app.forms import form_for\n"
        "from prefkit.annotate_app.labelstudio.config import ls_kind\n"
        "form, config = form_for(toykind.NAME), ls_kind(toykind.NAME)\n"
        "root = sys.argv[1]\n"
        "mine = [m for m in set(sys.modules) - before if (getattr(sys.modules[m], '__file__', '') or '').startswith(root)]\n"
        "print(json.dumps([sorted(mine), kind_names()[-1], type(form).__name__, config.kind is toykind.TASK_KIND]))\n"
    )
    env_path = f"{ROOT}:{ROOT / 'tests'}"
    out = subprocess.run(
        [sys.executable, "-c", script, str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    assert json.loads(out.stdout) == [["toykind"], "toy_same_meaning", "ToyForm", True]
    named = [
        str(p.relative_to(ROOT))
        for d in SOURCE_DIRS
        for p in Path(ROOT, d).rglob("*.py")
        if "toy_same_meaning" in p.read_text(encoding="utf-8")
    ]
    assert named == []


def test_the_kind_round_trips_through_its_label_studio_config(toy, project):
    from xml.etree import ElementTree as ET

    from prefkit.annotate_app.labelstudio.config import label_config, ls_kind, task_data

    root = ET.fromstring(label_config(toy.NAME))
    assert [c.get("value") for c in root.iter("Choice")] == ["different", "same"]  # the kind's field choices
    task = toy.TASK_KIND.make_task("toy:x", {"a": "tea", "b": "coffee"}, 3, "b1")
    assert task_data(task) == {"prefkit_task_id": task.task_id, "a": "tea", "b": "coffee"}
    config = ls_kind(toy.NAME)
    values = {"verdict": "different", "comment": "not the same drink"}
    assert config.values(config.results(values, task), task) == values


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_kind_from_one_module_goes_from_tasks_to_a_release(toy, project, tmp_path):
    from prefkit.annotate_app.forms import form_for

    assert isinstance(form_for(toy.NAME), toy.ToyForm)
    store = project.store
    add_users(store, "ann1", "ann2", "ann3")
    # p00, p01: identical texts (gold, known answer "same"); p02-p06 same meaning; p07-p11 different
    texts = [
        (
            f"Use metric units ({i})",
            f"Use metric units ({i})"
            if i < 2
            else f"Metric units, please ({i})"
            if i < 7
            else f"Prefers tea ({i})",
        )
        for i in range(12)
    ]
    store.content.add_preference_pairs(
        [PreferencePair(f"p{i:02d}", a, b, "test") for i, (a, b) in enumerate(texts)],
        Provenance(source="test.pairs"),
    )
    # tasks: the CLI's --kind choices come from the registry; known answers make two gold items
    assert "created 12" in run("tasks", "create", "--kind", toy.NAME, "--overlap", "3", "-p", project.root)
    tasks = store.labels.tasks(kind=toy.NAME)
    assert sum(t.is_gold for t in tasks) == 2
    from prefkit.curation.annotation.guidelines import write_default_guidelines

    (project.guidelines_dir / f"{toy.NAME}.md").unlink(missing_ok=True)
    [written] = write_default_guidelines(project.guidelines_dir)  # the built-in kinds' files exist already
    assert written.name == f"{toy.NAME}.md" and written.read_text().startswith("# Same meaning")
    # labels: through the label-file import, validated by the kind's own schema
    rows = []
    for t in tasks:
        truth = "different" if "tea" in t.payload["b"] else "same"
        for who in ("ann1", "ann2", "ann3"):
            verdict = truth if (who != "ann3" or t.item_ref != "toy:p11") else "same"
            rows.append(
                {
                    "annotator": who,
                    "task_kind": toy.NAME,
                    "item_id": t.item_ref,
                    "values": {"verdict": verdict},
                    "time_spent_s": 5,
                    "timestamp": "2026-01-05T10:00:00Z",
                }
            )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**rows[0], "values": {"verdict": "maybe"}}) + "\n")
    refused = CliRunner().invoke(cli, ["labels", "import", str(bad), "-p", str(project.root)])
    assert refused.exit_code == 1 and "verdict" in refused.output
    good = tmp_path / "labels.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run("labels", "import", good, "-p", project.root)
    # agreement: the kind's fields and units
    [row] = json.loads(run("agreement", "--kind", toy.NAME, "--boot", "50", "--json", "-p", project.root))
    assert (row["task_kind"], row["field"], row["n_units"]) == (toy.NAME, "verdict", 10)
    assert row["alpha"] > 0.8
    # release: the kind's consensus (its own assemble) is in final_labels, and every gate passes
    release_configs(project, '["labels", "final_labels"]')
    out = run("release", "check", "-p", project.root)
    assert "FAIL" not in out, out
    run("release", "cut", "--version", "1.0.0", "-p", project.root)
    finals = [
        json.loads(line)
        for line in (project.releases_dir / "1.0.0/data/final_labels" / f"{toy.NAME}.jsonl")
        .read_text()
        .splitlines()
    ]
    assert len(finals) == 12 and {json.loads(f["values"])["verdict"] for f in finals} == {"same", "different"}
    assert "1.0.0" in run("release", "list", "-p", project.root)
