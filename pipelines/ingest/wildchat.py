"""Ingest WildChat-1M conversations (JSONL, JSONL.gz, Parquet) into a project as user sequences.

One streaming DuckDB pass reads and judges every row in file order; each kept conversation's turns go
to the store as a pack while DuckDB reads on, staged and made visible by the import's last, one-row
transaction, and only narrow columns (spilled to Parquet) are grouped into sequences afterwards, under
a fixed DuckDB memory limit: memory stays bounded and Python never touches a turn. Filters, sequences,
strict mode and ``skip_bad`` are described in docs/alpsbench.md (*Ingestion*). This module never writes
SQL against the project store and never names its columns: typed batches go to
:meth:`Content.bulk_dialogues`, which maps them to rows.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from prefkit.curation.store import ImportBundle, StoreError
from prefkit.schemas.common import InputError, canonical_json, disk_full, validation_line
from prefkit.schemas.curation import Provenance
from prefkit.schemas.reading import loads, no_records, within
from prefkit.schemas.wildchat import WildChatConversation
from pydantic import ValidationError
from tqdm import tqdm

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

LICENCE = "ODC-BY 1.0 (WildChat-1M, allenai)"
#: Filter names in the order they are applied; a conversation is counted under the first it fails.
FILTERS = ("language", "turns", "user_chars", "toxic", "redacted", "moderation", "duplicate")
#: DuckDB's working-memory cap; past it, sorts and joins spill to a temporary directory.
TURN_UNITS = ("messages", "exchanges")
DUCKDB_MEMORY_LIMIT = "768MB"
BATCH_ROWS = 2_000
#: Input rows per batch of the scan: small batches leave DuckDB's scan threads idle (measured on the
#: 1,000,000-row bench file: 2,000 rows 5.3 s, 20,000 rows 4.1 s for the same scan).
SCAN_BATCH_ROWS = 20_000

#: JSON input: every field of the contract (schemas/wildchat.py) read as JSON, so its JSON type is
#: checked as the contract checks it in strict mode (``"content": 123`` is not text, ``"toxic": "yes"``
#: is not a boolean) instead of being cast; the values are then taken out typed.
_TURN_FIELDS = tuple(
    "content role language redacted toxic turn_identifier timestamp hashed_ip state country header".split()
)
_COLUMNS = {
    **dict.fromkeys("conversation_hash model timestamp".split(), "JSON"),
    "conversation": "STRUCT(" + ", ".join(f'"{f}" JSON' for f in _TURN_FIELDS) + ")[]",
    **dict.fromkeys(
        """turn language openai_moderation detoxify_moderation toxic redacted state country hashed_ip
        header""".split(),
        "JSON",
    ),
}
#: JSON types (DuckDB's ``json_type``) the contract accepts per field; ``NULL`` where it is optional.
_INT = ("UBIGINT", "BIGINT")
_TOP_TYPES = {
    "conversation_hash": ("VARCHAR",),
    "model": ("VARCHAR",),
    "timestamp": ("VARCHAR",),
    "turn": _INT,
    "language": ("VARCHAR",),
    "openai_moderation": ("ARRAY",),
    "detoxify_moderation": ("ARRAY",),
    "toxic": ("BOOLEAN",),
    "redacted": ("BOOLEAN",),
    "state": ("VARCHAR", "NULL"),
    "country": ("VARCHAR", "NULL"),
    "hashed_ip": ("VARCHAR", "NULL"),
    "header": ("OBJECT", "NULL"),
}
_TURN_TYPES = {
    "content": ("VARCHAR",),
    "role": ("VARCHAR",),
    "language": ("VARCHAR", "NULL"),
    "redacted": ("BOOLEAN", "NULL"),
    "toxic": ("BOOLEAN", "NULL"),
    "turn_identifier": (*_INT, "NULL"),
    "hashed_ip": ("VARCHAR", "NULL"),
    "state": ("VARCHAR", "NULL"),
    "country": ("VARCHAR", "NULL"),
    "header": ("OBJECT", "NULL"),
}


def _json_ok(expr: str, types: tuple[str, ...]) -> str:
    """SQL: ``expr`` (a JSON value, SQL NULL when the key is absent) has one of ``types``."""
    listed = ", ".join(_sql_str(t) for t in types)
    nullable = "NULL" in types
    return f"(CASE WHEN {expr} IS NULL THEN {str(nullable).lower()} ELSE json_type({expr}) IN ({listed}) END)"


def _raw_sql(path: Path) -> str:
    """The rows of a file as the scan reads them: typed columns and ``typed_ok``, whether every field
    has the contract's type. Parquet columns are typed by the file; JSON values are checked."""
    if _kind(path) == "parquet":
        return f"""SELECT true AS typed_ok, conversation_hash, CAST("timestamp" AS VARCHAR) AS ts_text,
                 "language" AS lang, toxic, redacted, hashed_ip, header."user-agent" AS user_agent,
                 conversation AS turns,
                 coalesce(list_bool_or(list_transform(openai_moderation,
                                                      lambda m: coalesce(m.flagged, false))), false) AS flagged
          FROM {_relation(path)}"""
    top = " AND ".join(_json_ok(f'"{k}"', v) for k, v in _TOP_TYPES.items())
    turn = " AND ".join(_json_ok(f't."{k}"', v) for k, v in _TURN_TYPES.items())
    return f"""SELECT
            ({top} AND try_cast("timestamp"->>'$' AS TIMESTAMPTZ) IS NOT NULL
             AND json_type(turn) = 'UBIGINT'
             AND coalesce(list_bool_and(list_transform(conversation, lambda t: {turn})), false)) AS typed_ok,
            conversation_hash->>'$' AS conversation_hash, "timestamp"->>'$' AS ts_text, "language"->>'$' AS lang,
            try_cast(toxic AS BOOLEAN) AS toxic, try_cast(redacted AS BOOLEAN) AS redacted,
            hashed_ip->>'$' AS hashed_ip, json_extract_string(header, '$."user-agent"') AS user_agent,
            list_transform(conversation, lambda t: {{'content': t.content->>'$', 'role': t.role->>'$',
                'turn_identifier': try_cast(t.turn_identifier AS BIGINT)}}) AS turns,
            coalesce(list_bool_or(list_transform(try_cast(openai_moderation AS JSON[]),
                lambda m: coalesce(try_cast(m->'$.flagged' AS BOOLEAN), false))), false) AS flagged
          FROM {_relation(path)}"""


@dataclass(frozen=True)
class WildChatFilters:
    """What ``prefkit ingest wildchat`` keeps. Defaults follow AlpsBench where it says, else are cautious."""

    languages: tuple[str, ...] = ("English",)  # empty tuple: any language
    min_turns: int = 6  # turns per conversation, counted in ``turn_unit``
    max_turns: int = 249
    #: What a turn is. ``messages`` (user + assistant utterances) is AlpsBench's unit: its released
    #: dialogues have 8-142 messages but as few as 3 user messages, which a 6-249 filter on exchanges
    #: would have removed. ``exchanges`` counts user messages, as WildChat's own ``turn`` field does.
    turn_unit: str = "messages"
    min_user_chars: int = 2  # every user message must have at least this many non-blank characters
    drop_toxic: bool = True
    drop_redacted: bool = True
    drop_flagged: bool = True  # any OpenAI-moderation-flagged turn
    drop_duplicates: bool = True  # same conversation_hash from the same hashed_ip: keep the first
    max_gap_hours: float = 72.0
    min_sequence: int = 2

    def check(self) -> None:
        if self.turn_unit not in TURN_UNITS:
            raise InputError(f"turn unit {self.turn_unit!r}: use one of {', '.join(TURN_UNITS)}")
        if not 1 <= self.min_turns <= self.max_turns:
            raise InputError(f"turn range {self.min_turns}..{self.max_turns} is empty")
        if not isinstance(self.max_gap_hours, int | float) or not math.isfinite(self.max_gap_hours):
            raise InputError(f"--max-gap-hours must be a finite number of hours, not {self.max_gap_hours!r}")
        if self.min_user_chars < 0 or self.max_gap_hours <= 0 or self.min_sequence < 1:
            raise InputError("--min-user-chars must be >= 0, --max-gap-hours > 0, --min-sequence >= 1")


@dataclass
class IngestReport:
    """What a run read, removed, rejected and wrote."""

    files: list[str]
    turn_unit: str = "messages"  # what the turns filter counted
    rows: int = 0
    rejected: int = 0
    removed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FILTERS, 0))
    kept: int = 0
    sequences: int = 0
    formed: dict[str, int] = field(default_factory=dict)  # how many sequences of each formation
    dialogues_written: int = 0
    turns_written: int = 0
    source_id: str | None = None
    already_imported: bool = False
    rejects_file: str | None = None
    #: Wall seconds per phase: ``scan`` (read, check, filter), ``group`` (duplicates, sequences, ids),
    #: ``hash_wait`` (waiting for the input's sha256 after the scan), ``write`` (meta and turns as JSON,
    #: into the store, commit).
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- input files --------------------------------------------------------------------------------------
def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz", ".ndjson", ".ndjson.gz")):
        return "jsonl"
    raise InputError(f"{path}: unsupported file type; use .jsonl, .jsonl.gz or .parquet")


def expand_paths(paths: list[Path], follow_symlinks: bool = False) -> list[Path]:
    """Files given, with directories expanded to their WildChat shards (sorted). A symbolic link in a
    directory that leads out of it is refused unless ``follow_symlinks`` (a file named on the command
    line is read wherever it is: the operator chose it)."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(
                f
                for f in p.rglob("*")
                if f.is_file() and f.name.lower().endswith((".jsonl", ".jsonl.gz", ".parquet"))
            )
            within(p, found, follow_symlinks)
            if not found:
                raise InputError(f"{p}: no .jsonl, .jsonl.gz or .parquet files in this directory")
            out.extend(found)
        elif p.is_file():
            _kind(p)
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or directory")
    if not out:
        raise InputError("no input files given")
    return out


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _relation(path: Path) -> str:
    """The file's rows in file order. No row number here: DuckDB would number rows with a window
    over the whole input; the scan counts them instead, as the ordered batches stream past."""
    if _kind(path) == "parquet":
        return f"read_parquet({_sql_str(str(path))})"
    cols = "{" + ", ".join(f"{_sql_str(k)}: {_sql_str(v)}" for k, v in _COLUMNS.items()) + "}"
    return (
        f"read_json({_sql_str(str(path))}, format='newline_delimited', columns={cols}, "
        "ignore_errors=true, maximum_object_size=67108864)"
    )


def bad_records(path: Path, limit: int | None = None) -> Iterator[tuple[int, int, str, str]]:
    """``(line, record, message, raw)`` for each line of a JSONL file that is not a WildChat record.

    ``record`` is the 1-based number among non-blank lines (DuckDB's row numbering). Only runs when the
    DuckDB pass found bad rows, so its Python speed does not matter for clean input.
    """
    found = 0
    record = 0
    with gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            record += 1
            text = raw.decode("utf-8", errors="replace").rstrip("\n")
            where = f"{path}:{lineno}"
            try:
                value = loads(raw.decode("utf-8"), where)  # the shared reader's rules and messages
            except UnicodeDecodeError as exc:
                yield lineno, record, f"not valid UTF-8 (byte {raw[exc.start : exc.start + 1]!r})", text
                found += 1
            except InputError as exc:
                yield lineno, record, str(exc).removeprefix(where + ": "), text
                found += 1
            else:
                problem = _record_problem(value)
                if problem is None:
                    continue
                yield lineno, record, problem, text
                found += 1
            if limit is not None and found >= limit:
                return


def _record_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"expected a JSON object, got {type(value).__name__}"
    try:
        WildChatConversation.model_validate(value, strict=True)
    except ValidationError as exc:
        return f"field {validation_line(exc)}"
    return None


# -- the DuckDB plan ----------------------------------------------------------------------------------
def _connect(work_dir: Path):
    con = duckdb.connect(config={"memory_limit": DUCKDB_MEMORY_LIMIT, "temp_directory": str(work_dir)})
    con.execute("SET preserve_insertion_order = true")  # the scan numbers rows by their order
    con.execute("SET enable_progress_bar = false")  # DuckDB draws on stdout; the run has its own bars
    return con


#: The narrow columns of a kept conversation the scan hands to grouping (spilled to Parquet).
KEPT_COLUMNS = (
    ("file_no", "int32"),
    ("row_no", "int64"),
    ("pack_id", "int64"),
    ("conversation_hash", "string"),
    ("ts_text", "string"),
    ("lang", "string"),
    ("hashed_ip", "string"),
    ("user_agent", "string"),
    ("n_turns", "int64"),
    ("conversation_id", "string"),
)


def _scan_sql(path: Path, f: WildChatFilters) -> str:
    """One streaming pass over a file, one row per input row in file order: ``bad`` (not a WildChat
    record), ``dropped_by`` (the first filter the row fails) and, only for rows that pass, the narrow
    columns grouping needs and the turns (role, content) as JSON text. No blocking operator: DuckDB
    reads and judges while the store writes the kept turns."""
    langs = ", ".join(_sql_str(x) for x in f.languages)
    lang_ok = f"lang IN ({langs})" if f.languages else "true"
    n_turns = (
        "len(turns)" if f.turn_unit == "messages" else "len(list_filter(turns, lambda t: t.role = 'user'))"
    )
    kept_cols = {
        "conversation_hash": "conversation_hash",
        "ts_text": "ts_text",
        "lang": "lang",
        "hashed_ip": "hashed_ip",
        "user_agent": "user_agent",
        "n_turns": "len(turns)",
        "conversation_id": "conversation_hash || '_' || coalesce(CAST(turns[1].turn_identifier AS VARCHAR), "
        "left(sha256(turns[1].content), 8))",
        "turns": "CAST(to_json(list_transform(turns, lambda t: {'role': t.role, 'content': t.content})) AS VARCHAR)",
    }
    kept_only = ", ".join(
        f"CASE WHEN NOT bad AND dropped_by IS NULL THEN {expr} END AS {name}"
        for name, expr in kept_cols.items()
    )
    return f"""
        WITH raw AS ({_raw_sql(path)}),
        judged AS (
          SELECT *,
            (NOT coalesce(typed_ok, false) OR conversation_hash IS NULL OR turns IS NULL OR len(turns) = 0 OR lang IS NULL OR ts_text IS NULL
             OR toxic IS NULL OR redacted IS NULL
             OR coalesce(list_bool_or(list_transform(turns, lambda t: t.role IS NULL OR t.content IS NULL
                 OR t.role NOT IN ('user', 'assistant'))), true)) AS bad
          FROM raw),
        verdict AS (
          SELECT *, CASE
              WHEN bad THEN NULL
              WHEN NOT ({lang_ok}) THEN 'language'
              WHEN {n_turns} NOT BETWEEN {f.min_turns} AND {f.max_turns} THEN 'turns'
              WHEN coalesce(list_min(list_transform(list_filter(turns, lambda t: t.role = 'user'),
                     lambda t: length(trim(t.content)))), 0) < {f.min_user_chars} THEN 'user_chars'
              WHEN {str(f.drop_toxic).lower()} AND toxic THEN 'toxic'
              WHEN {str(f.drop_redacted).lower()} AND redacted THEN 'redacted'
              WHEN {str(f.drop_flagged).lower()} AND flagged THEN 'moderation'
              ELSE NULL END AS dropped_by
          FROM judged)
        SELECT bad, dropped_by, {kept_only} FROM verdict"""


@dataclass
class _Scan:
    """What the scan found besides the kept rows: rows per file, bad rows, removals per filter."""

    rows: dict[int, int] = field(default_factory=dict)
    bad: list[tuple[int, int]] = field(default_factory=list)
    removed: dict[str, int] = field(default_factory=dict)


def _scan(con, files: list[Path], f: WildChatFilters, bulk, kept_path: Path, skip_bad: bool, bar) -> _Scan:
    """Read every file once, in order: count and judge each row, store each kept conversation's turns
    as a pack (``bulk.add_packs``, staged, one short transaction per batch) and spill its narrow columns with its
    file, row and pack id to ``kept_path`` for grouping. In strict mode the first bad row stops the
    run (the staged rows are then removed; none was ever visible)."""

    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in KEPT_COLUMNS])
    found = _Scan()
    narrow = [name for name, _ in KEPT_COLUMNS[3:]]
    with pq.ParquetWriter(kept_path, schema, compression="none") as writer:
        for file_no, path in enumerate(files):
            seen = 0
            batches = _prefetched(con.sql(_scan_sql(path, f)).to_arrow_reader(SCAN_BATCH_ROWS))
            try:
                for batch in batches:
                    n = batch.num_rows
                    bad = batch.column("bad")
                    if pc.any(bad).as_py():
                        rows = [seen + 1 + int(i) for i in pc.indices_nonzero(bad).to_pylist()]
                        if not skip_bad:
                            raise _first_bad(path, rows[0])
                        found.bad.extend((file_no, r) for r in rows)
                    for item in pc.value_counts(batch.column("dropped_by")).to_pylist():
                        if item["values"] is not None:
                            found.removed[item["values"]] = (
                                found.removed.get(item["values"], 0) + item["counts"]
                            )
                    keep = pc.is_valid(batch.column("turns"))
                    kept = batch.filter(keep)
                    if kept.num_rows:
                        packs = bulk.add_packs(
                            kept.column("n_turns").to_pylist(), kept.column("turns").to_pylist()
                        )
                        row_no = pc.add(pc.indices_nonzero(keep), seen + 1)
                        cols = [
                            pa.array([file_no] * kept.num_rows, pa.int32()),
                            row_no.cast(pa.int64()),
                            pa.array(packs, pa.int64()),
                            *(kept.column(name) for name in narrow),
                        ]
                        writer.write_batch(pa.record_batch(cols, schema=schema))
                    seen += n
                    bar.at(file_no, con)
            finally:
                batches.close()  # stops DuckDB's producer thread before the connection is used again
            if not seen:
                raise no_records(path)
            found.rows[file_no] = seen
            bar.file_done(file_no)
    return found


def _keep(con, f: WildChatFilters, kept_path: Path) -> None:
    """``kept``: the narrow columns of every row that passed the filters, with ``dup`` marking a repeat
    of the same conversation from the same IP (the first is kept)."""
    dup = (
        "row_number() OVER (PARTITION BY conversation_hash, coalesce(hashed_ip, '') ORDER BY file_no, row_no) > 1"
        if f.drop_duplicates
        else "false"
    )
    con.execute(
        f"""CREATE TEMP TABLE kept AS
        SELECT file_no, row_no, pack_id, conversation_hash, ts_text, try_cast(ts_text AS TIMESTAMPTZ) AS ts,
               lang, hashed_ip, user_agent, n_turns, conversation_id, {dup} AS dup
        FROM read_parquet({_sql_str(str(kept_path))})"""
    )


def _group(con, f: WildChatFilters) -> None:
    """Assign every kept conversation to a sequence (``seq_key``, ``seq_pos``) and say how it was formed."""
    gap_s = repr(float(f.max_gap_hours) * 3600)  # finite (checked): a number literal, never a name
    con.execute(
        f"""CREATE TEMP TABLE runs AS
        WITH k AS (
          SELECT c.file_no, c.row_no, c.ts,
                 CASE WHEN c.hashed_ip IS NOT NULL AND c.user_agent IS NOT NULL AND c.ts IS NOT NULL
                      THEN c.hashed_ip || chr(31) || c.user_agent END AS user_key
          FROM kept c WHERE NOT c.dup),
        stepped AS (
          SELECT *, CASE WHEN user_key IS NULL THEN 1
                    WHEN lag(ts) OVER w IS NULL OR epoch(ts) - epoch(lag(ts) OVER w) > {gap_s} THEN 1
                    ELSE 0 END AS starts
          FROM k WINDOW w AS (PARTITION BY user_key ORDER BY ts, file_no, row_no)),
        numbered AS (
          SELECT *, sum(starts) OVER (PARTITION BY user_key ORDER BY ts, file_no, row_no
                                      ROWS UNBOUNDED PRECEDING) AS run_no FROM stepped)
        SELECT *, count(*) OVER (PARTITION BY user_key, run_no) AS run_size,
               row_number() OVER (PARTITION BY user_key, run_no ORDER BY ts, file_no, row_no) AS run_pos
        FROM numbered"""
    )
    con.execute(
        f"""CREATE TEMP TABLE seqs AS SELECT file_no, row_no,
            CASE WHEN user_key IS NOT NULL AND run_size >= {f.min_sequence}
                 THEN user_key || chr(30) || run_no ELSE 'single' || chr(30) || file_no || ':' || row_no END AS seq_key,
            CASE WHEN user_key IS NOT NULL AND run_size >= {f.min_sequence} THEN run_pos ELSE 1 END AS seq_pos,
            CASE WHEN user_key IS NULL THEN 'single:unattributed'
                 WHEN run_size >= {f.min_sequence} THEN 'user:hashed_ip+user_agent'
                 ELSE 'single:below_min_sequence' END AS formed_by
        FROM runs"""
    )


# -- dialogues for the store --------------------------------------------------------------------------
def _members(con, files: list[Path], f: WildChatFilters) -> None:
    """``members``: one row per kept conversation with its sequence's dialogue id, its position and its
    first turn's index in the dialogue. A dialogue id is ``wc_`` + sha256 of the sequence's conversation
    ids (hash + first turn id) — the same sequence gives the same id in every re-ingest."""
    names = ", ".join(f"({i}, {_sql_str(p.name)})" for i, p in enumerate(files))
    suffix = "'@' || n.name || ':' || first_row" if not f.drop_duplicates else "''"
    con.execute(
        f"""CREATE TEMP TABLE members AS
        WITH m AS (
          SELECT s.seq_key, s.seq_pos, s.formed_by, k.file_no, k.row_no, k.pack_id, k.conversation_hash,
                 k.ts_text, k.lang, k.n_turns, k.conversation_id
          FROM seqs s JOIN kept k USING (file_no, row_no)),
        w AS (
          SELECT *,
            coalesce(sum(n_turns) OVER (PARTITION BY seq_key ORDER BY seq_pos
                                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS first_turn,
            count(*) OVER (PARTITION BY seq_key) AS n_convs,
            first_value(file_no) OVER (PARTITION BY seq_key ORDER BY seq_pos) AS first_file,
            first_value(row_no) OVER (PARTITION BY seq_key ORDER BY seq_pos) AS first_row,
            string_agg(conversation_id, chr(10)) OVER (PARTITION BY seq_key ORDER BY seq_pos
                ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS id_list
          FROM m)
        , based AS (
          SELECT w.*, n.name AS first_name, id_list || {suffix} AS id_key
          FROM w JOIN (VALUES {names}) n(file_no, name) ON n.file_no = w.first_file),
        ranked AS (  -- two users' sequences with the same conversation ids (WildChat reuses a hash and
                     -- a first turn id across IPs): the later one's id also hashes where it starts
          SELECT *, dense_rank() OVER (PARTITION BY id_key ORDER BY first_file, first_row) AS clash FROM based)
        SELECT * EXCLUDE (first_name, id_key, clash),
               'wc_' || left(sha256(id_key || CASE WHEN clash > 1 THEN '@' || first_name || ':' || first_row
                                                   ELSE '' END), 16) AS dialogue_id
        FROM ranked"""
    )


def _dialogue_batches(con, files: list[str], f: WildChatFilters):
    """The dialogues as typed batches for :meth:`BulkDialogues.add_dialogues` (columns ``dialogue_id,
    meta, n_turns``), made entirely by DuckDB from the narrow columns: the meta (licence, language,
    how the sequence was formed and, per conversation, file, row, hash, id, timestamp and first turn)
    as JSON text. A one-conversation dialogue comes straight from its row; only sequences are
    grouped."""
    paths = ", ".join(f"({i}, {_sql_str(p)})" for i, p in enumerate(files))

    def meta(lang: str, formed_by: str, seq_key: str, conversations: str) -> str:
        return f"""CAST(to_json({{
            'licence': {_sql_str(LICENCE)},
            'language': {lang},
            'sequence': {{
              'formed_by': {formed_by},
              'max_gap_hours': CAST({float(f.max_gap_hours)!r} AS DOUBLE),
              'min_sequence': {int(f.min_sequence)},
              'user': CASE WHEN {formed_by} LIKE 'user%' THEN left(sha256({seq_key}), 16) END,
              'conversations': {conversations}}}}}) AS VARCHAR)"""

    conv = """{'file': m.path, 'row': m.row_no, 'conversation_hash': m.conversation_hash,
               'conversation_id': m.conversation_id, 'timestamp': m.ts_text, 'first_turn': m.first_turn,
               'turns': m.n_turns}"""
    query = f"""
    WITH m AS (SELECT * FROM members JOIN (VALUES {paths}) p(file_no, path) USING (file_no))
    SELECT * FROM (
      SELECT m.dialogue_id, {meta("m.lang", "m.formed_by", "m.seq_key", f"[{conv}]")} AS meta,
             CAST(m.n_turns AS BIGINT) AS n_turns
      FROM m WHERE m.n_convs = 1
      UNION ALL
      SELECT m.dialogue_id,
             {
        meta(
            "arg_min(m.lang, m.seq_pos)",
            "any_value(m.formed_by)",
            "any_value(m.seq_key)",
            f"list({conv} ORDER BY m.seq_pos)",
        )
    } AS meta,
             CAST(sum(m.n_turns) AS BIGINT) AS n_turns
      FROM m WHERE m.n_convs > 1 GROUP BY m.dialogue_id)
    ORDER BY dialogue_id  -- the store's index on dialogue ids then grows at its end"""
    return _prefetched(con.sql(query).to_arrow_reader(BATCH_ROWS))


def _link_batches(con):
    """Each kept conversation's pack with its dialogue and place in it (``dialogue_id, part,
    pack_id``), in pack order: the order the turns were written, so the store reads each once."""
    query = (
        """SELECT dialogue_id, CAST(seq_pos - 1 AS BIGINT) AS part, pack_id FROM members ORDER BY pack_id"""
    )
    return _prefetched(con.sql(query).to_arrow_reader(BATCH_ROWS))


def _prefetched(reader, depth: int = 4) -> Generator[Any, None, None]:
    """The reader's batches, produced by DuckDB in a thread up to ``depth`` batches ahead, so DuckDB
    builds the next batches while the store writes this one (both release the GIL while they work)."""
    done = object()
    ahead: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                ahead.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for batch in reader:
                if not put(batch):
                    return
            put(done)
        except BaseException as exc:  # handed to the consumer, raised there
            put(exc)

    worker = threading.Thread(target=produce, daemon=True)
    worker.start()
    try:
        while (item := ahead.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


# -- the run ------------------------------------------------------------------------------------------
def _fingerprint(files: list[Path], out: dict[str, str]) -> None:
    digest = hashlib.sha256()
    for p in files:
        digest.update(p.name.encode("utf-8") + b"\0")
        with p.open("rb") as fh:
            for chunk in iter(partial(fh.read, 1 << 22), b""):
                digest.update(chunk)
    out["sha256"] = digest.hexdigest()


def _first_bad(path: Path, row_no: int) -> InputError:
    if _kind(path) == "jsonl":
        for lineno, _rec, message, _raw in bad_records(path, limit=1):
            return InputError(
                f"{path}:{lineno}: {message}; nothing was imported (use --skip-bad to skip such lines)"
            )
    return InputError(
        f"{path}: row {row_no}: not a WildChat record (a required field is missing or has the wrong type); "
        "nothing was imported (use --skip-bad to skip such rows)"
    )


def _write_rejects(bad: list[tuple[int, int]], files: list[Path], rejects_path: Path) -> int:
    by_file: dict[int, set[int]] = {}
    for file_no, row_no in bad:
        by_file.setdefault(file_no, set()).add(row_no)
    rejects_path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with rejects_path.open("w", encoding="utf-8") as out:
        for file_no, rows in sorted(by_file.items()):
            path = files[file_no]
            if _kind(path) == "jsonl":
                for lineno, record, message, raw in bad_records(path):
                    rows.discard(record)
                    out.write(
                        json.dumps({"file": str(path), "line": lineno, "error": message, "raw": raw}) + "\n"
                    )
                    n += 1
            for row_no in sorted(rows):  # bad rows the line check did not explain (e.g. Parquet)
                out.write(
                    json.dumps({"file": str(path), "row": row_no, "error": "missing or mistyped field"})
                    + "\n"
                )
                n += 1
    return n


def ingest_wildchat(
    store: ProjectStore,
    paths: list[Path],
    filters: WildChatFilters | None = None,
    skip_bad: bool = False,
    rejects_path: Path | None = None,
    progress: bool = False,
    work_dir: Path | None = None,  # where DuckDB spills (the CLI passes $PREFKIT_TMPDIR)
    follow_symlinks: bool = False,
) -> IngestReport:
    """Read, filter, group and import WildChat files; nothing visible until the whole import is
    written, nothing kept on a strict error.

    Writes are staged from the first row read (a short transaction per batch, so annotators' submits
    wait for a batch, not for the import): each kept conversation's turns are stored as it streams past (the store's single writer works beside DuckDB's scan), then the narrow columns
    are grouped into sequences and each dialogue is linked to its conversations' turns."""
    f = filters or WildChatFilters()
    f.check()
    files = expand_paths(paths, follow_symlinks)
    if work_dir is not None:
        check_work_dir(Path(work_dir))
    report = IngestReport(files=[str(p) for p in files], turn_unit=f.turn_unit)
    fp: dict[str, str] = {}
    hasher = threading.Thread(target=_fingerprint, args=(files, fp), daemon=True)
    hasher.start()  # hashing releases the GIL: it runs beside DuckDB's scan
    with tempfile.TemporaryDirectory(prefix="prefkit-wildchat-", dir=work_dir) as tmp:
        con = _connect(Path(tmp))
        try:
            clock = None
            with store.content.bulk_dialogues("wildchat") as bulk:
                _run(con, files, f, bulk, report, skip_bad, rejects_path, progress, Path(tmp), (hasher, fp))
                clock = time.perf_counter()
            if clock is not None:  # not when the source was already imported (rolled back)
                report.seconds["commit"] = round(time.perf_counter() - clock, 3)
        finally:
            con.close()
    result = bulk.result
    report.source_id = result.source_id
    report.already_imported = result.already_imported
    report.dialogues_written = result.counts.get("dialogues", 0)
    report.turns_written = result.counts.get("turns", 0)
    return report


class _BytesRead:
    """The reading bar in bytes of input: the files already scanned plus DuckDB's own measure of how
    far its scan of the current file has read (``query_progress``, a percentage of the file)."""

    def __init__(self, bar, sizes: list[int], show: bool):
        self.bar, self.sizes, self.show = bar, sizes, show

    def at(self, file_no: int, con) -> None:
        if not self.show:
            return
        try:
            share = max(0.0, min(100.0, float(con.query_progress()))) / 100
        except Exception:  # no measure for this scan: count the file when it ends
            share = 0.0
        position = sum(self.sizes[:file_no]) + int(self.sizes[file_no] * share)
        if position > self.bar.n:
            self.bar.update(position - self.bar.n)

    def file_done(self, file_no: int) -> None:
        if self.show:
            self.bar.update(max(0, sum(self.sizes[: file_no + 1]) - self.bar.n))


def _run(con, files, f, bulk, report, skip_bad, rejects_path, progress, tmp: Path, hashing) -> None:
    """The steps of :func:`ingest_wildchat` inside the staged import."""
    show = progress and sys.stderr.isatty()
    clock = time.perf_counter()
    kept_path = tmp / "kept.parquet"
    sizes = [p.stat().st_size for p in files]
    with tqdm(total=sum(sizes), desc="reading", unit="B", unit_scale=True, disable=not show) as bar:
        if show:  # DuckDB tracks how much of the file its scan has read; it prints nothing itself
            con.execute("SET enable_progress_bar = true")
            con.execute("SET enable_progress_bar_print = false")
        try:
            found = _scan(con, files, f, bulk, kept_path, skip_bad, _BytesRead(bar, sizes, show))
        except (InputError, StoreError):
            raise
        except Exception as exc:  # duckdb raises its own types for unreadable files
            if disk_full(exc):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(
                f"{files[0] if len(files) == 1 else 'input'}: cannot be read as WildChat ({first})"
            ) from None
    report.rows = sum(found.rows.values())
    if found.bad:
        target = rejects_path or Path("wildchat-rejects.jsonl")
        report.rejected = _write_rejects(found.bad, files, target)
        report.rejects_file = str(target)
    report.removed.update(found.removed)
    report.seconds["scan"] = round(time.perf_counter() - clock, 3)
    clock = time.perf_counter()
    _keep(con, f, kept_path)
    report.removed["duplicate"] = con.execute("SELECT count(*) FROM kept WHERE dup").fetchone()[0]
    bulk.drop_packs([r[0] for r in con.execute("SELECT pack_id FROM kept WHERE dup").fetchall()])
    _group(con, f)
    report.kept = con.execute("SELECT count(*) FROM seqs").fetchone()[0]
    for formed_by, n in con.execute(
        "SELECT formed_by, count(DISTINCT seq_key) FROM seqs GROUP BY 1 ORDER BY 1"
    ).fetchall():
        report.formed[formed_by] = n
    report.sequences = sum(report.formed.values())
    _members(con, files, f)
    report.seconds["group"] = round(time.perf_counter() - clock, 3)
    clock = time.perf_counter()
    hasher, fp = hashing
    hasher.join()
    report.seconds["hash_wait"] = round(time.perf_counter() - clock, 3)
    clock = time.perf_counter()
    bulk.start_source(
        ImportBundle(
            kind="wildchat",
            path=", ".join(str(p) for p in files),
            sha256=hashlib.sha256(
                (fp["sha256"] + canonical_json(asdict(f)) + str(skip_bad)).encode("utf-8")
            ).hexdigest(),
            rows=report.rows,
            licence=LICENCE,
            provenance=Provenance(source="import.wildchat", licence=LICENCE),
        )
    )
    with tqdm(total=report.sequences, desc="writing", unit=" dialogues", disable=not show) as bar:
        batches = _dialogue_batches(con, [str(p) for p in files], f)
        try:
            for batch in batches:
                bulk.add_dialogues(batch)
                bar.update(batch.num_rows)
        finally:
            batches.close()  # stops DuckDB's producer thread before the connection is used again
    links = _link_batches(con)
    try:
        for batch in links:
            bulk.link_packs(batch)
    finally:
        links.close()
    report.seconds["write"] = round(time.perf_counter() - clock, 3)


def check_work_dir(path: Path, name: str = "work directory") -> None:
    """An existing directory this process may write into, else one :class:`InputError` naming it."""
    if "\x00" in str(path):
        raise InputError(f"{name} {str(path)!r}: contains a NUL byte")
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise InputError(f"{name} {path} {what}; create it or point {name} at a directory that does")
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{name} {path} is not writable by this user")
