"""Agreement rows and annotator statistics read from a real project store, and the CLI over them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner
from conftest import label_event
from prefkit.cli import cli
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.project import Project
from prefkit.curation.quality.agreement import agreement_rows, annotator_stats
from prefkit.curation.store import ProjectStore

MATCH = get_kind("preference_match")
EXPRESSED = get_kind("preference_expressed")
RANK = {"not_covered": 0, "partially": 1, "fully": 2}


def _tasks(store: ProjectStore, kind, n, batch="b1", gold=()):
    tasks = [kind.make_task(f"pair:{batch}-{i}", {"i": i}, overlap=3, batch=batch) for i in range(n)]
    for i in gold:
        tasks[i] = tasks[i].model_copy(update={"is_gold": True, "gold_answer": {"coverage": "fully"}})
    store.labels.add_tasks(tasks)
    return tasks


def _label(store: ProjectStore, task, who, values, action="label", source="app", seconds=10.0):
    ev = label_event(task, who, values, action=action, time_spent_s=seconds, source=source)
    assert store.labels.append_event(ev)
    return ev


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A project with five users, made once: password hashing is deliberately slow."""
    root = tmp_path_factory.mktemp("agreement") / "proj"
    project = Project.init(root, name="agreement")
    for name in ("ann1", "ann2", "ann3", "ann4", "gpt"):
        project.store.accounts.add_user(name, "annotator", "password-123")
    project.close()
    return root


@pytest.fixture
def project(template, tmp_path) -> Iterator[Project]:
    project = Project(shutil.copytree(template, tmp_path / "proj"))
    yield project
    project.close()


@pytest.fixture
def store(project):
    return project.store


# coverage given by ann1..ann3 on 6 tasks; ann3 disagrees on two of them
COVERAGE = [
    tuple(row.split())
    for row in (
        "fully       fully       fully",
        "partially   partially   fully",
        "not_covered not_covered not_covered",
        "fully       fully       partially",
        "partially   partially   partially",
        "not_covered not_covered not_covered",
    )
]


def _fill_match(store, batch="b1"):
    tasks = _tasks(store, MATCH, len(COVERAGE), batch=batch)
    for task, row in zip(tasks, COVERAGE, strict=True):
        for who, value in zip(("ann1", "ann2", "ann3"), row, strict=True):
            _label(store, task, who, {"coverage": value})
    return tasks


def _expected_alpha(rows, level="ordinal"):
    data = np.array([[RANK[r[i]] for r in rows] for i in range(3)], dtype=float)
    return krippendorff.alpha(reliability_data=data, level_of_measurement=level)


def test_rows_give_ordinal_alpha_of_the_live_labels(store):
    _fill_match(store)
    [row] = agreement_rows(store, n_boot=200)
    assert (row["task_kind"], row["field"], row["level"], row["comparison"]) == (
        "preference_match",
        "coverage",
        "ordinal",
        "human-vs-human",
    )
    assert row["alpha"] == pytest.approx(_expected_alpha(COVERAGE))
    assert (row["n_units"], row["n_labels"], row["n_raters"]) == (6, 18, 3)
    assert row["ci_low"] <= row["alpha"] <= row["ci_high"]
    assert row["percent_agreement"] == pytest.approx(4 / 6 + 2 / 6 * (1 / 3))
    assert row["ci_method"] == "non-parametric bootstrap over units, 200 replicates"
    assert (
        0.0 <= row["p_below_min"] <= 1.0 and row["ac1"] is not None and row["mean_pairwise_kappa"] is not None
    )


def test_edits_count_once_and_skips_and_gold_are_not_ratings(store):
    tasks = _fill_match(store)
    fixed = [list(r) for r in COVERAGE]
    fixed[1][2] = "partially"  # ann3 edits its label on task 1: the edit replaces the first label
    _label(store, tasks[1], "ann3", {"coverage": "partially"})
    _label(store, tasks[0], "ann4", {}, action="skip")
    gold = _tasks(store, MATCH, 2, batch="gold", gold=(0, 1))
    for who, value in (("ann1", "fully"), ("ann2", "not_covered")):
        _label(store, gold[0], who, {"coverage": value})
    [row] = agreement_rows(store, n_boot=50)
    assert row["alpha"] == pytest.approx(_expected_alpha(fixed))
    assert (row["n_units"], row["n_raters"]) == (6, 3)


def test_batch_filter_and_units_per_checklist_item(store):
    _fill_match(store, batch="b1")
    tasks = _tasks(store, EXPRESSED, 2, batch="b2")
    for task in tasks:
        for who, second in (("ann1", True), ("ann2", False)):
            _label(
                store,
                task,
                who,
                {"items": [{"item": 0, "expressed": True}, {"item": 1, "expressed": second}]},
            )
    [row] = agreement_rows(store, batch="b2", n_boot=50)
    assert (row["task_kind"], row["field"], row["batch"]) == ("preference_expressed", "expressed", "b2")
    assert (row["n_units"], row["n_labels"]) == (4, 8)  # 2 tasks × 2 checklist items, 2 raters each
    assert row["percent_agreement"] == pytest.approx(0.5)
    assert [r["task_kind"] for r in agreement_rows(store, batch="b1", n_boot=50)] == ["preference_match"]


def test_judge_is_compared_with_the_human_consensus(store):
    tasks = _fill_match(store)
    for task, row in zip(tasks, COVERAGE, strict=True):
        _label(store, task, "gpt", {"coverage": row[0]}, source="judge")  # always the majority value
    human, judge = agreement_rows(store, n_boot=50)
    assert human["comparison"] == "human-vs-human" and human["n_raters"] == 3
    assert human["alpha"] == pytest.approx(_expected_alpha(COVERAGE))
    assert (judge["comparison"], judge["judge"], judge["n_raters"]) == ("judge-vs-human", "gpt", 2)
    assert judge["alpha"] == pytest.approx(1.0) and judge["n_units"] == 6
    assert judge["alpha_judge_as_rater"] > human["alpha"]


def test_judge_named_explicitly_is_kept_out_of_human_rows(store):
    tasks = _fill_match(store)
    for task in tasks:
        _label(store, task, "ann4", {"coverage": "fully"})
    assert agreement_rows(store, n_boot=20)[0]["n_raters"] == 4
    rows = agreement_rows(store, n_boot=20, judges=("ann4",))
    assert [r["comparison"] for r in rows] == ["human-vs-human", "judge-vs-human"]
    assert rows[0]["n_raters"] == 3 and rows[1]["judge"] == "ann4"


def test_annotator_stats_flag_the_contrarian(store):
    tasks = _fill_match(store)
    for task, row in zip(tasks, COVERAGE, strict=True):
        opposite = {"fully": "not_covered", "not_covered": "fully", "partially": "fully"}[row[0]]
        _label(store, task, "ann4", {"coverage": opposite}, seconds=1.0)
    gold = _tasks(store, MATCH, 1, batch="gold", gold=(0,))
    _label(store, gold[0], "ann1", {"coverage": "fully"})
    _label(store, gold[0], "ann4", {"coverage": "partially"})
    stats = {s["annotator"]: s for s in annotator_stats(store, kind="preference_match")}
    # ann1 against the others' majority: task 1 (p vs f,f by ann3 and ann4) misses, task 3 is a tie
    assert stats["ann1"]["loo_agreement"] == pytest.approx(4 / 5) and stats["ann1"]["gold_accuracy"] == 1.0
    assert stats["ann1"]["loo_units"] == 5
    assert stats["ann3"]["loo_agreement"] == pytest.approx(4 / 6)
    assert stats["ann4"]["loo_agreement"] == 0.0 and stats["ann4"]["gold_accuracy"] == 0.0
    assert stats["ann4"]["outlier"] and "gold accuracy" in stats["ann4"]["outlier_reason"]
    assert "far below the median" in stats["ann4"]["outlier_reason"]
    assert not stats["ann1"]["outlier"] and stats["ann1"]["outlier_reason"] is None
    assert stats["ann1"]["label_distribution"] == {"coverage": {"fully": 3, "not_covered": 2, "partially": 2}}
    assert stats["ann1"]["n_labels"] == 7 and stats["ann1"]["mean_time_s"] == 10.0


def test_cli_agreement_json_reads_the_project(store, project):
    _fill_match(store)
    result = CliRunner().invoke(
        cli, ["agreement", "--json", "--boot", "100", "--seed", "1", "-p", str(project.root)]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert rows == json.loads(json.dumps(agreement_rows(store, n_boot=100, seed=1)))
    assert rows[0]["alpha"] == pytest.approx(_expected_alpha(COVERAGE))
    assert rows[0]["alpha_min"] == project.config.release.alpha_min


def test_cli_agreement_table_and_annotators(store, project):
    _fill_match(store)
    table = CliRunner().invoke(cli, ["agreement", "--boot", "50", "-p", str(project.root)])
    assert (
        table.exit_code == 0
        and "preference_match" in table.output
        and "non-parametric bootstrap" in table.output
    )
    ann = CliRunner().invoke(cli, ["agreement", "--annotators", "--json", "-p", str(project.root)])
    rows = json.loads(ann.output)
    assert [r["annotator"] for r in rows] == ["ann1", "ann2", "ann3"]
    # the text shows each reliability and each confusion matrix, the numbers of --json
    text = CliRunner().invoke(cli, ["agreement", "--annotators", "-p", str(project.root)]).output
    lines = text.splitlines()
    for r in rows:
        row = next(x for x in lines if x.startswith(r["annotator"] + " ") and "preference_match" in x)
        assert f"{r['reliability']:.3f}" in row.split()
        matrix = r["confusion"]["coverage"]
        start = lines.index(
            f"{r['annotator']} on preference_match.coverage (rows: true value; columns: what they said)"
        )
        said = list(matrix)  # columns in the rows' order: the diagonal is each right answer
        assert lines[start + 1].split() == ["truth", *said]
        body = [x.split() for x in lines[start + 3 : start + 3 + len(matrix)]]
        assert body == [[t, *(f"{matrix[t].get(k, 0.0):.3f}" for k in said)] for t in matrix]
        assert all(sum(float(v) for v in b[1:]) == pytest.approx(1.0, abs=2e-3) for b in body)


def test_the_dashboard_confusion_rows_are_the_models_matrices(store):
    from prefkit.curation.quality.dashboard import confusion_matrices

    _fill_match(store)
    stats = {r["annotator"]: r for r in annotator_stats(store)}
    rows = confusion_matrices(store)
    assert {r["annotator"] for r in rows} == {"ann1", "ann2", "ann3"}
    for r in rows:
        probs = stats[r["annotator"]]["confusion"][r["field"]][r["truth"]]
        assert {k.removeprefix("says "): v for k, v in r.items() if k.startswith("says ")} == probs
    assert len(rows) == sum(len(m) for s in stats.values() for m in s["confusion"].values())


def test_cli_agreement_uses_the_documented_table_form_of_alpha_min(store, project):
    _fill_match(store)
    cfg = project.root / "prefkit.toml"
    text = cfg.read_text().replace(
        "alpha_min = 0.8\n", 'alpha_min = { default = 0.8, "preference_match.coverage" = 0.9 }\n'
    )
    cfg.write_text(text)
    out = CliRunner().invoke(cli, ["agreement", "--json", "--boot", "50", "-p", str(project.root)])
    assert out.exit_code == 0, out.output
    [row] = json.loads(out.output)
    assert (row["field"], row["alpha_min"]) == ("coverage", 0.9)
    table = CliRunner().invoke(cli, ["agreement", "--boot", "50", "-p", str(project.root)])
    assert table.exit_code == 0 and "the row's alpha_min" in table.output, table.output


def test_cli_unknown_kind_is_one_line_error(store, project):
    result = CliRunner().invoke(cli, ["agreement", "--kind", "nope", "-p", str(project.root)])
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: unknown task kind 'nope'")


def test_a_kind_without_labels_gives_an_empty_row(store):
    _fill_match(store)
    [row] = agreement_rows(store, kind="preference_expressed", n_boot=20)
    assert (row["task_kind"], row["field"], row["n_units"], row["n_labels"]) == (
        "preference_expressed",
        "expressed",
        0,
        0,
    )
    assert row["alpha"] is None and row["ci_low"] is None and row["ac1"] is None
