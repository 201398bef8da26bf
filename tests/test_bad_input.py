"""Every import path of the CLI against malformed input: one error line naming the file, a non-zero exit,
nothing written. The examples first, then a property test (hypothesis) that generates malformed records
for every path."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from declaredkind import NAME as DECLARED
from declaredkind import declare
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prefkit.cli import cli
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.project import Project
from prefkit.schemas.common import InputError
from prefkit.schemas.reading import loads, parse_timestamp

ROOT = Path(__file__).resolve().parent.parent
PACKET = json.loads((ROOT / "pipelines/examples/alpsbench/sess_demo000001.json").read_text(encoding="utf-8"))
MATCH = get_kind("preference_match")

# A valid record per import path; the malformed ones are derived from it.
VALID = {
    "cupid": {
        "persona_id": "persona_0",
        "instance_type": "consistent",
        "current_request": "Plan the offsite <script>alert(1)</script>",
        "current_context_factor": "Quarterly offsite",
        "current_contextual_preference": "Costs per person in euros.",
        "current_checklist": ["Are costs listed per person?"],
        "prior_interactions": [],
    },
    "alpsbench": PACKET,
    "labels": {
        "annotator": "ann1",
        "task_kind": "preference_match",
        "item_id": "pair:p0",
        "values": {"coverage": "fully"},
        "time_spent_s": 3.5,
        "timestamp": "2026-01-02T03:04:05Z",
    },
    "pairs": {
        "checklist_item": "Are costs per person?",
        "candidate": "Lists costs per head.",
        "pair_id": "q1",
        "meta": {},
    },
    "gold": {"kind": "preference_match", "item_ref": "pair:p1", "answer": {"coverage": "partially"}},
    "seeds": {"persona": "A nurse in Lyon who cycles to work and reads crime novels."},
    "items": {  # a declared kind's items (tests/declaredkind.py)
        "id": "i9",
        "history": [{"role": "user", "content": "<b>hi</b>"}],
        "preferences": ["short answers"],
        "response_a": "Hello",
    },
}
# A field of each record and a JSON value of the wrong type for it.
FIELDS = {
    "cupid": ["persona_id", "instance_type", "current_checklist", "prior_interactions"],
    "alpsbench": ["session_id", "dialogue", "task1"],
    "labels": ["annotator", "task_kind", "item_id", "values", "time_spent_s", "timestamp"],
    "pairs": ["checklist_item", "candidate", "pair_id", "meta"],
    "gold": ["kind", "item_ref", "answer"],
    "seeds": ["persona"],
    "items": ["id", "history", "preferences", "response_a"],
}
OPTIONAL = {"pair_id", "time_spent_s"}  # null is a valid value of these
WRONG = {
    str: [5, None, [], {}, True],
    list: [5, None, "x", {}],
    dict: [5, None, "x", []],
    float: ["x", -1, []],
}


def _command(path_kind: str, file: Path, project: Path) -> list[str]:
    p = ["--project", str(project)]
    return {
        "cupid": ["import", "cupid", str(file), *p],
        "alpsbench": ["import", "alpsbench", str(file), *p],
        "labels": ["labels", "import", str(file), *p],
        "pairs": ["tasks", "pairs", "import", str(file), *p],
        "gold": ["tasks", "gold", "import", str(file), *p],
        "seeds": ["generate", "-n", "1", "--seed-personas", str(file), "--seed-licence", "CC0", *p],
        "items": ["tasks", "import", "--kind", DECLARED, str(file), *p],
    }[path_kind]


def _file_name(path_kind: str) -> str:
    return "sess_bad.json" if path_kind == "alpsbench" else f"{path_kind}_in.jsonl"


def _snapshot(root: Path) -> dict[str, int]:
    """Rows per table, read straight from the database file."""
    with sqlite3.connect(root / "project.db") as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: db.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad") / "proj"
    project = Project.init(root, name="bad")
    declare(root)
    project.store.accounts.add_user("ann1", "annotator", "password-123")
    project.store.labels.add_tasks(
        [MATCH.make_task(f"pair:p{i}", {"i": i}, overlap=2, batch="b1") for i in range(2)]
    )
    project.close()
    return root


@pytest.fixture(scope="module")
def shared_project(template, tmp_path_factory):
    """One copy for the property test: every example must leave it unchanged anyway."""
    return Path(shutil.copytree(template, tmp_path_factory.mktemp("prop") / "proj"))


def _run_bad(project_root: Path, path_kind: str, content: bytes, tmp: Path) -> str:
    """Run the import of ``content``; assert the contract; return the error line."""
    tmp.mkdir(parents=True, exist_ok=True)
    file = tmp / _file_name(path_kind)
    file.write_bytes(content)
    before = _snapshot(project_root)
    result = CliRunner().invoke(cli, _command(path_kind, file, project_root))
    out = result.output.strip()
    assert result.exit_code != 0, f"{path_kind} accepted {content[:200]!r}: {out}"
    assert isinstance(result.exception, SystemExit), f"{path_kind}: {result.exception!r} on {content[:200]!r}"
    assert "Traceback" not in out
    assert len(out.splitlines()) == 1 and out.startswith("error: "), out
    assert str(file) in out, out
    assert _snapshot(project_root) == before
    return out


def _line(record) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode()


def _file(path_kind: str, bad_line: bytes) -> bytes:
    """A packet is one document; the other formats get a good first line, so the bad one is line 2."""
    if path_kind == "alpsbench":
        return bad_line
    return _line(VALID[path_kind]) + b"\n" + bad_line + b"\n"


# -- the reported cases, one by one ----------------------------------------------------------------------
DEEP = b"[" * 100_000


@pytest.mark.parametrize("path_kind", list(VALID))
def test_deep_nesting_is_one_error_line(template, tmp_path, path_kind):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    out = _run_bad(root, path_kind, _file(path_kind, DEEP), tmp_path / "in")
    assert "nested deeper than" in out or "malformed JSON" in out


@pytest.mark.parametrize("path_kind", ["labels", "pairs", "gold", "seeds", "cupid", "alpsbench"])
def test_non_utf8_names_file_and_line(template, tmp_path, path_kind):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    bad = _line(VALID[path_kind]).replace(b'"', b'"\xff', 1)
    out = _run_bad(root, path_kind, _file(path_kind, bad), tmp_path / "in")
    line = 1 if path_kind == "alpsbench" else 2
    assert f":{line}: not valid UTF-8" in out


@pytest.mark.parametrize("path_kind", ["labels", "pairs", "gold", "seeds", "cupid"])
def test_empty_file_is_an_error_for_every_import(template, tmp_path, path_kind):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    out = _run_bad(root, path_kind, b"\n  \n", tmp_path / "in")
    assert "no records" in out


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"ground_truth_memories": 5}, "task1.ground_truth_memories"),
        ({"llm_outputs": None}, "task1.llm_outputs"),
        ({"llm_outputs": []}, "task1.llm_outputs"),
    ],
)
def test_alpsbench_wrong_types_in_task1(template, tmp_path, change, field):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    packet = {**PACKET, "task1": {**PACKET["task1"], **change}}
    out = _run_bad(root, "alpsbench", _line(packet), tmp_path / "in")
    assert f"field {field}" in out


def test_pairs_duplicate_line_and_repeated_pair_id(template, tmp_path):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    line = _line(VALID["pairs"])
    out = _run_bad(root, "pairs", line + b"\n" + line + b"\n", tmp_path / "a")
    assert ":2: field pair_id: 'q1' repeats line 1" in out
    other = _line({**VALID["pairs"], "candidate": "something else"})
    out = _run_bad(root, "pairs", line + b"\n\n" + other + b"\n", tmp_path / "b")
    assert ":3: field pair_id: 'q1' repeats line 1" in out


def test_gold_for_the_same_task_twice(template, tmp_path):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    line = _line(VALID["gold"])
    out = _run_bad(root, "gold", line + b"\n" + line + b"\n", tmp_path / "in")
    assert ":2: field task_id:" in out and "repeats line 1" in out


@pytest.mark.parametrize("token", [b"Infinity", b"-Infinity", b"NaN", b"1e999"])
def test_labels_refuse_infinity_and_nan(template, tmp_path, token):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    bad = _line(VALID["labels"]).replace(b"3.5", token)
    out = _run_bad(root, "labels", _file("labels", bad), tmp_path / "in")
    assert "field time_spent_s" in out and "NaN/Infinity refused" in out


def test_labels_csv_refuse_infinite_time(template, tmp_path):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    csv = (
        b"annotator,task_kind,item_id,values,time_spent_s,timestamp\n"
        b'ann1,preference_match,pair:p0,"{""coverage"": ""fully""}",inf,2026-01-02T03:04:05Z\n'
    )
    file = tmp_path / "in.csv"
    file.write_bytes(csv)
    result = CliRunner().invoke(cli, ["labels", "import", str(file), "--project", str(root)])
    assert result.exit_code == 1 and f"{file}:2: time_spent_s:" in result.output


@pytest.mark.parametrize("stamp", ["2026-01-02", "2026-01-02T03:04:05", "2026-13-02T03:04:05Z"])
def test_labels_refuse_timestamps_without_time_or_offset(template, tmp_path, stamp):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    bad = _line({**VALID["labels"], "timestamp": stamp})
    out = _run_bad(root, "labels", _file("labels", bad), tmp_path / "in")
    assert ":2: timestamp:" in out


def test_timestamps_are_normalised_to_utc():
    assert parse_timestamp("2026-01-02T05:04:05+02:00", "f:1") == "2026-01-02T03:04:05.000000Z"
    assert parse_timestamp("2026-01-02T03:04:05.5Z", "f:1") == "2026-01-02T03:04:05.500000Z"


def test_duplicate_keys_and_nan_name_the_field():
    with pytest.raises(InputError, match=r"^f:1: field a: key appears twice"):
        loads('{"a": 1, "a": 2}', "f:1")
    with pytest.raises(InputError, match=r"^f:1: field x\.1\.y: NaN is not a JSON number"):
        loads('{"x": [0, {"y": NaN}]}', "f:1")


def test_the_good_file_of_each_path_is_accepted(template, tmp_path):
    """The base records are valid: the property test's failures come from its mutations alone."""
    root = Path(shutil.copytree(template, tmp_path / "p"))
    for path_kind in ("pairs", "gold", "labels", "cupid", "items"):
        file = tmp_path / _file_name(path_kind)
        file.write_bytes(_line(VALID[path_kind]) + b"\n")
        result = CliRunner().invoke(cli, _command(path_kind, file, root))
        assert result.exit_code == 0, (path_kind, result.output)
    (tmp_path / "packets").mkdir()
    (tmp_path / "packets" / "sess_ok.json").write_bytes(_line(VALID["alpsbench"]))
    result = CliRunner().invoke(cli, _command("alpsbench", tmp_path / "packets", root))
    assert result.exit_code == 0, result.output


# -- the property test -----------------------------------------------------------------------------------
def _wrong_type(path_kind: str):
    def build(args):
        field, value = args
        return _line({**VALID[path_kind], field: value})

    fields = st.sampled_from(FIELDS[path_kind])
    return fields.flatmap(
        lambda f: st.tuples(
            st.just(f),
            st.sampled_from(
                [w for w in WRONG[type(VALID[path_kind][f])] if f not in OPTIONAL or w is not None]
            ),
        )
    ).map(build)


def _malformed(path_kind: str):
    record = _line(VALID[path_kind])
    base = st.one_of(
        _wrong_type(path_kind),
        st.integers(1, len(record) - 1).map(lambda n: record[:n]),  # truncated
        st.integers(65, 5000).map(lambda d: record[:-1] + b', "deep": ' + b"[" * d + b"]" * d + b"}"),
        st.sampled_from([b"NaN", b"Infinity", b"-Infinity"]).map(
            lambda t: record[:-1] + b', "x": ' + t + b"}"
        ),
        st.binary(min_size=1, max_size=40).map(lambda b: b"\xff" + b),  # not UTF-8
        st.just(record[:-1] + b", " + record[1:]),  # every key twice
        st.sampled_from([b"[]", b"5", b"null", b'"text"' if path_kind != "seeds" else b"[1]"]),
    )
    if path_kind in ("alpsbench", "seeds"):
        return base  # a packet keeps unknown keys verbatim; a seed object may carry any others
    return st.one_of(base, st.text(max_size=5).map(lambda k: _line({**VALID[path_kind], f"unknown_{k}": 1})))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_property_malformed_records_never_traceback_or_write(shared_project, tmp_path_factory, data):
    """``_run_bad`` asserts it: exit 1, one line naming file and line, no traceback, nothing written."""
    path_kind = data.draw(st.sampled_from(list(VALID)), label="import")
    bad = data.draw(_malformed(path_kind), label="line")
    _run_bad(shared_project, path_kind, _file(path_kind, bad), tmp_path_factory.mktemp("case"))


def test_a_control_character_in_a_field_name_keeps_the_error_on_one_line(template, tmp_path):
    root = Path(shutil.copytree(template, tmp_path / "p"))
    bad = _line({**VALID["labels"], "unknown_\x1e": 1})
    out = _run_bad(root, "labels", _file("labels", bad), tmp_path / "in")
    assert "'unknown_\\x1e': unknown column" in out
