"""A declared kind's span answers in the release: the decided spans in JSONL, loaded by datasets
offline (Parquet), in Croissant and DuckDB, and described in the card."""

from __future__ import annotations

import json

from prefkit.curation.annotation import work
from prefkit.curation.annotation.labels_io import import_labels
from prefkit.curation.project import Project
from spankind import DECIDED, NAME, declare, label_rows, write_items
from test_release_support import croissant_fields, cut, duckdb_rows, hub_offline


def test_span_answers_ship_in_every_format(tmp_path, monkeypatch):
    Project.init(tmp_path / "proj", name="spans-release").close()
    declare(tmp_path / "proj")
    project = Project(tmp_path / "proj")
    try:
        work.create(project, "t", NAME, overlap="3", items=write_items(tmp_path / "items.jsonl"))
        for who in ("ann1", "ann2", "ann3"):
            project.store.accounts.add_user(who, "annotator", "a-long-password")
        (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in label_rows()))
        import_labels(project.store, tmp_path / "labels.jsonl")
        result = cut(project, "0.1.0", override="a small example: no gold items, low agreement")
    finally:
        project.close()
    rows = [json.loads(x) for x in (result.path / "data" / NAME / "test.jsonl").read_text().splitlines()]
    shipped = {  # each span with the characters it marks
        "marks": [{**DECIDED["marks"][0], "text": "bike lane"}],
        "said": [{**DECIDED["said"][0], "text": "short"}],
    }
    assert [r["answers"] for r in rows] == [shipped]
    card = (result.path / "README.md").read_text(encoding="utf-8")
    assert (
        "marks: Mark what follows a preference, and what breaks one, span over response (pref, bad;" in card
    )
    assert "decided by the words more than half of the answers mark" in card
    datasets = hub_offline(monkeypatch)
    ds = datasets.load_dataset(str(result.path), NAME, cache_dir=str(tmp_path / "hf"))["test"]
    assert ds[0]["answers"] == shipped
    fields = croissant_fields(result.path, NAME)
    assert fields["answers"]["description"] == "JSON object with keys marks, said."
    got = duckdb_rows(result.path, f'SELECT answers.said[1].turn, answers.marks[1].label FROM "{NAME}"')
    assert got == [(0, "pref")]
