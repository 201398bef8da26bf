"""Reliability round 3 (issue 23): the newer commands' bad inputs, operator text in published files,
paths that lead out of the project, stages that make nothing. Each test names the defect it pins."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
import wildchat_fixture as fx
from click.testing import CliRunner
from evalkit import write_config, write_jsonl
from prefkit.cli import cli
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.project import Project

MATCH = get_kind("preference_match")


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def snapshot(root: Path) -> dict[str, int]:
    with sqlite3.connect(root / "project.db") as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: db.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}


def one_error_line(result) -> str:
    out = result.output.strip()
    assert result.exit_code != 0, out
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in out
    lines = [x for x in out.splitlines() if x.strip()]
    assert lines[-1].startswith(("error: ", "Error: ")), out
    return lines[-1]


@pytest.fixture
def root(project) -> Path:
    return project.root


def wildchat_file(tmp_path: Path, rows: list[dict], name: str = "w.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# -- 1. tracebacks instead of one clear line --------------------------------------------------------------
def test_two_users_sharing_a_conversation_hash_and_first_turn_id_get_two_dialogues(root, tmp_path):
    """Before: IntegrityError on dialogues.dialogue_id."""
    a = fx.conversation(1, "same", fx.T0, ip="ip_1")
    b = fx.conversation(1, "same", fx.T0 + timedelta(hours=1), ip="ip_2")
    path = wildchat_file(tmp_path, [a, b])
    result = run("ingest", "wildchat", str(path), "-p", str(root), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["dialogues_written"] == 2
    again = run("ingest", "wildchat", str(path), "-p", str(root), "--json")
    assert json.loads(again.output)["already_imported"]  # the ids are stable: a re-run is a no-op


@pytest.mark.parametrize("written", ["ALICE", "ａｌｉｃｅ", " Alice "])
def test_labels_import_names_the_canonical_account(project, tmp_path, written):
    """Before: the case/width-blind check passed, then a FOREIGN KEY error."""
    project.store.accounts.add_user("alice", "annotator", "password-123")
    project.store.labels.add_tasks([MATCH.make_task("pair:p0", {"i": 0}, overlap=2, batch="b1")])
    row = {
        "annotator": written,
        "task_kind": "preference_match",
        "item_id": "pair:p0",
        "values": {"coverage": "fully"},
        "timestamp": "2026-01-02T03:04:05Z",
    }
    path = write_jsonl(tmp_path / "labels.jsonl", [row])
    result = run("labels", "import", str(path), "-p", str(project.root))
    assert result.exit_code == 0, result.output
    assert [e.annotator for e in project.store.labels.events()] == ["alice"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-3", "1e999"])
def test_max_gap_hours_must_be_a_finite_positive_number(root, tmp_path, value):
    """Before: nan/inf were pasted into DuckDB SQL as a column name."""
    path = tmp_path / "w.jsonl"
    fx.write_fixture(path, bad=False)
    before = snapshot(root)
    line = one_error_line(run("ingest", "wildchat", str(path), "-p", str(root), "--max-gap-hours", value))
    assert "--max-gap-hours" in line and value in line
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("value", "why"), [("3,3", "given twice"), ("0,5", "is not >= 1"), ("3,,5", "empty")]
)
def test_distractors_are_distinct_positive_integers(root, value, why):
    """Before: --distractors 3,3 was an IntegrityError."""
    line = one_error_line(run("tasks", "build-alpsbench", "--distractors", value, "-p", str(root)))
    assert "--distractors" in line and why in line


def test_prefkit_tmpdir_pointing_nowhere_is_one_line(root, tmp_path, monkeypatch):
    """Before: FileNotFoundError traceback."""
    path = tmp_path / "w.jsonl"
    fx.write_fixture(path, bad=False)
    monkeypatch.setenv("PREFKIT_TMPDIR", str(tmp_path / "nowhere"))
    before = snapshot(root)
    line = one_error_line(run("ingest", "wildchat", str(path), "-p", str(root)))
    assert "PREFKIT_TMPDIR" in line and "does not exist" in line
    assert snapshot(root) == before


# -- 2. half-done work --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["-1", "0"])
def test_memories_extract_overlap_is_refused_before_any_write(root, tmp_path, value):
    """Before: --overlap -1 wrote 45 candidate memories and then failed; --overlap 0 was accepted."""
    path = tmp_path / "w.jsonl"
    fx.write_fixture(path, bad=False)
    assert run("ingest", "wildchat", str(path), "-p", str(root), "--no-progress").exit_code == 0
    before = snapshot(root)
    line = one_error_line(
        run("memories", "extract", "--backend", "offline", "--overlap", value, "-p", str(root))
    )
    assert "--overlap" in line
    assert snapshot(root) == before


@pytest.mark.parametrize(
    "command",
    [["memories", "extract", "--backend", "offline"], ["tasks", "build-alpsbench", "--backend", "offline"]],
)
@pytest.mark.parametrize("value", ["-1", "0"])
def test_limit_is_at_least_one(root, command, value):
    """Before: --limit -1 processed all but the last dialogue, --limit 0 meant no limit."""
    before = snapshot(root)
    line = one_error_line(run(*command, "--limit", value, "-p", str(root)))
    assert "--limit" in line and ">=1" in line.replace(" ", "")
    assert snapshot(root) == before


def alps_release(tmp_path: Path) -> Path:
    gold = {
        "memory_items": [
            {
                "memory_id": "m1",
                "type": "direct",
                "label": "Preferences/Food",
                "value": "Likes tea",
                "confidence": 0.9,
            }
        ]
    }
    rel = tmp_path / "rel"
    write_config(
        rel,
        "alpsbench_task1",
        "validation",
        [{"benchmark_id": "s1", "task": "task1", "input": {"dialogue": []}, "gold": gold}],
    )
    return rel


BAD_PREDICTIONS = {
    "a 5,000-digit confidence": b'{"benchmark_id": "s1", "memory_items": [{"memory_id": "m1", "type": "direct", '
    b'"label": "Preferences/Food", "value": "Likes tea", "confidence": ' + b"9" * 5000 + b"}]}",
    "confidence as text": {"confidence": "high"},
    "confidence 1e308": {"confidence": 1e308},
    "an unknown type": {"type": "guessed"},
    "value as an object": {"value": {"text": "Likes tea"}},
    "memory_items null": None,
}


def _prediction_line(change) -> bytes:
    if isinstance(change, bytes):
        return change
    item = {
        "memory_id": "m1",
        "type": "direct",
        "label": "Preferences/Food",
        "value": "Likes tea",
        "confidence": 0.9,
    }
    if change is None:
        return json.dumps({"benchmark_id": "s1", "memory_items": None}).encode()
    return json.dumps({"benchmark_id": "s1", "memory_items": [{**item, **change}]}).encode()


@pytest.mark.parametrize("case", list(BAD_PREDICTIONS))
def test_a_refused_predictions_file_leaves_no_running_run(root, tmp_path, case):
    """Before: confidence "high"/1e308, unknown type, object value, null memory_items were accepted; a
    5,000-digit number was a ValueError; a refused file left the run marked running."""
    rel = alps_release(tmp_path)
    preds = tmp_path / "preds.jsonl"
    preds.write_bytes(_prediction_line(BAD_PREDICTIONS[case]) + b"\n")
    line = one_error_line(
        run(
            *f"""eval alpsbench --release {rel} --task 1 --predictions {preds} --backend offline
            -p {root}""".split(),
        )
    )
    assert f"{preds}:1:" in line
    assert Project(root).store.eval.runs() == []


def eval_run(**fields):
    """An offline AlpsBench task 1 run record (``fields`` override its defaults)."""
    from prefkit.curation.store import EvalRun

    base = dict(
        run_id="r",
        benchmark="alpsbench",
        task="task1",
        backend="offline",
        offline=True,
        release_dir="r",
        release_version="1.0.0",
        release_digest="d",
        config_name="alpsbench",
        settings={},
        prompts={},
    )
    return EvalRun(**{**base, **fields})


def test_a_run_that_failed_says_so_in_its_report(project):
    run_ = eval_run(run_id="alpsbench-task1-x", model="m", judge_model=None, release_name="n")
    project.store.eval.run_start(run_)
    project.store.eval.run_failed(run_.run_id, "judge endpoint refused the key")
    line = one_error_line(run("eval", "report", run_.run_id, "-p", str(project.root)))
    assert "failed: judge endpoint refused the key" in line and "resume" not in line
    assert project.store.eval.run(run_.run_id).status == "failed"
    project.store.eval.run_start(run_)  # the same command again: running until it ends
    assert project.store.eval.run(run_.run_id).status == "running"


# -- 3. bad input accepted silently ---------------------------------------------------------------------------
WILDCHAT_BAD = {
    "content 123": lambda r: r["conversation"][0].update(content=123),
    "conversation_hash 12345": lambda r: r.update(conversation_hash=12345),
    "timestamp not a date": lambda r: r.update(timestamp="not a date"),
    "turn three": lambda r: r.update(turn="three"),
    "turn 1e30": lambda r: r.update(turn=1e30),
    "toxic yes": lambda r: r.update(toxic="yes"),
}


@pytest.mark.parametrize("case", list(WILDCHAT_BAD))
def test_wildchat_rows_of_the_wrong_type_are_bad_rows(root, tmp_path, case):
    """Before: accepted silently (a bad timestamp made the conversation unattributed)."""
    rows = [fx.conversation(k, f"u{k}", fx.T0 + timedelta(hours=k), ip="ip_u") for k in range(3)]
    WILDCHAT_BAD[case](rows[1])
    path = wildchat_file(tmp_path, rows)
    before = snapshot(root)
    line = one_error_line(run("ingest", "wildchat", str(path), "-p", str(root), "--no-progress"))
    assert f"{path}:2: field " in line
    assert snapshot(root) == before
    rejects = tmp_path / "rejects.jsonl"
    skip = run(
        "ingest", "wildchat", str(path), "-p", str(root), "--skip-bad", "--rejects", str(rejects), "--json"
    )
    assert skip.exit_code == 0, skip.output
    report = json.loads(skip.output)
    assert report["rejected"] == 1 and report["kept"] == 2
    assert [json.loads(x)["line"] for x in rejects.read_text().splitlines()] == [2]


def test_a_user_may_not_take_the_judge_account_name(root):
    """Before: `users add judge.gpt-4o-mini` made an account the evaluation's judge would share."""
    for name in ("judge.gpt-4o-mini", "JUDGE.x"):
        result = CliRunner().invoke(
            cli,
            ["users", "add", name, "--role", "annotator", "--password-stdin", "-p", str(root)],
            input="password-123\n",
        )
        assert "reserved for LLM judge accounts" in one_error_line(result)
    assert Project(root).store.accounts.users() == []


# -- 4. published files neutralise operator and data text --------------------------------------------------------
HOSTILE = '<script>alert(1)</script> ![x](https://evil.example/p.png) <img src="https://evil.example/i.png">'


def card_inputs(text: str):
    """A release card's metadata and provenance summary whose every free-text field is ``text``."""
    from prefkit.schemas.curation import ProvenanceSummary

    meta = {
        "name": text,
        "version": "1.0.0",
        "description": text,
        "licence": text,
        "hf_licence": "other",
        "task_categories": [],
        "size_categories": ["n<1K"],
        "annotations_creators": [],
        "source_datasets": [],
        "tags": [text],
        "motivation": text,
        "uses": text,
        "maintenance": text,
        "override_reason": text,
    }
    provenance = ProvenanceSummary(
        records=0,
        offline_records=0,
        offline_share=0.0,
        models=[text],
        sources=[],
        stages={},
        prompt_template_hashes=[],
        licences=[],
    )
    return meta, provenance


def test_card_croissant_and_report_carry_no_live_html_or_remote_images(tmp_path):
    from prefkit.exports.card import card
    from prefkit.exports.croissant import croissant
    from prefkit.pipelines.eval.report import render_markdown

    meta, provenance = card_inputs(HOSTILE)
    gates = [{"gate": "g", "passed": False, "value": None, "threshold": 1, "summary": HOSTILE}]
    text = card(meta, [], gates, [], provenance)
    doc = json.dumps(croissant(HOSTILE, HOSTILE, "1.0.0", HOSTILE, [], {}))
    run_ = eval_run(
        model=HOSTILE,
        judge_model=HOSTILE,
        release_name=HOSTILE,
        release_version="1",
        config_name=HOSTILE,
        settings={"x": HOSTILE},
    )
    report = render_markdown(
        {"run": run_, "protocol": "prefkit", "rows": [{"task": "task1", "group": HOSTILE}], "judge": None}
    )
    for published in (text, doc, report):
        assert "<script" not in published and "<img" not in published
        assert "![x](" not in published  # an image needs an unescaped ![...](...)
    assert "&lt;script&gt;" in text and "\\!" not in text  # the text is still there, shown as text


def test_card_yaml_croissant_and_report_drop_bidi_and_invisible_controls():
    from prefkit.exports.card import card
    from prefkit.exports.croissant import croissant

    tricky = "safe\u202eexe.txt\u2067 \u200bzero\ufeff \U000e0069tag \u061cmark"
    meta, provenance = card_inputs(tricky)
    text = card(meta, [], [], [], provenance)
    doc = json.dumps(croissant(tricky, tricky, "1.0.0", tricky, [], {}), ensure_ascii=False)
    for published in (text, doc):
        assert not any(c in published for c in "\u202e\u2067\u200b\ufeff\U000e0069\u061c")
    assert "safeexe.txt zero tag mark" in text  # the visible text is all still there
    assert "\u200d" in card({**meta, "description": "a\u200db"}, [], [], [], provenance)  # joiners stay


def test_label_csv_export_neutralises_formulas_and_round_trips(project, tmp_path):
    """Before: `=cmd|...` and `+HYPERLINK(...)` comments were written as live spreadsheet formulas."""
    from prefkit.curation.annotation.labels_io import export_labels, import_labels

    project.store.accounts.add_user("alice", "annotator", "password-123")
    project.store.labels.add_tasks(
        [MATCH.make_task(f"pair:p{i}", {"i": i}, overlap=2, batch="b") for i in range(5)]
    )
    comments = ["=cmd|' /C calc'!A0", '+HYPERLINK("http://x")', "-2+3", "@SUM(A1)", "'=already quoted"]
    rows = [
        {
            "annotator": "alice",
            "task_kind": "preference_match",
            "item_id": f"pair:p{i}",
            "values": {"coverage": "fully"},
            "timestamp": "2026-01-02T03:04:05Z",
            "comment": c,
        }
        for i, c in enumerate(comments)
    ]
    import_labels(project.store, write_jsonl(tmp_path / "in.jsonl", rows))
    out = io.StringIO()
    export_labels(project.store, out, fmt="csv")
    cells = [r["comment"] for r in csv.DictReader(io.StringIO(out.getvalue()))]
    assert sorted(cells) == sorted("'" + c for c in comments)
    other = Project.init(tmp_path / "other")
    other.store.accounts.add_user("alice", "annotator", "password-123")
    other.store.labels.add_tasks(
        [MATCH.make_task(f"pair:p{i}", {"i": i}, overlap=2, batch="b") for i in range(5)]
    )
    (tmp_path / "out.csv").write_text(out.getvalue(), encoding="utf-8")
    import_labels(other.store, tmp_path / "out.csv")
    assert sorted(e.comment for e in other.store.labels.events()) == sorted(comments)
    other.close()


# -- 5. paths ------------------------------------------------------------------------------------------------------
def test_a_release_is_not_written_through_a_symlink_out_of_the_project(root, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "releases").rmdir() if (root / "releases").is_dir() else None
    (root / "releases").symlink_to(outside)
    line = one_error_line(run("release", "cut", "--version", "1.0.0", "--override", "test", "-p", str(root)))
    assert "outside the project" in line
    assert list(outside.iterdir()) == []


def test_ingest_does_not_follow_a_symlink_out_of_its_directory(root, tmp_path):
    folder = tmp_path / "shards"
    folder.mkdir()
    fx.write_fixture(folder / "a.jsonl", bad=False)
    (folder / "b.jsonl").symlink_to("/etc/passwd")
    before = snapshot(root)
    line = one_error_line(run("ingest", "wildchat", str(folder), "-p", str(root), "--no-progress"))
    assert "b.jsonl: a symbolic link to /etc/passwd" in line and "--follow-symlinks" in line
    assert snapshot(root) == before
    followed = one_error_line(
        run("ingest", "wildchat", str(folder), "-p", str(root), "--follow-symlinks", "--no-progress")
    )
    assert "b.jsonl:1:" in followed  # read, and refused as what it is: not WildChat
    assert snapshot(root) == before


def test_alpsbench_import_does_not_follow_a_symlink_out_of_its_directory(root, tmp_path):
    from fixtures_alps import write_packets

    outside = write_packets(tmp_path / "outside", 2)
    folder = write_packets(tmp_path / "packets", 1)
    stray = next(outside.rglob("sess_*.json"))
    (folder / "chunks" / "chunk_0001" / "sess_linked.json").symlink_to(stray)
    before = snapshot(root)
    line = one_error_line(run("import", "alpsbench", str(folder), "-p", str(root)))
    assert f"sess_linked.json: a symbolic link to {stray.resolve()}" in line and "--follow-symlinks" in line
    assert snapshot(root) == before  # nothing imported, not even the packet inside
    ok = run("import", "alpsbench", str(folder), "-p", str(root), "--follow-symlinks")
    assert ok.exit_code == 0, ok.output
    assert snapshot(root) != before


# -- 6. a stage that makes nothing --------------------------------------------------------------------------------------
def test_a_stage_that_makes_nothing_exits_non_zero(root):
    result = run("generate", "instances", "--backend", "offline", "-p", str(root))
    assert result.exit_code == 1
    assert "nothing was generated at stage instances" in result.output


# -- 7. ingest beside live annotators ------------------------------------------------------------------------------
CRASH = """
import os, sys
import pyarrow as pa
from prefkit.curation.store import ProjectStore
from prefkit.curation.store import ImportBundle
from prefkit.schemas.curation import Provenance

store = ProjectStore(sys.argv[1])
bulk = store.content.bulk_dialogues("wildchat").__enter__()
bulk.add_packs([2], ['[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]'])
bulk.start_source(ImportBundle("wildchat", "crash.jsonl", "c" * 64, 1, Provenance(source="test")))
bulk.add_dialogues(pa.record_batch({"dialogue_id": ["wc_crashed"], "meta": ["{}"], "n_turns": [2]}))
os.kill(os.getpid(), 9)  # a crash between two batches: no exception handler runs
"""


def test_a_crashed_ingest_leaves_nothing_visible_and_the_next_one_cleans_it(project, tmp_path):
    import subprocess
    import sys

    script = tmp_path / "crash.py"
    script.write_text(CRASH, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(project.root / "project.db")], capture_output=True
    )
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    store = project.store
    raw = sqlite3.connect(project.root / "project.db")
    assert raw.execute("SELECT count(*) FROM dialogues").fetchone()[0] == 1  # staged, hidden:
    assert store.count("dialogues") == 0 and store.content.dialogue_ids() == []
    assert store.content.sources() == [] and store.status()["turns"] == 0
    path = tmp_path / "w.jsonl"
    fx.write_fixture(path, bad=False)
    from prefkit.pipelines.ingest.wildchat import ingest_wildchat

    report = ingest_wildchat(store, [path])
    assert raw.execute("SELECT count(*) FROM dialogues").fetchone()[0] == report.sequences
    assert raw.execute("SELECT count(*) FROM turn_packs").fetchone()[0] == report.kept
    assert raw.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
    assert raw.execute("SELECT count(*) FROM meta WHERE key LIKE 'staging:%'").fetchone()[0] == 0
    assert store.status()["turns"] == report.turns_written
    raw.close()


def test_a_second_bulk_import_is_refused_while_one_runs(project):
    from prefkit.curation.store import StoreError

    first = project.store.content.bulk_dialogues("wildchat")
    bulk = first.__enter__()
    bulk.add_packs([1], ['[{"role": "user", "content": "hi"}]'])
    with pytest.raises(StoreError, match="another bulk import is writing to this project"):
        project.store.content.bulk_dialogues("wildchat").__enter__()
    with pytest.raises(StoreError, match="ended without recording its source"):
        first.__exit__(None, None, None)  # publishing an incomplete import fails and removes it
    assert project.store.count("turn_packs") == 0 and project.store.get_meta("x") is None
    raw = sqlite3.connect(project.root / "project.db")
    assert raw.execute("SELECT count(*) FROM meta WHERE key LIKE 'staging:%'").fetchone()[0] == 0
    raw.close()


def test_labels_import_while_annotators_submit_keeps_every_label_once(project, tmp_path):
    """`prefkit labels import` (its own process) while two annotators submit through the app's
    workflow: every label of both is recorded exactly once."""
    import subprocess
    import sys
    import threading

    from prefkit.curation.annotation import workflow

    store = project.store
    for name in ("alice", "bob", "carol", "dave"):
        store.accounts.add_user(name, "annotator", "password-123")
    store.labels.add_tasks(
        [MATCH.make_task(f"pair:p{i}", {"i": i}, overlap=4, batch="b") for i in range(150)]
    )
    rows = [
        {
            "annotator": who,
            "task_kind": "preference_match",
            "item_id": f"pair:p{i}",
            "values": {"coverage": "partially"},
            "timestamp": "2026-01-02T03:04:05Z",
        }
        for i in range(150)
        for who in ("carol", "dave")
    ]
    path = write_jsonl(tmp_path / "labels.jsonl", rows)
    submitted: dict[str, list[str]] = {"alice": [], "bob": []}

    def annotate(user: str) -> None:
        while (item := workflow.current_item(project, user, "preference_match")) is not None:
            workflow.submit(project, user, item, {"coverage": "fully"})
            submitted[user].append(item.task.task_id)

    workers = [threading.Thread(target=annotate, args=(u,)) for u in submitted]
    for w in workers:
        w.start()
    imported = subprocess.run(
        [
            sys.executable,
            "-c",
            "from prefkit.cli import main; main()",
            "labels",
            "import",
            str(path),
            "-p",
            str(project.root),
        ],
        capture_output=True,
        text=True,
    )
    for w in workers:
        w.join()
    assert imported.returncode == 0, imported.stderr
    assert "300 new event(s)" in imported.stdout
    events = store.labels.events()
    assert len({e.event_id for e in events}) == len(events) == 300 + 2 * 150
    by_pair = {}
    for e in events:
        by_pair.setdefault((e.task_id, e.annotator), []).append(e)
    assert all(len(v) == 1 for v in by_pair.values()) and len(by_pair) == 600
    # Past 20 labels an annotator meets repeats (issue 49): her submits are her labels plus her
    # repeats, each item at most once in each.
    repeats = [r for r in store.repeats.events() if r.annotator == "alice"]
    assert len({r.task_id for r in repeats}) == len(repeats)
    labelled = [e.task_id for e in events if e.annotator == "alice"]
    assert sorted(submitted["alice"]) == sorted(labelled + [r.task_id for r in repeats])
    assert len(set(labelled)) == len(labelled) > 0
    assert {e.values["coverage"] for e in events if e.annotator in ("carol", "dave")} == {"partially"}


def test_the_reading_bar_counts_bytes_against_their_total(tmp_path):
    import duckdb
    from prefkit.pipelines.ingest.wildchat import _BytesRead
    from tqdm import tqdm

    sizes = [1000, 3000]
    with tqdm(total=sum(sizes), unit="B", file=io.StringIO()) as bar:
        read = _BytesRead(bar, sizes, show=True)
        read.at(0, duckdb.connect())  # no query running: no measure, the bar stays
        assert bar.n == 0 and bar.total == 4000
        read.file_done(0)
        assert bar.n == 1000
        read.file_done(1)
        assert bar.n == 4000
