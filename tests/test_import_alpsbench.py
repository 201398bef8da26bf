"""AlpsBench packets: every part kept, counts match the packets, the round trip is lossless (on the
real sample); bad packets are refused whole (on packets the tests write)."""

import json

import pytest
from fixtures_alps import packet_files, write_packets
from prefkit.curation.store import StoreError
from prefkit.exports.alpsbench import export_packets
from prefkit.pipelines.ingest import alpsbench
from prefkit.schemas.common import InputError


def _packets(root):
    return {
        p.relative_to(root).as_posix(): json.loads(p.read_text("utf-8"))
        for p in sorted(root.rglob("sess_*.json"))
    }


@pytest.mark.shared_data
def test_counts_match_the_packets_themselves(alps_project, alps_packets):
    packets = _packets(alps_packets).values()
    status = alps_project.store.status()
    assert status["packets"] == status["dialogues"] == len(packets) == 400
    assert status["turns"] == sum(len(p["dialogue"]) for p in packets)
    assert status["memories_gold"] == sum(len(p["task1"]["ground_truth_memories"]) for p in packets)
    assert status["memories_candidate"] == sum(
        len(o["memory_items"]) for p in packets for o in p["task1"]["llm_outputs"].values()
    )


@pytest.mark.shared_data
def test_every_models_extraction_is_kept_with_its_source(alps_project, alps_packets):
    packets = _packets(alps_packets).values()
    models = {m for p in packets for m in p["task1"]["llm_outputs"]}
    stored = {m.source_model for m in alps_project.store.content.memories(origin="candidate")}
    assert stored == models and len(models) == 7


@pytest.mark.shared_data
def test_schema_breaking_candidates_are_kept_and_flagged(alps_project):
    cands = alps_project.store.content.memories(origin="candidate")
    invalid = [c for c in cands if not c.valid]
    types = {c.raw.get("type") for c in invalid}
    assert {"explicit", "Thoughts/Curiosity"} <= types
    assert any(c.raw.get("confidence") is None for c in invalid)
    assert all(c.problems for c in invalid)
    assert cands and all(c.raw and "evidence_text" in c.raw for c in cands)


@pytest.mark.shared_data
def test_round_trip_is_lossless_field_by_field(alps_project, alps_packets, tmp_path):
    out = tmp_path / "out"
    assert export_packets(alps_project.store, out) == 400
    original, exported = _packets(alps_packets), _packets(out)
    assert original.keys() == exported.keys()
    for rel, a in original.items():
        b = exported[rel]
        assert list(a) == list(b), rel
        for key in a:
            assert a[key] == b[key], f"{rel}: field {key} differs"
        for i, (ga, gb) in enumerate(
            zip(a["task1"]["ground_truth_memories"], b["task1"]["ground_truth_memories"], strict=True)
        ):
            assert ga == gb, f"{rel}: gold memory {i}"


@pytest.mark.shared_data
def test_reimport_is_a_no_op(alps_project, alps_packets):
    before = alps_project.store.status()
    result = alps_project.store.content.import_bundle(alpsbench.build_bundle(alps_packets))
    assert result.already_imported and alps_project.store.status() == before


def _sample(dest, n=5):
    return packet_files(write_packets(dest, n))


def test_bad_packet_names_file_and_field_and_writes_nothing(project, tmp_path):
    files = _sample(tmp_path / "in")
    data = json.loads(files[3].read_text())
    data["task1"]["ground_truth_memories"][0]["type"] = "explicit"
    files[3].write_text(json.dumps(data))
    with pytest.raises(InputError) as exc:
        project.store.content.import_bundle(alpsbench.build_bundle(tmp_path / "in"))
    assert files[3].name in str(exc.value) and "ground_truth_memories.0" in str(exc.value)
    assert "type" in str(exc.value)
    assert project.store.status()["dialogues"] == 0


def test_non_utf8_and_malformed_json_are_reported_with_line(project, tmp_path):
    files = _sample(tmp_path / "in", n=2)
    files[1].write_bytes(b'{"session_id": "x",\n "dialogue": "\xff\xfe"}')
    with pytest.raises(InputError, match=rf"{files[1].name}:2: not valid UTF-8"):
        alpsbench.build_bundle(tmp_path / "in")
    files[1].write_text('{"session_id": "x",\n\n  "dialogue": [,]}')
    with pytest.raises(InputError, match=rf"{files[1].name}:3: malformed JSON"):
        alpsbench.build_bundle(tmp_path / "in")
    assert project.store.status()["dialogues"] == 0


def test_same_ids_from_different_bytes_are_refused(project, tmp_path):
    files = _sample(tmp_path / "in", n=1)
    project.store.content.import_bundle(alpsbench.build_bundle(tmp_path / "in"))
    data = json.loads(files[0].read_text())
    data["dialogue"][0]["text"] += " (edited)"
    files[0].write_text(json.dumps(data))
    with pytest.raises(StoreError, match="already in the project"):
        project.store.content.import_bundle(alpsbench.build_bundle(tmp_path / "in"))
    assert project.store.status()["dialogues"] == 1
