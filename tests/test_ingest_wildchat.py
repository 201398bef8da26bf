"""`prefkit ingest wildchat`: filters with counts, user sequences, strict failure, --skip-bad."""

from __future__ import annotations

import gzip
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import wildchat_fixture as fx
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.pipelines.ingest.wildchat import LICENCE, WildChatFilters, ingest_wildchat
from prefkit.schemas.common import InputError


@pytest.fixture
def clean_file(tmp_path):
    path = tmp_path / "wildchat.jsonl"
    fx.write_fixture(path, bad=False)
    return path


@pytest.fixture
def bad_file(tmp_path):
    path = tmp_path / "wildchat_bad.jsonl"
    return path, fx.write_fixture(path, bad=True)


def test_every_filter_reports_what_it_removed(project, clean_file):
    report = ingest_wildchat(project.store, [clean_file])
    assert report.rows == fx.total_rows()
    assert report.removed == fx.REMOVED
    assert report.kept == fx.expected_kept()
    assert project.store.count("dialogues", origin="wildchat") == report.sequences


def test_conversations_are_grouped_into_user_sequences(project, clean_file):
    report = ingest_wildchat(project.store, [clean_file])
    # alice 5, bob 3, carol 2 + 3 (split by the long pause); dave alone; 180 unattributed.
    assert report.formed == {
        "user:hashed_ip+user_agent": 4,
        "single:below_min_sequence": 1,
        "single:unattributed": fx.UNATTRIBUTED,
    }
    seqs = {}
    for did in project.store.content.dialogue_ids(origin="wildchat"):
        meta = project.store.content.dialogue(did).meta
        if meta["sequence"]["formed_by"].startswith("user"):
            convs = meta["sequence"]["conversations"]
            seqs[convs[0]["conversation_hash"]] = [c["conversation_hash"] for c in convs]
    assert seqs["h_ip_alice_0"] == [f"h_ip_alice_{k}" for k in range(5)]
    assert seqs["h_ip_carol_0"] == ["h_ip_carol_0", "h_ip_carol_1"]
    assert seqs["h_ip_carol_2"] == ["h_ip_carol_2", "h_ip_carol_3", "h_ip_carol_4"]


def test_dialogues_carry_provenance_and_licence(project, clean_file):
    ingest_wildchat(project.store, [clean_file])
    did = next(
        d
        for d in project.store.content.dialogue_ids(origin="wildchat")
        if project.store.content.dialogue(d).meta["sequence"]["formed_by"].startswith("user")
    )
    d = project.store.content.dialogue(did)
    conv = d.meta["sequence"]["conversations"][1]
    assert conv["file"] == str(clean_file) and conv["row"] >= 1 and conv["conversation_hash"].startswith("h_")
    line = clean_file.read_text().splitlines()[conv["row"] - 1]
    assert json.loads(line)["conversation_hash"] == conv["conversation_hash"]
    assert d.meta["licence"] == LICENCE and "ODC-BY" in LICENCE
    # Turns of the second conversation follow the first's, marked with their conversation.
    assert d.turns[conv["first_turn"]].extra == {"conversation": 1}
    assert project.store.content.sources()[0].licence == LICENCE


def test_strict_stops_at_first_bad_line_and_writes_nothing(project, bad_file):
    path, bad_at = bad_file
    with pytest.raises(InputError) as exc:
        ingest_wildchat(project.store, [path])
    assert f"{path}:{bad_at['json']}:" in str(exc.value)
    assert project.store.count("dialogues") == 0 and project.store.count("sources") == 0


def test_strict_names_a_missing_field(project, tmp_path, clean_file):
    lines = clean_file.read_text().splitlines()
    row = json.loads(lines[4])
    del row["conversation_hash"]
    lines[4] = json.dumps(row)
    path = tmp_path / "missing.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"missing\.jsonl:5: field conversation_hash"):
        ingest_wildchat(project.store, [path])
    assert project.store.count("dialogues") == 0


def test_skip_bad_lists_rejects_and_imports_the_rest(project, bad_file, tmp_path):
    path, bad_at = bad_file
    rejects = tmp_path / "rejects.jsonl"
    report = ingest_wildchat(project.store, [path], skip_bad=True, rejects_path=rejects)
    assert report.rejected == fx.BAD_LINES
    listed = [json.loads(x) for x in rejects.read_text().splitlines()]
    assert sorted(r["line"] for r in listed) == sorted(bad_at.values())
    assert report.removed == fx.REMOVED and report.kept == fx.expected_kept()


def test_gzip_and_parquet_give_the_same_dialogues(tmp_path, clean_file):
    from prefkit.curation.project import Project

    gz = tmp_path / "w.jsonl.gz"
    with gzip.open(gz, "wb") as f:
        f.write(clean_file.read_bytes())
    rows = [json.loads(x) for x in clean_file.read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "w.parquet")
    ids = []
    for name, src in (("a", clean_file), ("b", gz), ("c", tmp_path / "w.parquet")):
        project = Project.init(tmp_path / name)
        ingest_wildchat(project.store, [src])
        ids.append(project.store.content.dialogue_ids())
        project.close()
    assert ids[0] == ids[1] == ids[2] and len(ids[0]) == 4 + 1 + fx.UNATTRIBUTED


def test_every_conversation_names_its_own_file_and_line_across_several_files(project, clean_file, tmp_path):
    """Rows are numbered by the scan as they stream, file by file: each kept conversation's
    provenance points at the line that holds it, in either file."""
    lines = clean_file.read_text().splitlines(keepends=True)
    half = len(lines) // 2
    first, second = tmp_path / "part-1.jsonl", tmp_path / "part-2.jsonl"
    first.write_text("".join(lines[:half]))
    second.write_text("\n" + "".join(lines[half:]))  # a blank line: rows and lines differ by one
    report = ingest_wildchat(project.store, [first, second])
    assert report.rows == fx.total_rows() and report.kept == fx.expected_kept()
    files = set()
    for did in project.store.content.dialogue_ids(origin="wildchat"):
        for conv in project.store.content.dialogue(did).meta["sequence"]["conversations"]:
            path = first if conv["file"] == str(first) else second
            row = json.loads(path.read_text().splitlines()[conv["row"] - 1 + (path is second)])
            assert row["conversation_hash"] == conv["conversation_hash"]
            files.add(path.name)
    assert files == {"part-1.jsonl", "part-2.jsonl"}


def test_filters_are_flags(project, clean_file):
    f = WildChatFilters(languages=(), drop_toxic=False, drop_duplicates=False, min_sequence=100)
    report = ingest_wildchat(project.store, [clean_file], f)
    assert report.removed["language"] == 0 and report.removed["toxic"] == 0
    assert report.removed["duplicate"] == 0
    assert report.kept == fx.expected_kept() + sum(fx.REMOVED[k] for k in ("language", "toxic", "duplicate"))
    assert "user:hashed_ip+user_agent" not in report.formed


def test_reingesting_the_same_bytes_is_a_no_op(project, clean_file):
    first = ingest_wildchat(project.store, [clean_file])
    again = ingest_wildchat(project.store, [clean_file])
    assert again.already_imported and again.source_id == first.source_id
    assert project.store.count("dialogues") == first.dialogues_written


def test_cli_reports_counts_and_fails_on_bad_lines(tmp_path, bad_file, clean_file):
    from prefkit.curation.project import Project

    Project.init(tmp_path / "p").close()
    runner = CliRunner()
    ok = runner.invoke(cli, ["ingest", "wildchat", str(clean_file), "-p", str(tmp_path / "p"), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["removed"]["moderation"] == fx.REMOVED["moderation"]
    path, bad_at = bad_file
    shutil.copy(path, tmp_path / "bad.jsonl")
    bad = runner.invoke(cli, ["ingest", "wildchat", str(tmp_path / "bad.jsonl"), "-p", str(tmp_path / "p")])
    assert bad.exit_code == 1
    assert f"bad.jsonl:{bad_at['json']}: malformed JSON" in bad.output


def test_an_empty_file_is_refused_like_every_import(project, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(InputError, match=r"empty\.jsonl: no records"):
        ingest_wildchat(project.store, [empty])
    assert project.store.count("sources") == 0


def test_turns_are_messages_by_default_or_exchanges(project, tmp_path, clean_file):
    """Messages by default (the fixture's kept conversations have 6 messages = 3 exchanges; 20 have 4
    messages, 10 have 250); ``exchanges`` counts user messages like WildChat's ``turn`` field."""
    report = ingest_wildchat(project.store, [clean_file])
    assert report.turn_unit == "messages" and report.removed["turns"] == 30
    from prefkit.curation.project import Project

    other = Project.init(tmp_path / "other", name="other")
    f = WildChatFilters(turn_unit="exchanges", min_turns=3, max_turns=124)
    report = ingest_wildchat(other.store, [clean_file], f)
    assert report.turn_unit == "exchanges" and report.removed["turns"] == 30
    assert report.kept == fx.expected_kept()
    other.close()
    third = Project.init(tmp_path / "third", name="third")
    f = WildChatFilters(turn_unit="exchanges", min_turns=3, max_turns=249)  # 250 messages = 125 exchanges
    assert ingest_wildchat(third.store, [clean_file], f).removed["turns"] == 20
    third.close()
    with pytest.raises(InputError, match="turn unit"):
        WildChatFilters(turn_unit="utterances").check()


@pytest.mark.shared_data
def test_alpsbench_counted_turns_as_messages(alps_packets):
    """AlpsBench kept dialogues of 6-249 turns: every released dialogue fits when a turn is a message,
    while many have fewer than 6 user messages, so the unit cannot have been exchanges."""
    messages, exchanges = [], []
    for path in sorted(alps_packets.glob("chunks/*/sess_*.json")):
        dialogue = json.loads(path.read_text(encoding="utf-8"))["dialogue"]
        messages.append(len(dialogue))
        exchanges.append(sum(1 for t in dialogue if t.get("role") == "user"))
    assert len(messages) == 400
    assert all(6 <= n <= 249 for n in messages)
    assert sum(n < 6 for n in exchanges) > 100


def test_cli_turn_unit_flag(tmp_path, clean_file):
    from prefkit.curation.project import Project

    Project.init(tmp_path / "p").close()
    args = ["ingest", "wildchat", str(clean_file), "-p", str(tmp_path / "p"), "--no-progress"]
    out = CliRunner().invoke(
        cli, [*args, "--turn-unit", "exchanges", "--min-turns", "3", "--max-turns", "124"]
    )
    assert out.exit_code == 0, out.output
    assert "(turns counted as exchanges)" in out.output
    assert f"kept {fx.expected_kept()} conversations" in out.output


def test_packed_turns_read_like_rows_and_unpack_on_first_rewrite(any_project, clean_file):
    """Ingested dialogues keep their turns in one packed row each (SQLite and PostgreSQL): reads give
    the same turns as turn rows would; the first rewrite moves them into rows and keeps the revision."""
    store = any_project.store
    report = ingest_wildchat(store, [clean_file])
    assert store.count("turns") == 0 and store.count("turn_packs") == report.kept
    assert store.status()["turns"] == report.turns_written == 6 * report.kept
    did = next(
        d
        for d in store.content.dialogue_ids(origin="wildchat")
        if len(store.content.dialogue(d).meta["sequence"]["conversations"]) == 5
    )
    before = store.content.dialogue(did)
    assert [t.index for t in before.turns] == list(range(30))
    assert [t.role for t in before.turns[:2]] == ["user", "assistant"]
    assert before.turns[6].extra == {"conversation": 1} and before.turns[0].extra == {"conversation": 0}
    store.accounts.add_user("rev", "annotator", "password1")
    store.content.revise_turn(did, 7, "A better answer.", author="rev", reason="typo")
    after = store.content.dialogue(did)
    assert after.turns[7].content == "A better answer." and after.needs_reverification
    assert [t for i, t in enumerate(after.turns) if i != 7] == [
        t for i, t in enumerate(before.turns) if i != 7
    ]
    assert store.content.revisions(did)[0].original == before.turns[7].content
    assert store.content.original_turns(did)[7].content == before.turns[7].content
    assert store.count("turns") == 30 and store.count("dialogue_packs") == report.kept - 5
    assert store.status()["turns"] == report.turns_written
    with pytest.raises(Exception, match="no turn 99"):
        store.content.revise_turn(did, 99, "x", author="rev")


def test_a_bulk_import_with_a_malformed_batch_or_an_unlinked_pack_writes_nothing(project):
    import pyarrow as pa
    from prefkit.curation.store import ImportBundle
    from prefkit.schemas.curation import Provenance

    header = ImportBundle("wildchat", "x.jsonl", "0" * 64, 1, Provenance(source="test"))
    bad = pa.record_batch({"dialogue_id": ["d1"], "meta_json": ["{}"]})
    store = project.store
    with pytest.raises(Exception, match="columns"), store.content.bulk_dialogues("wildchat") as bulk:
        bulk.add_packs([1], ['[{"role": "user", "content": "hi"}]'])
        bulk.start_source(header)
        bulk.add_dialogues(bad)
    with pytest.raises(Exception, match="linked 0"), store.content.bulk_dialogues("wildchat") as bulk:
        bulk.add_packs([1], ['[{"role": "user", "content": "hi"}]'])
        bulk.start_source(header)
    assert project.store.count("dialogues") == 0 and project.store.content.sources() == []
    assert project.store.count("turn_packs") == 0


def test_a_second_source_with_the_same_dialogues_is_refused_and_writes_nothing(project, clean_file):
    from prefkit.curation.store import StoreError

    first = ingest_wildchat(project.store, [clean_file])
    with pytest.raises(StoreError, match="already in the project from another source"):
        ingest_wildchat(project.store, [clean_file], WildChatFilters(max_gap_hours=1.0))
    assert len(project.store.content.sources()) == 1
    assert project.store.count("dialogues") == first.sequences
    assert project.store.status()["turns"] == first.turns_written


def test_turn_text_survives_the_json_round_trip(project, tmp_path):
    """Turn text with JSON, quotes, backslashes, control characters and non-ASCII comes back exactly,
    in a multi-conversation sequence (whose turns get their conversation number added)."""
    hostile = [
        'as JSON: {"role":"assistant","content":"x"}, {"extra":1}',
        'quote " backslash \\ end\\',
        "tab\tnewline\nnul-free \u00e9\u4e2d\U0001f600 \u2028",
        '{"role":',
    ]
    rows = []
    for k in range(2):
        row = fx.conversation(k, f"ip_h_{k}", fx.T0 + fx.timedelta(hours=k), ip="ip_h")
        for i, text in enumerate(hostile):
            row["conversation"][i]["content"] = text + f" #{k}{i}"
        rows.append(row)
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = ingest_wildchat(project.store, [path])
    assert report.sequences == 1 and report.turns_written == 12
    d = project.store.content.dialogue(project.store.content.dialogue_ids(origin="wildchat")[0])
    expected = [t["content"] for r in rows for t in r["conversation"]]
    assert [t.content for t in d.turns] == expected
    assert [t.extra for t in d.turns] == [{"conversation": 0}] * 6 + [{"conversation": 1}] * 6


def test_migration_15_moves_packed_turns_into_packs(tmp_path):
    """A store written before migration 15 (one ``packed_turns`` row per dialogue) reads the same
    turns after it, and its first rewrite still moves them into rows."""
    from prefkit.curation.store import ProjectStore
    from prefkit.curation.store.backend import make_engine
    from prefkit.curation.store.engine import apply_migrations
    from prefkit.curation.store.migrations import MIGRATIONS
    from sqlalchemy import text

    db = tmp_path / "old.db"
    turns = [{"role": "user", "content": "hi", "extra": {"conversation": 0}}]
    turns += [{"role": "assistant", "content": "hello", "extra": {"conversation": 1}}]
    engine = make_engine(db)
    with engine.begin() as conn:
        kept = MIGRATIONS[:]
        MIGRATIONS[:] = [m for m in kept if m[0] <= 14]
        try:
            apply_migrations(conn)
        finally:
            MIGRATIONS[:] = kept
        for did, packed in (("d_multi", turns), ("d_single", [{"role": "user", "content": "only"}])):
            conn.execute(
                text(
                    "INSERT INTO dialogues (dialogue_id, origin, needs_reverification, schema_version, "
                    "created_at) VALUES (:d, 'wildchat', 0, '1.0', '2024-01-01T00:00:00Z')"
                ),
                {"d": did},
            )
            conn.execute(
                text("INSERT INTO packed_turns VALUES (:d, :n, :j)"),
                {"d": did, "n": len(packed), "j": json.dumps(packed)},
            )
    engine.dispose()
    store = ProjectStore(db)
    assert store.count("turn_packs") == 2 and store.status()["turns"] == 3
    multi = store.content.dialogue("d_multi").turns
    assert [(t.content, t.extra) for t in multi] == [
        ("hi", {"conversation": 0}),
        ("hello", {"conversation": 1}),
    ]
    assert [t.content for t in store.content.dialogue("d_single").turns] == ["only"]
    store.accounts.add_user("rev", "annotator", "password1")
    store.content.revise_turn("d_multi", 1, "Hello!", author="rev")
    assert store.count("turns") == 2 and store.count("turn_packs") == 1
    assert [t.content for t in store.content.dialogue("d_multi").turns] == ["hi", "Hello!"]
    store.close()
