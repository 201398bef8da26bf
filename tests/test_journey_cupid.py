"""The CUPID journey (the README's tour, every step the real ``prefkit`` command): generate -> labels ->
adjudication -> cut. The release alone is what CUPID's evaluator needs: ``cupid_instances/`` holds
exactly the released rows, one file each, and ``export cupid --per-instance --release`` rebuilds the
same folder from the release without the project."""

from __future__ import annotations

import json

import pytest
from journeykit import cupid_journey, read_jsonl

pytestmark = [pytest.mark.slow]


def test_the_release_ships_the_evaluator_folder_holding_exactly_the_released_rows(tmp_path):
    j = cupid_journey(tmp_path)
    rel = j.root / "releases" / "1.0.0"
    rows = read_jsonl(rel / "data" / "cupid" / "test.jsonl")
    files = sorted((rel / "cupid_instances").iterdir())
    assert rows and len(files) == len(rows)  # one file per released row, nothing else
    shipped = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    key = lambda r: (r["persona_id"], r["instance_type"], r["current_request"])  # noqa: E731
    assert sorted(map(key, shipped)) == sorted(map(key, rows))
    assert all(
        f.name == f"{r['persona_id']}+{r['instance_type']}.json" for f, r in zip(files, shipped, strict=True)
    )
    manifest = json.loads((rel / "manifest.json").read_text(encoding="utf-8"))
    listed = {f["path"] for f in manifest["files"]}
    assert {f"cupid_instances/{f.name}" for f in files} <= listed
    out = tmp_path / "from-release"
    j.run("export", "export", "cupid", "--per-instance", str(out), "--release", str(rel), "-p", str(tmp_path))
    assert {f.name: f.read_bytes() for f in out.iterdir()} == {f.name: f.read_bytes() for f in files}
