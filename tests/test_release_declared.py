"""A declared kind's release: NAME (decided items: id, fields, answers) and NAME_unverified, loaded by
datasets offline, read through Croissant and DuckDB, described in the card; cost counts the kind."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from declaredkind import DECIDED, ITEMS, NAME, declare, label_rows, write_items
from prefkit.cli import cli
from prefkit.curation.annotation import work
from prefkit.curation.annotation.labels_io import import_labels
from prefkit.curation.project import Project
from test_release_support import croissant_fields, cut, duckdb_rows, hub_offline


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("decl")
    Project.init(tmp / "proj", name="declared-release").close()
    declare(tmp / "proj")
    project = Project(tmp / "proj")
    items = [*ITEMS, {**ITEMS[0], "id": "i3"}]  # i3: no labels yet, so not decided
    work.create(project, "t", NAME, overlap="3", items=write_items(tmp / "items.jsonl", items))
    for who in ("ann1", "ann2", "ann3"):
        project.store.accounts.add_user(who, "annotator", "a-long-password")
    (tmp / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in label_rows()), encoding="utf-8")
    import_labels(project.store, tmp / "labels.jsonl")
    result = cut(project, "0.1.0", override="a small example: no gold items, low agreement")
    yield project, result
    project.close()


def test_the_release_holds_the_decided_items_and_the_rest(release):
    _, result = release
    assert result.manifest.counts[NAME] == 2 and result.manifest.counts[f"{NAME}_unverified"] == 1
    rows = [json.loads(x) for x in (result.path / "data" / NAME / "test.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["i1", "i2"]
    assert rows[0]["history"] == ITEMS[0]["history"] and rows[0]["preferences"] == [
        "short answers",
        "no jargon",
    ]
    assert {r["id"]: r["answers"] for r in rows} == DECIDED
    card = (result.path / "README.md").read_text(encoding="utf-8")
    assert (
        "strength: How clear is the difference?, rating (1, 2, 3, 4, 5); decided by the lower median" in card
    )
    assert "why: Why, text, optional; decided by not decided" in card
    assert f"Not measured (free-text answers, each kept in the `labels` config): {NAME}.why." in card


def test_datasets_croissant_and_duckdb_read_it(release, tmp_path, monkeypatch):
    _, result = release
    datasets = hub_offline(monkeypatch)
    ds = datasets.load_dataset(str(result.path), NAME, cache_dir=str(tmp_path / "hf"))["test"]
    assert ds.column_names == ["id", "history", "preferences", "response_a", "answers"]
    assert ds[1]["answers"] == {"better": "B", "strength": 4, "tags": ["y"], "order": ["m3", "m2", "m1"]}
    rest = datasets.load_dataset(str(result.path), f"{NAME}_unverified", cache_dir=str(tmp_path / "hf"))
    assert rest["test"]["id"] == ["i3"]
    fields = croissant_fields(result.path, NAME)
    assert list(fields) == ["id", "history", "preferences", "response_a", "answers"]
    assert fields["answers"]["description"] == "JSON object with keys better, strength, tags, order."
    assert fields["history"]["description"] == "JSON array of objects with keys role, content."
    got = duckdb_rows(result.path, f'SELECT id, answers.strength FROM "{NAME}" ORDER BY id')
    assert got == [("i1", 1), ("i2", 4)]


def test_cost_counts_the_kind(release):
    from prefkit.curation.quality.cost import cost_report

    project, _ = release
    report = cost_report(project.store, project.config.annotation)
    assert [(t.kind, t.items) for t in report.times] == [(NAME, 6)]
    verified = {v.unit: v for v in report.verified}
    assert verified[f"{NAME} items"].count == 2 and verified[f"{NAME} items"].kind == NAME
    result = CliRunner().invoke(cli, ["cost", "-p", str(project.root)])
    assert result.exit_code == 0 and f"{NAME} items" in result.output
