"""The release's DuckDB file and the data files written through it: one table per config (with a
``split`` column) from which each split is copied out as JSONL and Parquet, the gates and agreement
as tables, and views for common analyses.

DuckDB files are not byte-stable, so this file is listed in the manifest (verify still catches a
changed byte) but is never what identifies a release: the JSONL data files are.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

VIEWS = {
    "label_summary": """
        SELECT kind, annotator, action, count(*) AS n, round(avg(time_spent_s), 1) AS mean_seconds
        FROM labels GROUP BY ALL ORDER BY kind, annotator, action""",
    "decided_by": """
        SELECT kind, decided_by, count(*) AS n FROM final_labels GROUP BY ALL ORDER BY kind, decided_by""",
    "labels_vs_final": """
        SELECT l.kind, l.task_id, l.annotator, l.values AS label, f.values AS final, l.values = f.values AS agrees,
               f.decided_by
        FROM labels l JOIN final_labels f ON f.id = l.task_id AND l.action = 'label'""",
    "matching_coverage": """
        SELECT origin, coverage, count(*) AS n FROM matching GROUP BY ALL ORDER BY origin, coverage""",
    "cupid_by_type": """
        SELECT instance_type, count(*) AS n, count(DISTINCT persona_id) AS personas,
               avg(len(prior_interactions)) AS mean_prior_sessions
        FROM cupid GROUP BY ALL ORDER BY instance_type""",
}
#: Which table each view needs.
VIEW_NEEDS = {
    "label_summary": ("labels",),
    "decided_by": ("final_labels",),
    "labels_vs_final": ("labels", "final_labels"),
    "matching_coverage": ("matching",),
    "cupid_by_type": ("cupid",),
}


def _uniform(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose every column has one type: a column mixing types (a gate's value may be a number,
    a count or ``None``) or holding lists and dicts becomes text."""
    mixed = set()
    for key in {k for r in rows for k in r}:
        types = {type(r.get(key)) for r in rows if r.get(key) is not None}
        if (
            len(types - {int, float}) > 1
            or (types & {list, dict})
            or (types - {int, float} and types & {int, float})
        ):
            mixed.add(key)
    return [{k: (None if v is None else str(v)) if k in mixed else v for k, v in r.items()} for r in rows]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def duck_type(t: pa.DataType) -> str:
    """The DuckDB type of an Arrow type (the subset release configs use)."""
    if pa.types.is_list(t):
        return duck_type(t.value_type) + "[]"
    if pa.types.is_struct(t):
        return "STRUCT(" + ", ".join(f"{_quote(f.name)} {duck_type(f.type)}" for f in t) + ")"
    simple = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"}
    if t not in simple:
        raise TypeError(f"no DuckDB type for Arrow {t}")
    return simple[t]


def _columns(schema: pa.Schema) -> str:
    return "{" + ", ".join(f"'{_literal(f.name)}': '{duck_type(f.type)}'" for f in schema) + "}"


def _literal(text: str) -> str:
    return text.replace("'", "''")


def load_tables(release_dir: Path, configs):
    """An in-memory DuckDB database with one table per config (rows in order, plus a ``split`` column).

    The rows are parsed once, here, with the config's schema; :func:`copy_out` and
    :func:`save_database` then write every format from these tables.
    """
    staging = release_dir / ".input"
    con = duckdb.connect()
    try:
        for cfg in configs:
            cols = ", ".join(_quote(f.name) for f in cfg.schema)
            parts = []
            for split, lines in cfg.splits.items():
                src = staging / cfg.name / f"{split}.jsonl"
                src.parent.mkdir(parents=True, exist_ok=True)
                src.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
                parts.append(
                    f"SELECT {cols}, '{split}' AS split FROM read_json('{_literal(src.as_posix())}', "
                    f"format='newline_delimited', columns={_columns(cfg.schema)}, maximum_object_size=1073741824)"
                )
            con.execute(f"CREATE TABLE {_quote(cfg.name)} AS " + " UNION ALL ".join(parts))
    except BaseException:
        con.close()
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return con


def copy_out(con, release_dir: Path, configs) -> None:
    """COPY each split to ``data/<config>/<split>.jsonl`` and ``parquet/<config>/<split>.parquet``.

    DuckDB is the one writer of both formats, so they hold the same values in the same column order
    (the config's schema); its output is deterministic for the same input and DuckDB version, which is
    what byte-identical re-cuts need.
    """
    for cfg in configs:
        cols = ", ".join(_quote(f.name) for f in cfg.schema)
        for split in cfg.splits:
            for sub, fmt in (("data", "FORMAT json"), ("parquet", "FORMAT parquet, COMPRESSION zstd")):
                out = release_dir / sub / cfg.name / f"{split}.{'jsonl' if sub == 'data' else 'parquet'}"
                out.parent.mkdir(parents=True, exist_ok=True)
                con.execute(
                    f"COPY (SELECT {cols} FROM memory.{_quote(cfg.name)} WHERE split = '{split}') "
                    f"TO '{_literal(out.as_posix())}' ({fmt})"
                )


def save_database(con, db_path: Path, configs, manifest: dict[str, Any]) -> list[str]:
    """Write the in-memory tables, the gates, agreement and metadata (name, version, canary) tables
    and the analysis views to the file
    ``db_path``, then close ``con``; returns every table and view name. Give it its own cursor and it
    runs in a thread beside :func:`copy_out` (DuckDB releases the GIL)."""
    made = []
    try:
        con.execute(f"ATTACH '{_literal(db_path.as_posix())}' AS rel")
        for cfg in configs:
            con.execute(f"CREATE TABLE rel.{_quote(cfg.name)} AS SELECT * FROM memory.{_quote(cfg.name)}")
            made.append(cfg.name)
        con.execute("USE rel")
        for name in ("gates", "agreement", "metadata"):
            rows = manifest.get(name) or []
            if rows:
                con.register("_rows", pa.Table.from_pylist(_uniform(rows)))
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM _rows")
                con.unregister("_rows")
                made.append(name)
        for view, sql in VIEWS.items():
            if all(t in made for t in VIEW_NEEDS[view]):
                con.execute(f"CREATE VIEW {view} AS {sql}")
                made.append(view)
        con.execute("USE memory")
        con.execute("DETACH rel")
    finally:
        con.close()
    return made
