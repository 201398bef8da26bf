"""Issue 32: ids at import are strict and bounded like user names. A CUPID persona id or an AlpsBench
session id holding a control character, a bidi override or more than ``MAX_ID`` characters is refused
with one line naming the file and line (or packet), and nothing is written; a per-instance export that
is refused leaves nothing behind (no empty folder)."""

from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.exports import cupid as cupid_export
from prefkit.schemas.common import MAX_ID, InputError, check_id

ROOT = Path(__file__).resolve().parent.parent
PACKET = json.loads((ROOT / "pipelines/examples/alpsbench/sess_demo000001.json").read_text(encoding="utf-8"))
ROW = {
    "persona_id": "persona_0",
    "instance_type": "consistent",
    "current_request": "Plan the offsite.",
    "current_context_factor": "Quarterly offsite",
    "current_contextual_preference": "Costs per person in euros.",
    "current_checklist": ["Are costs listed per person?"],
    "prior_interactions": [],
}
#: (id, what the error says): one per refused kind of id.
BAD_IDS = [
    ("left\u202eright", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ("iso\u2066late", "U+2066 (LEFT-TO-RIGHT ISOLATE)"),
    ("bell\x07", "U+0007"),
    ("new\nline", "U+000A"),
    ("zero\u200bwidth", "U+200B (ZERO WIDTH SPACE)"),
    ("nb\u00a0sp", "U+00A0 (NO-BREAK SPACE)"),
    (" padded", "cannot start or end with a space"),
    ("x" * 5000, f"at most {MAX_ID} characters (this one has 5000)"),
    ("x" * (MAX_ID + 1), f"at most {MAX_ID} characters (this one has {MAX_ID + 1})"),
]
GOOD_IDS = ["persona_0", "p.2", "team a/7", "Zoë-Łódź", "人物_01", "x" * MAX_ID]


def rows_in(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}


@pytest.mark.parametrize("value", GOOD_IDS)
def test_ids_datasets_use_are_accepted(value):
    assert check_id(value) == value


@pytest.mark.parametrize("value, says", BAD_IDS)
def test_an_id_with_a_control_or_bidi_character_or_too_long_is_refused(value, says):
    with pytest.raises(ValueError) as caught:
        check_id(value, "a persona id")
    assert says in str(caught.value) and str(caught.value).startswith("a persona id")


@pytest.mark.parametrize("value, says", BAD_IDS)
def test_a_cupid_persona_id_that_is_not_a_strict_id_is_one_line_naming_file_and_line(
    project, tmp_path, value, says
):
    """``_refused_in_one_line`` asserts exit 1, the one line naming file, line and field, nothing written."""
    file = tmp_path / "cupid.jsonl"
    good = json.dumps(ROW)
    file.write_text(good + "\n" + json.dumps({**ROW, "persona_id": value}) + "\n", encoding="utf-8")
    _refused_in_one_line(project, ["import", "cupid", str(file)], f"error: {file}:2: field persona_id:", says)


@pytest.mark.parametrize("value, says", BAD_IDS)
def test_an_alpsbench_session_id_that_is_not_a_strict_id_is_one_line_naming_the_packet(
    project, tmp_path, value, says
):
    """``_refused_in_one_line`` asserts exit 1, the one line naming the packet and the field, nothing written."""
    folder = tmp_path / "packets"
    folder.mkdir()
    (folder / "sess_ok.json").write_text(json.dumps(PACKET), encoding="utf-8")
    bad = folder / "sess_bad.json"
    bad.write_text(json.dumps({**PACKET, "session_id": value}), encoding="utf-8")
    _refused_in_one_line(
        project, ["import", "alpsbench", str(folder)], f"error: {bad}: field session_id:", says
    )


def _refused_in_one_line(project, args, starts, says):
    """The import stops with one line that starts with ``starts`` and says ``says``; nothing is written."""
    before = rows_in(project.root / "project.db")
    result = CliRunner().invoke(cli, [*args, "-p", str(project.root)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(starts) and says in lines[0]
    assert "Traceback" not in result.output and rows_in(project.root / "project.db") == before


def test_the_longest_ids_import_and_export_under_short_file_names(project, tmp_path):
    file = tmp_path / "cupid.jsonl"
    file.write_text(json.dumps({**ROW, "persona_id": "ü" * MAX_ID}) + "\n", encoding="utf-8")
    assert CliRunner().invoke(cli, ["import", "cupid", str(file), "-p", str(project.root)]).exit_code == 0
    out = tmp_path / "instances"
    result = CliRunner().invoke(cli, ["export", "cupid", "--per-instance", str(out), "-p", str(project.root)])
    assert result.exit_code == 0, result.output
    (name,) = [f.name for f in out.iterdir()]
    assert len(name.encode()) <= 96 + len("+consistent.json") and name.isascii()


def test_a_per_instance_export_of_a_row_that_is_no_instance_writes_no_folder(project, tmp_path, monkeypatch):
    # A project imported before ids were checked may hold such a row.
    monkeypatch.setattr(
        cupid_export,
        "cupid_rows",
        lambda store, verified_only=False: [ROW, {**ROW, "persona_id": "a\u202eb"}],
    )
    out = tmp_path / "instances"
    result = CliRunner().invoke(cli, ["export", "cupid", "--per-instance", str(out), "-p", str(project.root)])
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: {out}: row 2 is not a CUPID instance: field persona_id: "
        "Value error, an id cannot hold U+202E (RIGHT-TO-LEFT OVERRIDE)"
    )
    assert not out.exists()


def test_a_per_instance_export_whose_write_fails_leaves_no_file_and_no_folder(tmp_path, monkeypatch):
    calls = []

    def refuse_the_second(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.EACCES, "Permission denied", str(path))
        real(path, data)

    real = cupid_export.atomic_write_bytes
    monkeypatch.setattr(cupid_export, "atomic_write_bytes", refuse_the_second)
    out = tmp_path / "instances"
    with pytest.raises(
        InputError, match="cannot write the instance files \\(Permission denied\\); nothing kept"
    ):
        cupid_export.write_instance_files(out, [ROW, {**ROW, "instance_type": "contrastive"}])
    assert len(calls) == 2 and not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()  # a folder the user made stays, empty
    calls.clear()
    with pytest.raises(InputError):
        cupid_export.write_instance_files(kept, [ROW, {**ROW, "instance_type": "contrastive"}])
    assert kept.is_dir() and list(kept.iterdir()) == []
