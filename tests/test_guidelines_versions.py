"""Guidelines versions: every label records the version of its kind's guidelines its annotator had when
the item was drawn (the app, label files, Label Studio pulls), and agreement is measured per version."""

from __future__ import annotations

import hashlib
import json

import pytest
from appkit import ALICE, MAYA, app, project_fixtures
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.guidelines import current_version, version_of
from prefkit.curation.annotation.labels_io import LabelsFileError, export_rows, import_labels
from prefkit.curation.quality.agreement import agreement_rows, agreement_timeline
from prefkit.schemas.common import utcnow
from prefkit.schemas.curation import LabelEvent

template, project = project_fixtures(env=True, n=6, overlap=2)
KIND = "preference_match"


def edit_guidelines(project, text: str) -> str:
    (project.guidelines_dir / f"{KIND}.md").write_text(text, encoding="utf-8")
    return version_of(text)


def test_a_version_is_the_sha256_prefix_of_the_text_as_shown(project):
    text = (project.guidelines_dir / f"{KIND}.md").read_text(encoding="utf-8")
    assert current_version(project, project.store, KIND) == hashlib.sha256(text.encode()).hexdigest()[:12]
    assert version_of(text + " ") != version_of(text) and len(version_of("")) == 12


def test_the_app_records_the_version_each_item_was_drawn_under(project):
    """Guidelines edited while the first item is on screen: that item keeps the old version, the next
    item (drawn after the edit) the new one."""
    old = current_version(project, project.store, KIND)
    at = app(ALICE, KIND)
    first = workflow.current_item(project, "alice", KIND)
    new = edit_guidelines(project, "# Matching\n\nA clarified rule: partial means half or more.\n")
    at.button(key=f"{first.event_id}:fully").click().run()
    second = workflow.current_item(project, "alice", KIND)
    at.button(key=f"{second.event_id}:partially").click().run()
    events = {e.event_id: e for e in project.store.labels.events(annotator="alice")}
    assert events[first.event_id].guidelines_version == old != new
    assert events[second.event_id].guidelines_version == new
    assert project.store.guidelines.text(KIND, new).startswith("# Matching")  # the text is kept
    edit = workflow.edit_label(project, "alice", first.event_id, {"coverage": "partially"})
    assert edit.guidelines_version == new  # an edit is the item drawn again, under today's text


def test_labels_made_before_versions_have_none(project):
    task = project.store.labels.tasks(kind=KIND)[0]
    project.store.labels.append_event(
        LabelEvent(
            event_id="old1",
            task_id=task.task_id,
            kind=KIND,
            annotator="alice",
            values={"coverage": "fully"},
            created_at=utcnow(),
        )
    )
    assert project.store.labels.event("old1").guidelines_version is None
    (row,) = [v for v in project.store.guidelines.versions(KIND) if v.labels]
    assert (row.version, row.labels) == (None, 1)


def rows_file(tmp_path, rows) -> str:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def label_row(task, who, coverage, version=None, minute=0):
    row = {
        "annotator": who,
        "task_kind": KIND,
        "item_id": task.item_ref,
        "values": {"coverage": coverage},
        "timestamp": f"2026-11-20T10:{minute:02d}:00Z",
    }
    return row | ({"guidelines_version": version} if version else {})


def test_label_files_record_the_named_or_the_current_version(project, tmp_path):
    runner, where = CliRunner(), ["-p", str(project.root)]
    old = current_version(project, project.store, KIND)
    new = edit_guidelines(project, "# Matching, second edition\n")
    t1, t2 = project.store.labels.tasks(kind=KIND)[:2]
    path = rows_file(tmp_path, [label_row(t1, "alice", "fully", old), label_row(t2, "alice", "fully")])
    done = runner.invoke(cli, ["labels", "import", path, *where])
    assert done.exit_code == 0 and "2 new event(s)" in done.output, done.output
    assert sorted(e.guidelines_version for e in project.store.labels.events()) == sorted([old, new])
    edit_guidelines(project, "# Matching, third edition\n")  # the id leaves the version out:
    again = runner.invoke(cli, ["labels", "import", path, *where])
    assert "0 new event(s), 2 already recorded" in again.output  # a re-import is still a no-op
    exported = {r["item_id"]: r["guidelines_version"] for r in export_rows(project.store)}
    assert exported == {t1.item_ref: old, t2.item_ref: new}


def test_a_version_the_project_never_had_is_refused_naming_file_line_and_key(project, tmp_path):
    t1 = project.store.labels.tasks(kind=KIND)[0]
    path = rows_file(
        tmp_path, [label_row(t1, "alice", "fully"), label_row(t1, "bob", "fully", "0123456789ab")]
    )
    with pytest.raises(LabelsFileError) as err:
        import_labels(project.store, path, guidelines=project.guidelines)
    assert str(err.value) == (
        f"{path}:2: guidelines_version: {KIND} never had guidelines version "
        "'0123456789ab' in this project (prefkit guidelines list)"
    )
    assert project.store.labels.events() == []


def test_example_label_files_carry_no_version():
    from conftest import ROOT

    files = list((ROOT / "pipelines" / "examples").rglob("*labels*.jsonl"))
    assert files and not any("guidelines_version" in f.read_text(encoding="utf-8") for f in files)


def test_agreement_per_version_matches_the_hand_computed_alpha(project, tmp_path):
    """Version A: units (f,f) (n,n) (f,n) (n,n): 3 f and 5 n values, one disagreeing unit, so
    α = 1 - (n-1)·D_o/D_e = 1 - 7·2/(2·3·5) = 8/15; version B: four agreeing units, α = 1; the
    current version C has no label: its row is there with α None."""
    a = current_version(project, project.store, KIND)
    b = edit_guidelines(project, "# B\n")
    current_version(project, project.store, KIND)
    c = edit_guidelines(project, "# C\n")
    tasks = project.store.labels.tasks(kind=KIND)
    pairs = [
        ("fully", "fully"),
        ("not_covered", "not_covered"),
        ("fully", "not_covered"),
        ("not_covered", "not_covered"),
    ]
    rows = [
        label_row(tasks[i], who, values[k], a, i)
        for i, values in enumerate(pairs)
        for k, who in enumerate(("alice", "bob"))
    ]
    rows += [label_row(tasks[4], who, "fully", b, 9) for who in ("alice", "bob")]
    rows += [label_row(tasks[5], who, "partially", b, 9) for who in ("alice", "bob")]
    done = CliRunner().invoke(cli, ["labels", "import", rows_file(tmp_path, rows), "-p", str(project.root)])
    assert done.exit_code == 0, done.output
    by_version = {r["guidelines_version"]: r for r in agreement_rows(project.store, KIND, by_guidelines=True)}
    assert set(by_version) == {a, b, c}
    assert by_version[a]["alpha"] == pytest.approx(8 / 15) and by_version[a]["n_units"] == 4
    assert by_version[b]["alpha"] == pytest.approx(1.0) and by_version[b]["n_units"] == 2
    assert by_version[c]["alpha"] is None and by_version[c]["n_units"] == 0
    out = CliRunner().invoke(
        cli, ["agreement", "--kind", KIND, "--by-guidelines", "--json", "-p", str(project.root)]
    )
    assert [r["guidelines_version"] for r in json.loads(out.output)] == [
        r["guidelines_version"] for r in by_version.values()
    ]
    listed = CliRunner().invoke(
        cli, ["guidelines", "list", "--kind", KIND, "--json", "-p", str(project.root)]
    )
    counts = {r["version"]: (r["labels"], r["current"]) for r in json.loads(listed.output)}
    assert counts == {a: (8, False), b: (4, False), c: (0, True)}
    diff = CliRunner().invoke(cli, ["guidelines", "diff", KIND, b, c, "-p", str(project.root)])
    assert diff.exit_code == 0 and "-# B\n+# C\n" in diff.output
    # over time: the six units all finished on one day; ordinal α with 5 fully, 2 partially, 5 not
    # covered and one (fully, not covered) pair: δ² = (12 - 5)² = 49 for it, D_e sums to 2940, so
    # α = 1 - 11·(2·49)/2940 = 19/30
    (day,) = agreement_timeline(project.store, KIND)
    assert (day["day"], day["n_units"], day["alpha"]) == ("2026-11-20", 6, pytest.approx(19 / 30))
    at = app(MAYA)
    assert any(s.value == "Agreement over time" for s in at.subheader) and not at.exception
