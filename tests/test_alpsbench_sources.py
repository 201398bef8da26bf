"""Packets that carry their own tracks, and test gold that must stay private (issue 31).

- The packets' published rows are the source: ``build-alpsbench`` builds only the (track, session)s no
  packet carries; a built row whose (track, session) a packet carries is left out of a release and
  counted; a duplicate id that remains is one line naming track, session and both sources, and
  neither ``release check`` nor ``release cut`` writes anything.
- Rows with the same gold share a split; the examples split comes from dev only.
- The ``test_gold_private`` gate measures something on every AlpsBench release and fails on any test
  gold in a public place; the cut reads the written files back and stops on a leak.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fixtures_alps import packet_files, write_packets
from prefkit.cli import cli
from prefkit.curation.quality.gates import ConfigPlan, GateContext, gate_test_gold_private
from prefkit.curation.store import AlpsTask
from prefkit.exports.private_gold import Secrets, release_leaks
from prefkit.exports.release import check_release, cut_release
from prefkit.exports.release_data import SUPERSEDED, TrackConflict, alps_rows
from prefkit.pipelines.ingest import alpsbench
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.memories.tasks import BuildConfig, build_alpsbench
from prefkit.schemas.alpsbench_layout import assign_splits, make_pair, packet_tracks
from prefkit.schemas.config import ReleasePolicy
from prefkit.schemas.curation import Provenance


def imported(project, tmp_path, n=6, edit=None):
    root = write_packets(tmp_path / "packets", n=n)
    if edit:
        for path in packet_files(root):
            pkt = json.loads(path.read_text(encoding="utf-8"))
            edit(pkt)
            path.write_text(json.dumps(pkt), encoding="utf-8")
    project.store.content.import_bundle(alpsbench.build_bundle(root))
    return project


def build(project, **cfg):
    with LLMLayer(project.store, llm_config=project.config.llm, backend="offline", progress=False) as layer:
        return build_alpsbench(project.store, layer, BuildConfig(**cfg))


def test_a_packet_says_which_tracks_it_carries():
    pkt = {
        "task1": {"ground_truth_memories": []},
        "task2": {"new_dialogue": [{"role": "user"}]},
        "task3": {"candidate_memories": [{}] * 101},
        "task4": [{"ability": "ability2"}, {"ability": "ability2"}],
    }
    assert packet_tracks(pkt) == {"task1", "task2", "task3_d100", "task4_ability2"}
    assert packet_tracks({"task1": {}, "task2": {"new_dialogue": []}}) == set()


def test_the_build_fills_only_the_tracks_and_sessions_no_packet_carries(project, tmp_path):
    imported(project, tmp_path)
    report = build(project, distractors=(2, 3))
    carried = {(t, p.session_id) for p in project.store.content.packets() for t in packet_tracks(p.extra)}
    assert report.from_packets["task2"] == 6 and "task2" not in report.built
    built = {(r.track, r.session_id) for r in project.store.alps_tasks.tasks()}
    assert built and not built & carried  # nothing built where a packet has its own row
    assert {t for t, _s in built} >= {"task3_d3"}  # the packets carry d2 only (pool of 3 candidates)


def test_a_built_row_a_packet_carries_is_left_out_and_counted(project, tmp_path):
    """A project built before the rule (the issue's: task 2-4 rows built for sessions whose packets
    carry their own) releases the packets' rows and counts the built ones as superseded."""
    imported(project, tmp_path)
    sid = project.store.content.packets()[0].session_id
    inp, gold = make_pair("task2", sid, sid, None, None, {"query": "q"}, {"answer": [{"value": "built"}]})
    project.store.alps_tasks.add(
        [AlpsTask.built("task2", inp, gold, {})], Provenance(source="build.alpsbench")
    )
    rows, _unverified, dropped, sources = alps_rows(project.store)
    assert dropped["task2"] == {SUPERSEDED: 1}
    assert sources["task2"] == {"packet": 6} and len(rows["task2"]) == 6
    assert all(g["gold"].get("answer") != [{"value": "built"}] for _i, g in rows["task2"])


def test_a_duplicate_id_in_one_track_is_one_line_and_nothing_is_written(project, tmp_path):
    def twice(pkt):  # two task 4 entries of one ability with the same first query id
        pkt["task4"] = [pkt["task4"][0], json.loads(json.dumps(pkt["task4"][0]))]

    imported(project, tmp_path, n=3, edit=twice)
    with pytest.raises(TrackConflict) as err:
        alps_rows(project.store)
    message = str(err.value)
    assert "\n" not in message and "task4_ability1" in message and "sess_" in message
    assert message.count("the packet of") == 2 and "nothing written" in message
    result = CliRunner().invoke(cli, ["release", "check", "-p", str(project.root)])
    assert result.exit_code == 1 and result.output.startswith("error: alpsbench task4_ability1: benchmark_id")
    assert "Traceback" not in result.output
    result = CliRunner().invoke(
        cli, ["release", "cut", "--version", "1.0.0", "--override", "x", "-p", str(project.root)]
    )
    assert result.exit_code == 1 and "task4_ability1" in result.output
    assert not (project.root / "releases" / "1.0.0").exists() and not list(
        project.releases_dir.glob(".staging*")
    )


def _pair(bid, gold):
    return make_pair("task4", bid, bid.split("__")[0], None, None, {"query": bid}, gold, ability="ability2")


def test_rows_with_the_same_gold_share_a_split_and_the_quotas_stay_exact():
    same = {"selected_memory_id": "m1", "selected_memory": {"memory_id": "m1", "value": "likes tea"}}
    pairs = [
        _pair(f"s{i}", {"selected_memory_id": f"m{i}", "selected_memory": {"value": f"v{i}"}})
        for i in range(18)
    ]
    pairs += [_pair("twin__a", same), _pair("twin__b", same)]
    splits = {p[0]["benchmark_id"]: s for s, p in assign_splits(pairs)}
    assert splits["twin__a"] == splits["twin__b"]
    counts = {s: sum(v == s for v in splits.values()) for s in ("dev", "validation", "test")}
    assert counts == {"dev": 4, "validation": 4, "test": 12}
    alone = [p for p in pairs if not p[0]["benchmark_id"].startswith("twin")]
    # with every gold distinct, the rule is AlpsBench's: rank by the salted hash, fill dev, validation, test
    from prefkit.schemas.alpsbench_layout import split_rank

    ranked = sorted(alone, key=lambda p: split_rank(p[0]["benchmark_id"]))
    expected = ["dev"] * 3 + ["validation"] * 3 + ["test"] * 12
    assert [s for s, _p in assign_splits(alone)] == expected
    assert [p[0]["benchmark_id"] for _s, p in assign_splits(alone)] == [p[0]["benchmark_id"] for p in ranked]


def _context(configs, found):
    return GateContext(None, ReleasePolicy(), configs=configs, test_gold=lambda: found)


def test_the_gate_fails_with_nothing_to_measure_and_on_a_leak_and_passes_only_when_it_looked():
    tracks = [ConfigPlan("alpsbench_task1", ("memory_verify",), 10)]
    assert not gate_test_gold_private(_context(tracks, (0, []))).passed  # nothing to measure: fails
    leak = gate_test_gold_private(_context(tracks, (5, ["data/x.jsonl: test gold of task1:s1"])))
    assert not leak.passed and leak.culprits == ["data/x.jsonl: test gold of task1:s1"]
    ok = gate_test_gold_private(_context(tracks, (5, [])))
    assert ok.passed and ok.summary == "none of 5 test-split gold objects is in a public file"
    assert gate_test_gold_private(_context([ConfigPlan("cupid", (), 3)], (0, []))).passed  # no AlpsBench


def test_a_test_gold_object_is_found_in_json_text_nested_rows_parquet_and_the_card(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    gold = {"selected_memory_id": "c7", "selected_memory": {"memory_id": "c7", "value": "owns a cat"}}
    found = Secrets()
    found.add(gold, "task3_d100:s9")
    found.add({"answer": []}, "task2:s1")  # a gold that holds nothing is not looked for
    assert len(found) == 1
    (tmp_path / "a.jsonl").write_text(json.dumps({"gold": json.dumps(gold)}) + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(json.dumps({"x": [{"gold": gold}]}) + "\n", encoding="utf-8")
    pq.write_table(pa.table({"gold": [json.dumps(gold, sort_keys=True)]}), tmp_path / "c.parquet")
    (tmp_path / "README.md").write_text(f"example: {json.dumps(gold, ensure_ascii=False)}", encoding="utf-8")
    (tmp_path / "clean.jsonl").write_text(json.dumps({"gold": {**gold, "selected_memory_id": "c8"}}) + "\n")
    leaks = release_leaks(tmp_path, found)
    assert sorted(x.split(":")[0] for x in leaks) == ["README.md", "a.jsonl", "b.jsonl", "c.parquet"]


def test_a_release_of_packets_checks_its_test_gold_and_cuts(project, tmp_path):
    imported(project, tmp_path, n=12)
    project.config.release.alpsbench_reference = "imported"
    (gate,) = [g for g in check_release(project) if g.gate == "test_gold_private"]
    assert gate.passed and gate.value == 0 and gate.summary.startswith("none of ")
    cut = cut_release(project, "1.0.0", override="sources test: no labels")
    examples = cut.path / "benchmark_data" / "examples" / "task1" / "model_input.jsonl"
    dev = cut.path / "benchmark_data" / "dev" / "task1" / "model_input.jsonl"
    ids = lambda p: {json.loads(x)["benchmark_id"] for x in p.read_text().splitlines()}  # noqa: E731
    assert ids(examples) and ids(examples) <= ids(dev)  # examples from dev only
