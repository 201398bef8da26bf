"""CUPID rows: import JSONL/Parquet, export them back identically; bad input names file and line."""

import json

import pyarrow.parquet as pq
import pytest
from prefkit.curation.store import CupidSession
from prefkit.exports.cupid import export_cupid
from prefkit.pipelines.ingest import cupid
from prefkit.schemas import reading
from prefkit.schemas.common import InputError


def _row(i, kind="consistent"):
    return {
        "persona_id": f"persona_{i // 3}",
        "instance_type": kind,
        "current_request": f"Could you plan the offsite #{i}? <script>alert(1)</script>",
        "current_context_factor": "Quarterly offsite",
        "current_contextual_preference": "Plans for the offsite list costs per person in euros.",
        "current_checklist": ["Are costs listed per person?", "Are amounts in euros?"],
        "prior_interactions": [
            {
                "context_factor": "Quarterly offsite",
                "contextual_preference": "Plans for the offsite list costs per person in euros.",
                "dialogue": [
                    {"role": "user", "content": "Plan a team dinner — ünïcödé ✓"},
                    {"role": "assistant", "content": "Here is a plan..."},
                ],
            }
        ],
    }


@pytest.fixture
def rows():
    kinds = ["consistent", "contrastive", "changing"]
    return [_row(i, kinds[i % 3]) for i in range(9)]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_round_trip_is_exact(project, rows, tmp_path):
    src = _write_jsonl(tmp_path / "in.jsonl", rows)
    result = project.store.content.import_bundle(cupid.build_bundle(src, licence="MIT"))
    assert result.counts["instances"] == 9
    out = tmp_path / "out.jsonl"
    assert export_cupid(project.store, out) == 9
    assert [json.loads(line) for line in out.read_text("utf-8").splitlines()] == rows
    first = json.loads(out.read_text("utf-8").splitlines()[0])
    assert list(first) == list(rows[0])  # CUPID's key order, at every level
    assert list(first["prior_interactions"][0]["dialogue"][0]) == ["role", "content"]


def test_imported_sessions_read_back_as_cupid_sessions_with_the_rows_parts(project, rows, tmp_path):
    project.store.content.import_bundle(cupid.build_bundle(_write_jsonl(tmp_path / "in.jsonl", rows)))
    sessions = project.store.content.sessions()
    assert len(sessions) == 3 and all(isinstance(s, CupidSession) for s in sessions)  # one per persona
    s = sessions[0]
    prior = rows[0]["prior_interactions"][0]
    assert (s.persona_id, s.index, s.factor_name, s.preference_text) == (
        "persona_0",
        1,
        prior["context_factor"],
        prior["contextual_preference"],
    )
    assert s.questions == rows[0]["current_checklist"]  # the checklist of its gold preference
    assert [(t.index, t.role, t.content) for t in s.turns] == [
        (k, m["role"], m["content"]) for k, m in enumerate(prior["dialogue"])
    ]
    assert s.as_json()["checklist"] == [{"question": q} for q in s.questions]
    assert project.store.content.dialogue(s.session_id).meta == {"imported_from": "cupid"}


def test_parquet_round_trip_is_exact(project, rows, tmp_path):
    src = _write_jsonl(tmp_path / "in.jsonl", rows)
    project.store.content.import_bundle(cupid.build_bundle(src))
    out = tmp_path / "out.parquet"
    export_cupid(project.store, out)
    assert pq.read_table(out).to_pylist() == rows
    other = project.__class__.init(tmp_path / "second")
    other.store.content.import_bundle(cupid.build_bundle(out))  # Parquet import reads it back
    assert [i.record.model_dump(mode="json") for i in other.store.content.instances()] == rows
    other.close()


def test_reimport_same_file_is_a_no_op(project, rows, tmp_path):
    src = _write_jsonl(tmp_path / "in.jsonl", rows)
    project.store.content.import_bundle(cupid.build_bundle(src))
    again = project.store.content.import_bundle(cupid.build_bundle(src))
    assert again.already_imported and project.store.count("instances") == 9


def test_schema_error_names_file_line_and_field_and_writes_nothing(project, rows, tmp_path):
    rows[4]["current_checklist"] = ["q?"] * 5
    src = _write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(InputError, match=r"bad\.jsonl:5: field current_checklist"):
        project.store.content.import_bundle(cupid.build_bundle(src))
    assert project.store.count("instances") == 0


def test_malformed_line_and_non_utf8(project, rows, tmp_path):
    src = _write_jsonl(tmp_path / "bad.jsonl", rows[:2])
    src.write_bytes(src.read_bytes() + b'{"persona_id": \n')
    with pytest.raises(InputError, match=r"bad\.jsonl:3: malformed JSON"):
        cupid.build_bundle(src)
    src.write_bytes(b'{"persona_id": "\xe9"}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:1: not valid UTF-8"):
        cupid.build_bundle(src)


def test_huge_file_is_refused_before_reading(project, rows, tmp_path, monkeypatch):
    src = _write_jsonl(tmp_path / "big.jsonl", rows)
    monkeypatch.setattr(reading, "MAX_FILE_BYTES", 100)
    with pytest.raises(InputError, match="over the 100-byte limit"):
        cupid.build_bundle(src)


def test_unsupported_extension_is_a_clear_error(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(InputError, match="unsupported file type '.csv'"):
        cupid.build_bundle(tmp_path / "x.csv")
