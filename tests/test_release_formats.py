"""A release's files in other tools: datasets (offline), mlcroissant, DuckDB, Parquet, the card's YAML."""

import json

import pytest
from test_release_support import alps_subset, cut, labelled_project


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """One release of a project with every config: CUPID, AlpsBench tracks, labels, matching, adjudications."""
    from prefkit.curation.project import Project
    from prefkit.pipelines.ingest import alpsbench

    tmp = tmp_path_factory.mktemp("rel")
    project = Project.init(tmp / "proj", name="formats-test")
    labelled_project(project, tmp)
    # About file formats, not verification: the packets' own gold is the reference.
    toml = project.root / "prefkit.toml"
    toml.write_text(
        toml.read_text().replace("[release]\n", '[release]\nalpsbench_reference = "imported"\n', 1)
    )
    project.__dict__.pop("config", None)
    project.store.content.import_bundle(alpsbench.build_bundle(alps_subset(tmp / "packets")))
    result = cut(project, "0.1.0", override="gold evidence of the upstream sample")
    yield result
    project.close()


def _card_yaml(path):
    import yaml

    text = (path / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1]), text


def test_card_has_hugging_face_metadata_and_datasheet_sections(release):
    meta, text = _card_yaml(release.path)
    assert meta["license"] == "cc-by-4.0" and meta["size_categories"] == ["n<1K"]
    assert meta["annotations_creators"] == ["expert-generated"] and meta["task_categories"] == [
        "text-generation"
    ]
    assert set(meta["source_datasets"]) == {"extended|AlpsBench", "extended|CUPID"}
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == set(release.manifest.counts)
    assert configs["cupid_unverified"]["data_files"] == [
        {"split": "test", "path": "parquet/cupid_unverified/test.parquet"}
    ]
    for section in (
        "Motivation",
        "Composition",
        "Collection process",
        "Labeling",
        "Uses",
        "Distribution",
        "Maintenance",
    ):
        assert f"\n## {section}\n" in text
    assert "| preference_match | coverage | ordinal | 20 |" in text  # agreement row with its CI


def test_datasets_loads_every_config_offline(release, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets
    import huggingface_hub.constants

    # Also when datasets was imported earlier in the session, before the variables were set.
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)

    meta, _ = _card_yaml(release.path)
    for cfg in meta["configs"]:
        ds = datasets.load_dataset(str(release.path), cfg["config_name"], cache_dir=str(tmp_path / "hf"))
        assert set(ds) == {f["split"] for f in cfg["data_files"]}
        assert sum(d.num_rows for d in ds.values()) == release.manifest.counts[cfg["config_name"]]
    cupid = datasets.load_dataset(str(release.path), "cupid_unverified", cache_dir=str(tmp_path / "hf"))[
        "test"
    ]
    assert cupid.column_names == [
        "persona_id",
        "instance_type",
        "current_request",
        "current_context_factor",
        "current_contextual_preference",
        "current_checklist",
        "prior_interactions",
    ]


def test_croissant_validates_offline_and_reads_records(release):
    import mlcroissant as mlc

    ds = mlc.Dataset(jsonld=str(release.path / "croissant.json"))  # raises on any validation error
    assert ds.metadata.name == "formats-test" and ds.metadata.version == "0.1.0"
    records = list(ds.records("labels/preference_match"))
    assert len(records) == release.manifest.counts["labels"]
    doc = json.loads((release.path / "croissant.json").read_text())
    digests = {f.path: f.sha256 for f in release.manifest.files}
    assert doc["distribution"] and all(d["sha256"] == digests[d["contentUrl"]] for d in doc["distribution"])


def test_parquet_holds_the_same_rows_as_jsonl(release):
    import pyarrow.parquet as pq

    files = sorted((release.path / "data").rglob("*.jsonl"))
    assert files
    for jsonl in files:
        rel = jsonl.relative_to(release.path / "data").with_suffix(".parquet")
        rows = [json.loads(x) for x in jsonl.read_text(encoding="utf-8").splitlines()]
        assert pq.read_table(release.path / "parquet" / rel).to_pylist() == rows, rel


def test_duckdb_file_has_a_table_per_config_and_analysis_views(release):
    import duckdb

    con = duckdb.connect(str(release.path / "prefkit-0.1.0.duckdb"), read_only=True)
    try:
        for config, n in release.manifest.counts.items():
            assert con.execute(f'SELECT count(*) FROM "{config}"').fetchone()[0] == n
        decided = dict(
            con.execute("SELECT decided_by, n FROM decided_by WHERE kind = 'preference_match'").fetchall()
        )
        assert decided == {"unanimous": 19, "majority": 1, "adjudicated": 1}
        # seven of the eight gates pass: assist_anchoring too, as no released label was assisted
        assert con.execute("SELECT count(*) FROM gates WHERE passed").fetchone()[0] == 7
    finally:
        con.close()
