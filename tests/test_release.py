"""Cutting, verifying and comparing releases."""

import json
import shutil

import pytest
from prefkit.curation.quality.consensus import adjudicate
from prefkit.exports.cupid import CUPID_COLUMNS
from prefkit.exports.release import ReleaseError, cut_release, diff_releases, load_manifest
from prefkit.exports.release_integrity import verify_release
from test_release_support import (
    cover,
    cupid_row,
    cut,
    data_bytes,
    import_cupid,
    labelled_project,
    match_tasks,
)


@pytest.fixture
def ready(project, tmp_path):
    return project, labelled_project(project, tmp_path)


def test_two_cuts_of_the_same_state_have_byte_identical_data_files(ready):
    project, _ = ready
    a, b = cut(project, "1.0.0"), cut(project, "1.0.1")
    files_a, files_b = data_bytes(a.path), data_bytes(b.path)
    assert files_a == files_b and len(files_a) >= 10
    assert a.data_sha256 == b.data_sha256 and b.bump == "patch"
    assert {
        "data/cupid_unverified/test.jsonl",
        "data/labels/preference_match.jsonl",
        "data/matching/test.jsonl",
        "data/final_labels/preference_match.jsonl",
        "data/adjudications/log.jsonl",
    } <= set(files_a)


def test_a_release_cut_through_the_library_is_recorded_and_listed(ready):
    from click.testing import CliRunner
    from prefkit.cli import cli
    from prefkit.schemas.common import sha256_file

    project, _ = ready
    r = cut(project, "1.0.0")
    (row,) = project.store.releases.recorded()
    assert (row.version, row.data_sha256) == ("1.0.0", r.data_sha256)
    assert row.manifest_sha256 == r.manifest_sha256 == sha256_file(r.path / "manifest.json")
    out = CliRunner().invoke(cli, ["release", "list", "-p", str(project.root)]).output
    assert "1.0.0" in out
    shutil.rmtree(r.path)  # a deleted release directory does not make the version free again
    with pytest.raises(ReleaseError, match="already recorded"):
        cut(project, "1.0.0")
    assert not r.path.exists()


def test_a_release_has_every_part_and_verifies(ready):
    project, _ = ready
    r = cut(project, "1.0.0")
    names = {p.name for p in r.path.iterdir()}
    assert {
        "data",
        "parquet",
        "prefkit-1.0.0.duckdb",
        "manifest.json",
        "README.md",
        "croissant.json",
    } <= names
    m = load_manifest(r.path)
    assert m.counts["cupid_unverified"] == 5 and m.counts["matching"] == 20 and m.override_reason is None
    assert all(g["passed"] for g in m.gates) and m.agreement[0]["ci_low"] is not None
    assert m.provenance["sources"][0]["licence"] == "MIT" and m.schema_versions["ReleaseManifest"] == "1.0"
    assert verify_release(r.path).problems == []


def test_verify_catches_a_flipped_byte_and_an_extra_file(ready):
    project, _ = ready
    r = cut(project, "1.0.0")
    target = r.path / "data" / "cupid_unverified" / "test.jsonl"
    raw = bytearray(target.read_bytes())
    raw[10] ^= 0x01
    target.write_bytes(bytes(raw))
    (r.path / "data" / "notes.txt").write_text("hi")
    assert verify_release(r.path).problems == [
        "data/cupid_unverified/test.jsonl: sha256 differs from the manifest",
        "data/notes.txt: not in the manifest",
    ]


def test_an_existing_version_is_never_overwritten(ready):
    project, _ = ready
    r = cut(project, "1.0.0")
    before = (r.path / "manifest.json").read_bytes()
    with pytest.raises(ReleaseError, match="already exists"):
        cut(project, "1.0.0")
    assert (r.path / "manifest.json").read_bytes() == before
    assert sorted(p.name for p in project.releases_dir.iterdir()) == ["1.0.0", "1.0.0.sha256"]  # no staging


def test_failing_gates_refuse_the_cut_unless_overridden_with_a_reason(ready):
    project, _ = ready
    tie = match_tasks(project.store, 1, prefix="tie")[0]
    cover(project.store, tie.task_id, ann1="fully", ann2="partially", ann3="not_covered")
    with pytest.raises(ReleaseError, match=f"FAIL  adjudicated.*\n.*{tie.task_id}"):
        cut(project, "1.0.0")
    assert not (project.releases_dir / "1.0.0").exists()
    r = cut(project, "1.0.0", override="tie on a pilot item; decided in the next batch")
    m = json.loads((r.path / "manifest.json").read_text())
    assert m["override_reason"] == "tie on a pilot item; decided in the next batch"
    assert [g["gate"] for g in m["gates"] if not g["passed"]] == ["adjudicated"]
    assert "overridden" in (r.path / "README.md").read_text()


def test_versions_must_be_semantic_and_increasing(ready):
    project, _ = ready
    with pytest.raises(ReleaseError, match="semantic version"):
        cut(project, "v1")
    cut(project, "1.2.0")
    with pytest.raises(ReleaseError, match="not above the latest release 1.2.0"):
        cut(project, "1.1.9")


def test_diff_classifies_patch_minor_and_major(ready, tmp_path):
    project, made = ready
    cut(project, "1.0.0")
    cut(project, "1.0.1")
    import_cupid(project, tmp_path, 3, start=100)
    with pytest.raises(ReleaseError, match="need a minor release; 1.0.2 is only a patch"):
        cut(project, "1.0.2")
    cut(project, "1.1.0")
    adjudicate(project.store, made["tasks"][19].task_id, "lead", {"coverage": "fully"}, "second opinion")
    with pytest.raises(ReleaseError, match="need a major release"):
        cut(project, "1.2.0")
    cut(project, "2.0.0")
    rel = project.releases_dir
    assert diff_releases(rel / "1.0.0", rel / "1.0.1") == {
        "from": str(rel / "1.0.0"),
        "to": str(rel / "1.0.1"),
        "level": "patch",
        "configs": {},
    }
    minor = diff_releases(rel / "1.0.1", rel / "1.1.0")
    assert minor["level"] == "minor" and minor["configs"] == {
        "cupid_unverified": {"added": 3, "removed": 0, "changed": 0},
        "cupid_raw": {"added": 3, "removed": 0, "changed": 0},  # the three new rows' sessions
    }
    major = diff_releases(rel / "1.1.0", rel / "2.0.0")
    assert major["level"] == "major"
    assert major["configs"]["matching"] == {"added": 0, "removed": 0, "changed": 1}


def test_annotators_are_pseudonymous_and_stable_across_releases(ready):
    project, _ = ready
    a, b = cut(project, "1.0.0"), cut(project, "1.0.1")
    text = "".join(p.read_text() for p in (a.path / "data").rglob("*.jsonl"))
    assert "ann1" not in text and "lead" not in text
    rows = [json.loads(x) for x in (a.path / "data/labels/preference_match.jsonl").read_text().splitlines()]
    assert {r["annotator"] for r in rows} == {
        project.store.releases.pseudonym(n) for n in ("ann1", "ann2", "ann3")
    }
    assert (a.path / "data/labels/preference_match.jsonl").read_bytes() == (
        b.path / "data/labels/preference_match.jsonl"
    ).read_bytes()


def test_release_of_the_alpsbench_sample_contains_all_of_it(alps_project):
    from prefkit.exports.alpsbench import packet
    from prefkit.exports.release import private_dir

    store = alps_project.store
    try:
        r = cut_release(alps_project, "1.0.0", override="sample import: gold evidence is upstream's")
        # Whole packets hold the test gold: they are private, never beside the public layout.
        assert not (r.path / "data/alpsbench_packets").exists()
        priv = private_dir(alps_project, "1.0.0")
        packets = [json.loads(x) for x in (priv / "alpsbench_packets/full.jsonl").read_text().splitlines()]
        assert len(packets) == 400
        by_id = {p.session_id: p for p in store.content.packets()}
        for row in packets[::40]:
            assert json.loads(row["packet"]) == packet(store, row["id"], by_id[row["id"]].extra)
        inputs = [
            json.loads(x)
            for p in (r.path / "data/alpsbench_task1").glob("*.jsonl")
            for x in p.read_text().splitlines()
        ]
        gold_rows = [
            json.loads(x)
            for d in (r.path / "data/alpsbench_task1_gold", priv / "alpsbench_task1_gold")
            for p in d.glob("*.jsonl")
            for x in p.read_text().splitlines()
        ]
        gold = sum(len(json.loads(row["gold"])["memory_items"]) for row in gold_rows)
        assert (len(inputs), len(gold_rows), gold) == (400, 400, store.count("memories", origin="gold"))
        splits = sorted(p.stem for p in (r.path / "data/alpsbench_task1").glob("*.jsonl"))
        assert splits == ["dev", "test", "validation"]
    finally:
        shutil.rmtree(alps_project.releases_dir, ignore_errors=True)
        shutil.rmtree(alps_project.root / "releases-private", ignore_errors=True)


def test_cupid_config_is_the_exact_cupid_row_format(ready):
    project, _ = ready
    r = cut(project, "1.0.0")
    lines = (r.path / "data/cupid_unverified/test.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(x) for x in lines]
    assert all(list(row) == list(CUPID_COLUMNS) for row in rows)
    assert sorted(rows, key=lambda x: x["current_request"]) == [cupid_row(i) for i in range(5)]


def test_allowed_offline_content_is_released_with_its_share_in_the_manifest(project, tmp_path):
    (project.root / "prefkit.toml").write_text(
        (project.root / "prefkit.toml").read_text().replace("allow_offline = false", "allow_offline = true")
    )
    project.__dict__.pop("config", None)  # re-read the edited file
    match_tasks(project.store, 2, offline=True, prefix="gen")
    import_cupid(project, tmp_path, 2)
    m = cut_release(project, "0.1.0", override="no labels yet").manifest
    assert next(g for g in m.gates if g["gate"] == "offline")["passed"]
    # 2 offline pairs; the import's 2 instances and their 2 reconstructed sessions (dialogue + session)
    assert (m.provenance["offline_records"], m.provenance["records"]) == (2, 8)
    assert m.provenance["stages"] == {"generate.pairs": 2, "import.cupid": 6}


def test_pseudonyms_follow_the_order_accounts_were_made_and_say_nothing_of_the_name(tmp_path):
    from prefkit.curation.project import Project

    a, b = Project.init(tmp_path / "a"), Project.init(tmp_path / "b")
    try:
        for project, names in ((a, ("zoe", "ann1", "bob")), (b, ("zoe", "ann1", "bob"))):
            for name in names:
                project.store.accounts.add_user(name, "annotator", "pw-" + name + "-long")
        assert a.store.releases.pseudonyms() == b.store.releases.pseudonyms()  # same steps, same ids
        assert [a.store.releases.pseudonym(n) for n in ("zoe", "ann1", "bob")] == [
            "ann_001",
            "ann_002",
            "ann_003",
        ]
        a.store.accounts.add_user(
            "adam", "annotator", "pw-adam-long"
        )  # a later account: the others keep theirs
        assert (
            a.store.releases.pseudonym("zoe") == "ann_001" and a.store.releases.pseudonym("adam") == "ann_004"
        )
        assert a.store.releases.pseudonym("nobody") != b.store.releases.pseudonym(
            "nobody"
        )  # no account: salted
    finally:
        a.close()
        b.close()


def test_a_version_cut_concurrently_elsewhere_is_not_overwritten(ready, monkeypatch):
    import prefkit.exports.release as rel

    project, _ = ready
    real = rel.build_release

    def racing(project_, stage, version, *args):
        manifest = real(project_, stage, version, *args)
        (project_.releases_dir / version).mkdir()  # another process renamed its cut into place first
        (project_.releases_dir / version / "manifest.json").write_text("{}")
        return manifest

    monkeypatch.setattr(rel, "build_release", racing)
    with pytest.raises(ReleaseError, match="appeared .* during this cut"):
        cut(project, "1.0.0")
    assert [p.name for p in project.releases_dir.iterdir()] == ["1.0.0"]
    assert (project.releases_dir / "1.0.0" / "manifest.json").read_text() == "{}"
