"""AlpsBench public layout: row shape, exact 1:1:3 split quotas, no test gold in public configs."""

from __future__ import annotations

import json
import shutil

import pytest
from prefkit.exports.release import cut_release, private_dir
from prefkit.exports.release_data import alpsbench_configs
from prefkit.schemas.alpsbench_layout import assign_splits, make_pair, split_counts


@pytest.mark.parametrize(("n", "want"), [(2330, (466, 466, 1398)), (2381, (476, 476, 1429)), (7, (1, 1, 5))])
def test_split_quotas_are_alpsbenchs(n, want):
    # The counts of AlpsBench's own release_artifacts_v1/split_manifest.json (task1, task3 tracks).
    assert tuple(split_counts(n).values()) == want
    pairs = [make_pair("task3", f"sess_{i:05d}", f"sess_{i:05d}", None, None, {}, {}) for i in range(n)]
    got = [s for s, _ in assign_splits(pairs)]
    assert (got.count("dev"), got.count("validation"), got.count("test")) == want
    # Stable: a row keeps its split when the rows come in another order.
    again = dict((p[0]["benchmark_id"], s) for s, p in assign_splits(list(reversed(pairs))))
    assert again == {p[0]["benchmark_id"]: s for s, p in assign_splits(pairs)}


@pytest.mark.shared_data
def test_public_configs_have_the_row_shape_and_no_test_gold(alps_project):
    configs = {(c.name, c.private): c for c in alpsbench_configs(alps_project.store, "imported")}
    public = {name: c for (name, private), c in configs.items() if not private}
    for name, cfg in public.items():
        if name.endswith("_gold"):
            assert set(cfg.splits) == {"dev", "validation"}, name
        else:
            counts = {s: len(rows) for s, rows in cfg.splits.items()}
            assert counts == split_counts(cfg.count), name
            row = json.loads(cfg.splits["test"][0])
            assert {"benchmark_id", "task", "session_id", "canonical_id", "stratum", "input"} <= set(row)
            assert "gold" not in row and "reference_output" not in json.loads(row["input"])
    hidden = configs[("alpsbench_task1_gold", True)]
    assert set(hidden.splits) == {"test"} and hidden.count == len(public["alpsbench_task1"].splits["test"])
    assert "alpsbench_packets" not in public
    ids = {json.loads(x)["benchmark_id"] for x in public["alpsbench_task1"].splits["dev"]}
    assert ids and all("__" in i for i in ids)  # task 1 ids are session__canonical, as AlpsBench's


@pytest.mark.shared_data
def test_benchmark_ids_and_splits_are_stable_across_releases(alps_project):
    try:
        a = cut_release(alps_project, "2.0.0", override="sample")
        b = cut_release(alps_project, "2.0.1", override="sample")
        for split in ("dev", "validation", "test"):
            assert (a.path / f"data/alpsbench_task2/{split}.jsonl").read_bytes() == (
                b.path / f"data/alpsbench_task2/{split}.jsonl"
            ).read_bytes()
        assert (
            not list(a.path.rglob("*test*gold*"))
            and not (a.path / "data/alpsbench_task2_gold/test.jsonl").exists()
        )
        assert (private_dir(alps_project, "2.0.0") / "alpsbench_task2_gold/test.jsonl").is_file()
    finally:
        shutil.rmtree(alps_project.releases_dir, ignore_errors=True)
        shutil.rmtree(alps_project.root / "releases-private", ignore_errors=True)
