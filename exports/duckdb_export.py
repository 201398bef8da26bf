"""The release's DuckDB file: one table per config (from its Parquet files, with a ``split`` column),
the manifest's gates, agreement and file list as tables, and views for common analyses.

DuckDB files are not byte-stable, so this file is listed in the manifest (verify still catches a
changed byte) but is never what identifies a release: the JSONL data files are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
VIEW_NEEDS = {"label_summary": ("labels",), "decided_by": ("final_labels",), "labels_vs_final": ("labels", "final_labels"),
              "matching_coverage": ("matching",), "cupid_by_type": ("cupid",)}


def _uniform(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose every column has one type: a column mixing types (a gate's value may be a number,
    a count or ``None``) or holding lists and dicts becomes text."""
    mixed = set()
    for key in {k for r in rows for k in r}:
        types = {type(r.get(key)) for r in rows if r.get(key) is not None}
        if len(types - {int, float}) > 1 or (types & {list, dict}) or (types - {int, float} and types & {int, float}):
            mixed.add(key)
    return [{k: (None if v is None else str(v)) if k in mixed else v for k, v in r.items()} for r in rows]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def write_duckdb(path: Path, release_dir: Path, configs, manifest: dict[str, Any]) -> list[str]:
    """Build the database at ``path``; returns the names of the tables and views created."""
    import duckdb

    path.unlink(missing_ok=True)
    made: list[str] = []
    con = duckdb.connect(str(path))
    try:
        for cfg in configs:
            selects = [
                f"SELECT *, '{split}' AS split FROM read_parquet('{(release_dir / 'parquet' / cfg.name / f'{split}.parquet').as_posix()}')"
                for split in cfg.splits
            ]
            con.execute(f"CREATE TABLE {_quote(cfg.name)} AS " + " UNION ALL BY NAME ".join(selects))
            made.append(cfg.name)
        for name in ("gates", "agreement"):
            rows = manifest.get(name) or []
            if rows:
                table = pa.Table.from_pylist(_uniform(rows))
                con.register("_rows", table)
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM _rows")
                con.unregister("_rows")
                made.append(name)
        for view, sql in VIEWS.items():
            if all(t in made for t in VIEW_NEEDS[view]):
                con.execute(f"CREATE VIEW {view} AS {sql}")
                made.append(view)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return made
