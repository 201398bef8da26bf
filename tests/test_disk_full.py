"""A disk that fills during `release cut` and `ingest wildchat`: one line, exit 1, nothing kept.

The full disk is real, not a patched write: the command runs in a child process whose file-size limit
(``RLIMIT_FSIZE``, what ``ulimit -f`` sets; no root needed) is below what it must write, with SIGXFSZ
ignored, so the kernel answers the write that crosses it with ``EFBIG`` — the same path through SQLite
(``SQLITE_FULL``: "database or disk is full"), DuckDB (an IOException) and Python (``OSError``) as
``ENOSPC`` on a full file system.
"""

from __future__ import annotations

import json
import resource
import signal
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import wildchat_fixture as fx
from prefkit.curation.project import Project

PREFKIT = [sys.executable, "-c", "from prefkit.cli import main; main()"]


def _limited(max_bytes: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return apply


def _run_limited(args: list[str], max_bytes: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*PREFKIT, *args], preexec_fn=_limited(max_bytes), capture_output=True, text=True, timeout=300
    )


def _counts(root: Path) -> dict[str, int]:
    with sqlite3.connect(root / "project.db") as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: db.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}


def _assert_one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: a write failed (disk full"), result.stderr[-2000:]
    return lines[0]


def test_a_full_disk_during_release_cut_is_one_line_and_leaves_no_release(tmp_path):
    root = tmp_path / "proj"
    Project.init(root).close()
    before = _counts(root)
    result = _run_limited(
        ["release", "cut", "--version", "1.0.0", "--override", "disk test", "-p", str(root)],
        max_bytes=200_000,
    )
    _assert_one_line(result)
    assert list((root / "releases").iterdir()) == []  # the staged release was removed
    assert _counts(root) == before
    ok = subprocess.run(
        [*PREFKIT, "release", "cut", "--version", "1.0.0", "--override", "disk test", "-p", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stderr  # with room again, the same command works


def test_a_full_disk_during_ingest_is_one_line_and_writes_nothing_visible(tmp_path):
    root = tmp_path / "proj"
    Project.init(root).close()
    rows = [fx.conversation(k, f"c{k}", fx.T0 + timedelta(minutes=k), ip=f"ip_{k % 50}") for k in range(3000)]
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    db_size = (root / "project.db").stat().st_size
    before = _counts(root)
    result = _run_limited(
        ["ingest", "wildchat", str(path), "-p", str(root), "--no-progress"], max_bytes=db_size + 300_000
    )
    _assert_one_line(result)
    project = Project(root)
    assert project.store.count("dialogues") == 0 and project.store.content.sources() == []
    project.close()
    ok = subprocess.run(
        [*PREFKIT, "ingest", "wildchat", str(path), "-p", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["kept"] == 3000
    assert _counts(root)["dialogues"] > before["dialogues"]
