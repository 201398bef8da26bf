"""A declared kind's release: NAME (verified items: id, fields, meta, n_labels, decided_by, answers with
every text answer), NAME_unverified (too few labels, or a tie), and NAME_labels, NAME_final_labels,
NAME_adjudications with typed values; loaded by datasets offline, read through Croissant and DuckDB,
described in the card; cost counts the kind."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from declaredkind import ANSWERS, DECIDED, ITEMS, NAME, declare, label_rows, write_items
from prefkit.cli import cli
from prefkit.curation.annotation import work
from prefkit.curation.annotation.labels_io import import_labels
from prefkit.curation.project import Project
from prefkit.curation.quality.consensus import adjudicate
from prefkit.exports.declared import meta_type
from test_release_support import croissant_fields, cut, duckdb_rows, hub_offline

ONE = {"better": "A", "strength": 3, "order": ["m2", "m1", "m3"], "why": "a lone view"}
#: i3: no label; i4: one label of three needed; i5: one label, then adjudicated; i6: overlap 1, one label;
#: i7: adaptive overlap 1..3, one label, its target still 1 (the label was certain).
MORE = {"ann1": {"i4": ONE, "i5": ONE, "i6": {**ONE, "why": ""}, "i7": ONE}}
DECISION = {"better": "tie", "strength": 2, "order": ["m1", "m2", "m3"], "why": "both follow"}
#: i1's history opens a dated session (the other items' turns carry none).
DATED = [{**ITEMS[0]["history"][0], "session": "Trip planning", "date": "2024-01-03"}, ITEMS[0]["history"][1]]


def _meta(n: int) -> dict:
    return {"question_type": "temporal" if n % 2 else "single-hop", "sessions": [f"2024-0{n}-01"], "hops": n}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("decl")
    Project.init(tmp / "proj", name="declared-release").close()
    declare(tmp / "proj")
    project = Project(tmp / "proj")
    items = [{**ITEMS[n % 2], "id": f"i{n + 1}", "meta": _meta(n + 1)} for n in range(5)]
    items[0]["history"] = DATED
    work.create(project, "t", NAME, overlap="3", items=write_items(tmp / "items.jsonl", items))
    one = [{**ITEMS[0], "id": "i6", "meta": _meta(6)}]
    work.create(project, "s", NAME, overlap="1", items=write_items(tmp / "one.jsonl", one))
    adaptive = [{**ITEMS[1], "id": "i7", "meta": _meta(7)}]
    work.create(project, "a", NAME, overlap="1..3", items=write_items(tmp / "adaptive.jsonl", adaptive))
    for who in ("ann1", "ann2", "ann3"):
        project.store.accounts.add_user(who, "annotator", "a-long-password")
    project.store.accounts.add_user("lead", "maintainer", "a-long-password")
    rows = [{**r, "time_spent_s": 30} for r in label_rows() + label_rows(MORE)]
    (tmp / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import_labels(project.store, tmp / "labels.jsonl")
    i5 = project.store.labels.task_ids_by_ref(NAME, ["i5"])["i5"]
    adjudicate(project.store, i5, "lead", DECISION, "both responses follow the preferences")
    result = cut(project, "0.1.0", override="a small example: no gold items, low agreement")
    yield project, result
    project.close()


def _rows(result, config: str, split: str = "test") -> list[dict]:
    return [
        json.loads(x) for x in (result.path / "data" / config / f"{split}.jsonl").read_text().splitlines()
    ]


def test_verified_rows_are_items_decided_by_enough_people_with_every_answer(release):
    _, result = release
    counts = result.manifest.counts
    assert counts[NAME] == 5 and counts[f"{NAME}_unverified"] == 2
    rows = {r["id"]: r for r in _rows(result, NAME)}
    assert list(rows) == ["i1", "i2", "i5", "i6", "i7"]
    assert (
        rows["i1"]["history"] == [DATED[0], {**DATED[1], "session": None, "date": None}]
        and rows["i2"]["preferences"] == ITEMS[1]["preferences"]
    )
    assert rows["i2"]["meta"] == {"question_type": "single-hop", "sessions": ["2024-02-01"], "hops": 2}
    assert {i: (r["n_labels"], r["decided_by"]) for i, r in rows.items()} == {
        "i1": (3, "majority"),
        "i2": (3, "majority"),
        "i5": (1, "adjudicated"),
        "i6": (1, "single"),
        "i7": (1, "single"),  # adaptive overlap settled on one label
    }
    project = release[0]
    i7 = project.store.labels.task(project.store.labels.task_ids_by_ref(NAME, ["i7"])["i7"])
    assert (i7.overlap, i7.overlap_max) == (1, 3)
    whys = {i: rows[i]["answers"].pop("why") for i in rows}
    assert {i: rows[i]["answers"] for i in ("i1", "i2")} == DECIDED
    assert rows["i5"]["answers"] == {k: v for k, v in DECISION.items() if k != "why"} | {"tags": None}
    # ann1's answer, under the pseudonym the labels config gives ann1
    ann1 = {
        r["annotator"] for r in _rows(result, "labels", NAME) if json.loads(r["values"]).get("why") == "clear"
    }
    assert whys["i1"] == {"given": [{"annotator": ann1.pop(), "text": "clear"}], "adjudicated": None}
    assert whys["i2"] == {"given": [], "adjudicated": None}
    assert whys["i5"]["adjudicated"] == "both follow" and whys["i5"]["given"][0]["text"] == "a lone view"
    assert "ann1" not in json.dumps(whys)


def test_unverified_rows_say_what_they_wait_for(release):
    _, result = release
    rest = {r["id"]: r for r in _rows(result, f"{NAME}_unverified")}
    assert {i: (r["n_labels"], r["decided_by"], r["waiting_for"]) for i, r in rest.items()} == {
        "i3": (0, "undecided", "labels (0 of 3)"),
        "i4": (1, "single", "labels (1 of 3)"),
    }
    assert "answers" not in rest["i4"] and rest["i4"]["meta"]["hops"] == 4


def test_final_labels_say_single_for_one_persons_label(release):
    _, result = release
    finals = {r["item_ref"]: r for r in _rows(result, "final_labels", NAME)}
    assert {i: finals[i]["decided_by"] for i in ("i1", "i3", "i4", "i5", "i6")} == {
        "i1": "majority",
        "i3": "undecided",
        "i4": "single",
        "i5": "adjudicated",
        "i6": "single",
    }
    assert isinstance(finals["i1"]["values"], str)  # the shared config keeps its layout: values as JSON
    typed = {r["item_ref"]: r for r in _rows(result, f"{NAME}_final_labels", NAME)}
    assert typed["i1"]["values"] == {**json.loads(finals["i1"]["values"]), "why": None}
    assert typed["i3"]["values"] is None


def test_card_states_the_questions_and_the_decisions(release):
    _, result = release
    card = (result.path / "README.md").read_text(encoding="utf-8")
    assert (
        "strength: How clear is the difference?, rating (1, 2, 3, 4, 5); decided by the lower median" in card
    )
    assert (
        "why: Why, text, optional; decided by not decided: every answer given, and the one a maintainer"
        in card
    )
    assert "`meta` (a struct)" in card
    assert (
        "1 waiting for adjudication" not in card and "2 waiting for labels (in the unverified config)" in card
    )
    assert (
        "5 verified items (1 adjudicated, 2 majority, 2 single); 2 unverified (waiting for labels: 2)."
        in card
    )
    assert "3 annotators; median seconds per item: 30.000;" in card
    # agreement per question, with its interval: under adaptive overlap (i7), on the audit items (none)
    assert "| better | 0 | — | \\[—, —\\] | audit share |" in card
    assert "## Motivation\n\nCreated to evaluate models on these tasks: Which response follows" in card
    words = card.lower().split("\n---\n", 1)[1]
    assert "cupid" not in words and "alpsbench" not in words


def test_datasets_loads_every_config_typed(release, tmp_path, monkeypatch):
    _, result = release
    datasets = hub_offline(monkeypatch)

    def load(config: str):
        return datasets.load_dataset(str(result.path), config, cache_dir=str(tmp_path / "hf"))

    ds = load(NAME)["test"]
    assert ds.column_names == [
        "id",
        "history",
        "preferences",
        "response_a",
        "meta",
        "n_labels",
        "decided_by",
        "answers",
    ]
    assert ds.features["meta"]["hops"].dtype == "int64" and ds.features["n_labels"].dtype == "int64"
    assert ds[1]["answers"] == {
        **DECIDED["i2"],
        "why": {"given": [], "adjudicated": None},
    }
    assert ds[3]["meta"] == {"question_type": "single-hop", "sessions": ["2024-06-01"], "hops": 6}
    assert ds[0]["history"][0] == DATED[0]  # the session and its date, as text
    rest = load(f"{NAME}_unverified")["test"]
    assert rest["id"] == ["i3", "i4"] and rest["waiting_for"] == ["labels (0 of 3)", "labels (1 of 3)"]
    labels = load(f"{NAME}_labels")[NAME]
    assert len(labels) == sum(len(v) for v in ANSWERS.values()) + 4
    mine = [r["values"] for r in labels if r["values"]["why"] == "a lone view"]
    assert len(mine) == 3 and mine[0]["strength"] == 3 and mine[0]["order"] == ["m2", "m1", "m3"]
    adjudications = load(f"{NAME}_adjudications")["log"]
    assert adjudications[0]["values"] == {**DECISION, "tags": None} and adjudications[0]["in_force"]
    finals = load(f"{NAME}_final_labels")[NAME]
    assert finals.features["values"]["strength"].dtype == "int64"


def test_croissant_and_duckdb_read_it(release):
    _, result = release
    fields = croissant_fields(result.path, NAME)
    assert list(fields) == [
        "id",
        "history",
        "preferences",
        "response_a",
        "meta",
        "n_labels",
        "decided_by",
        "answers",
    ]
    assert fields["answers"]["description"] == "JSON object with keys better, strength, tags, order, why."
    assert fields["history"]["description"] == "JSON array of objects with keys role, content, session, date."
    got = duckdb_rows(result.path, f'SELECT id, answers.strength, meta.hops FROM "{NAME}" ORDER BY id')
    assert got == [("i1", 1, 1), ("i2", 4, 2), ("i5", 2, 5), ("i6", 3, 6), ("i7", 3, 7)]
    got = duckdb_rows(result.path, f'SELECT count(*) FROM "{NAME}_labels" WHERE "values".strength = 3')
    assert got == [(4,)]


def test_meta_is_a_struct_only_when_every_item_shares_keys_and_types_and_turns_keep_their_dates():
    from types import SimpleNamespace

    import pyarrow as pa
    from prefkit.exports.declared import _field_type

    dated = [SimpleNamespace(payload={"h": [{"role": "user", "content": "hi", "date": "2024-01-03"}]})]
    assert _field_type("h", "chat", dated) == pa.list_(
        pa.struct([("role", pa.string()), ("content", pa.string()), ("date", pa.string())])
    )
    assert _field_type("h", "chat", []).value_type.names == ["role", "content"]

    assert meta_type([{"a": 1, "b": ["x"]}, {"a": 2, "b": []}]) == pa.struct(
        [("a", pa.int64()), ("b", pa.list_(pa.string()))]
    )
    for metas in ([{"a": 1}, {"a": "one"}], [{"a": 1}, {"b": 1}], [{"a": 1}, {"a": 1.5}], [{"a": None}]):
        assert meta_type(metas) == pa.string(), metas


@pytest.mark.parametrize(
    ("meta", "said"),
    [
        ("[1, 2]", "items.jsonl:1: key meta: Input should be a valid dictionary"),
        ('{"strength": 1}', "items.jsonl:1: key meta.strength: a field or question of"),
        ('{"history": 1}', "items.jsonl:1: key meta.history: a field or question of"),
    ],
)
def test_bad_meta_is_one_line_naming_file_line_and_key(tmp_path, meta, said):
    Project.init(tmp_path / "proj", name="bad-meta").close()
    declare(tmp_path / "proj")
    line = json.dumps({k: v for k, v in ITEMS[0].items()})[:-1] + f', "meta": {meta}}}\n'
    (tmp_path / "items.jsonl").write_text(line, encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["tasks", "import", "-p", str(tmp_path / "proj"), "--kind", NAME, str(tmp_path / "items.jsonl")]
    )
    assert result.exit_code != 0 and said in result.output and len(result.output.strip().splitlines()) == 1
    project = Project(tmp_path / "proj")
    try:
        assert project.store.labels.tasks(kind=NAME) == []
    finally:
        project.close()


def test_cost_counts_the_kind(release):
    from prefkit.curation.quality.cost import cost_report

    project, _ = release
    report = cost_report(project.store, project.config.annotation)
    assert [(t.kind, t.items) for t in report.times] == [(NAME, 10)]
    verified = {v.unit: v for v in report.verified}
    assert verified[f"{NAME} items"].kind == NAME and verified[f"{NAME} items"].count == 5  # as released
    result = CliRunner().invoke(cli, ["cost", "-p", str(project.root)])
    assert result.exit_code == 0 and f"{NAME} items" in result.output


def test_a_kind_with_no_decided_item_still_cuts_and_the_card_says_so(tmp_path):
    import re

    Project.init(tmp_path / "proj", name="nothing-decided").close()
    declare(tmp_path / "proj")
    toml = tmp_path / "proj" / "prefkit.toml"  # the operator's own answer stays, the default gives way
    toml.write_text(re.sub(r"(?m)^motivation = .*$", 'motivation = "To measure recall."', toml.read_text()))
    project = Project(tmp_path / "proj")
    try:
        work.create(project, "t", NAME, overlap="3", items=write_items(tmp_path / "items.jsonl"))
        result = cut(project, "0.1.0", override="nothing labelled yet")
    finally:
        project.close()
    assert NAME not in result.manifest.counts and result.manifest.counts[f"{NAME}_unverified"] == 2
    card = (result.path / "README.md").read_text(encoding="utf-8")
    assert "0 verified items (none yet); 2 unverified (waiting for labels: 2)." in card
    assert "No agreement was measured." in card.split("## Task: ")[1]
    assert "## Motivation\n\nTo measure recall.\n" in card
    assert "## Uses\n\nEvaluating models on Which response follows the user better?." in card
