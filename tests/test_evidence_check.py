"""`prefkit memories check-evidence` on the real AlpsBench sample: per-source counts, one implementation."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.quality.evidence import check_quote, evidence_rows, summarize
from prefkit.curation.quality.gates import gold_evidence_failures
from prefkit.curation.store import DialogueTurn

#: pass / near_miss / fail per source over the 400 sample packets (docs/alpsbench.md has the table).
EXPECTED = {
    "gold": (1086, 1001, 14, 71),
    "claude-sonnet-4-5-20250929": (1541, 1187, 0, 354),
    "deepseek-reasoner": (1205, 1029, 0, 176),
    "gemini-3-flash-preview": (1703, 1127, 0, 576),
    "gpt-4.1-mini_again": (1401, 847, 0, 554),
    "gpt-5.2": (1652, 1554, 0, 98),
    "llama-4-maverick": (744, 359, 0, 385),
    "qwen3-max": (856, 645, 0, 211),
}


@pytest.mark.shared_data
def test_counts_per_source_on_the_real_packets(alps_project):
    rows = evidence_rows(alps_project.store, "all")
    got = {s["source"]: (s["memories"], s["pass"], s["near_miss"], s["fail"]) for s in summarize(rows)}
    assert got == EXPECTED
    # The release gate uses the same check: its culprits are exactly the gold rows that do not pass.
    gold_bad = {
        (r["session_id"], r["memory_id"]) for r in rows if r["source"] == "gold" and r["status"] != "pass"
    }
    assert {
        (f["dialogue_id"], f["memory_id"]) for f in gold_evidence_failures(alps_project.store)
    } == gold_bad


@pytest.mark.shared_data
def test_cli_json_rows_and_summary_for_one_model(alps_project):
    out = CliRunner().invoke(
        cli, ["memories", "check-evidence", "--source", "gpt-5.2", "--json", "-p", str(alps_project.root)]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert len(data["memories"]) == EXPECTED["gpt-5.2"][0]
    assert {"session_id", "memory_id", "source", "status", "reason"} <= set(data["memories"][0])
    assert data["summary"] == [
        {"source": "gpt-5.2", "memories": 1652, "pass": 1554, "near_miss": 0, "fail": 98, "pass_rate": 0.941}
    ]
    bad = CliRunner().invoke(
        cli, ["memories", "check-evidence", "--source", "nobody", "-p", str(alps_project.root)]
    )
    assert bad.exit_code == 2 and "known: gold" in bad.output


TURNS = [
    DialogueTurn(0, "user", "Ich wohne in Köln\u200b und koche gern."),
    DialogueTurn(1, "assistant", "Schön!"),
]


@pytest.mark.parametrize(
    ("text", "index", "status"),
    [
        ("ICH WOHNE IN KÖLN, und koche gern", 0, "pass"),  # case, invisible char, punctuation
        ("Ich wohne in Ko\u0308ln", 0, "pass"),  # Unicode form (decomposed ö)
        ("Ich wohne … gern", 0, "pass"),
        ("Ich wohne [9 characters] koche gern", 0, "pass"),
        ("gern ... Ich wohne", 0, "fail"),  # pieces out of order
        ("Schön", 0, "near_miss"),
        ("Schön", None, "pass"),  # a model extraction citing no turn
        ("   ", 0, "fail"),
        ("Schön", 5, "fail"),
    ],
)
def test_quote_rules(text, index, status):
    assert check_quote(text, index, TURNS).status == status
