"""Task kinds declared in kinds/NAME.toml: the declaration's checks, items from a file, answers,
agreement per question at its level and decisions, pinned to values worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from declaredkind import ANSWERS, DECIDED, ITEMS, NAME, TOML, declare, label_rows, labelled, write_items
from prefkit.cli import cli
from prefkit.curation.annotation import work, workflow
from prefkit.curation.annotation.declared import use_project_kinds
from prefkit.curation.annotation.task_admin import TaskFileError
from prefkit.curation.annotation.task_kinds import LabelError, get_kind
from prefkit.curation.project import Project
from prefkit.curation.quality.agreement import agreement_rows, annotator_stats
from prefkit.curation.quality.consensus import decide_units, final_labels
from prefkit.curation.quality.dashboard import agreement_table
from prefkit.schemas.config import ConfigError


def _labelled(project: Project, tmp_path: Path) -> Project:
    assert labelled(project, tmp_path) == (2, 6)  # tasks made, labels imported
    return project


def _rows(project):
    return {r["field"]: r for r in agreement_rows(project.store, kind=NAME, n_boot=50)}


def test_agreement_is_one_row_per_question_at_its_level_with_hand_computed_alpha(project, tmp_path):
    rows = _rows(_labelled(project, tmp_path))
    assert list(rows) == ["better", "strength", "tags:x", "tags:y", "order", "why"]
    assert [rows[f]["level"] for f in rows] == [
        "nominal",
        "interval",
        "nominal",
        "nominal",
        "interval",
        "text",
    ]
    # better, nominal: (A,A,B) (B,B,B); n=6 values, A 2 B 4; Do = 2/6, De = 16/30 -> 1 - 30/48
    assert rows["better"]["alpha"] == pytest.approx(0.375)
    # strength, interval: (1,1,2) (4,4,5); Do = 4/6, De = 178/30 -> 1 - 20/178
    assert rows["strength"]["alpha"] == pytest.approx(158 / 178)
    # tags:x: yes yes yes | no no (ann3 left the optional question open) -> no disagreement
    assert rows["tags:x"]["alpha"] == pytest.approx(1.0)
    # tags:y: no yes no | yes yes; Do = 2/5, De = 12/20 -> 1/3
    assert rows["tags:y"]["alpha"] == pytest.approx(1 / 3)
    # order: the rank of each value is a unit (6 units, 18 ranks); Do = 14/18, De = 432/306
    assert rows["order"]["alpha"] == pytest.approx(1 - (14 / 18) / (432 / 306))
    assert rows["order"]["n_units"] == 6
    assert rows["why"]["comparison"] == "not measured (free text)" and rows["why"]["alpha"] is None
    assert rows["why"]["n_labels"] == 1


def test_decisions_by_majority_lower_median_and_mean_rank(project, tmp_path):
    finals = final_labels(_labelled(project, tmp_path).store, NAME)
    by_item = {project.store.labels.task(t).item_ref: f for t, f in finals.items()}
    assert {i: f.values for i, f in by_item.items()} == DECIDED
    assert {f.decided_by for f in by_item.values()} == {"majority"}


@pytest.mark.parametrize(
    ("labels", "decided", "tied"),
    [
        ({"a": {"strength": 2}, "b": {"strength": 5}}, {("", "strength"): 2}, []),  # the lower median
        ({"a": {"better": "A"}, "b": {"better": "B"}}, {}, [("", "better")]),  # a tie goes to adjudication
        (
            {"a": {"order": ["m1", "m2", "m3"]}, "b": {"order": ["m2", "m1", "m3"]}},
            {},
            [("m1", "order"), ("m2", "order"), ("m3", "order")],  # equal mean ranks
        ),
        ({"a": {"tags": ["x"]}, "b": {"tags": ["y"]}}, {}, []),  # an optional question's tie leaves it open
    ],
)
def test_ties_and_even_counts(project, labels, decided, tied):
    declare(project.root)
    use_project_kinds(project.root)
    got, open_, _ = decide_units(NAME, labels)
    assert got == decided
    assert open_ == tied


def test_answers_are_checked_question_by_question(project):
    declare(project.root)
    use_project_kinds(project.root)
    kind = get_kind(NAME)
    ok = {"better": "A", "strength": 3, "order": ["m2", "m1", "m3"], "tags": [], "why": None}
    assert kind.validate(ok, None) == {"better": "A", "strength": 3, "order": ["m2", "m1", "m3"]}
    assert kind.validate({**ok, "tags": ["y", "x"]}, None)["tags"] == ["x", "y"]
    for values, line in [
        ({k: v for k, v in ok.items() if k != "better"}, "better: required"),
        ({**ok, "strength": True}, "strength: True is not one of 1, 2, 3, 4, 5"),
        ({**ok, "strength": "3"}, "strength: '3' is not one of"),
        ({**ok, "order": ["m1", "m2"]}, "order: put every one of m1, m2, m3 in order"),
        ({**ok, "tags": ["x", "x"]}, "tags: a choice is given twice"),
        ({**ok, "why": "w" * 201}, "why: at most 200 characters"),
        ({**ok, "extra": 1}, "extra: not a question of pairwise_alignment"),
    ]:
        with pytest.raises(LabelError) as exc:
            kind.validate(values, None)
        assert line in str(exc.value)


BAD_DECLARATIONS = [
    ('type = "slider"', "questions", "key questions[1].type: Input should be"),
    ("", "no_values", "key questions[1].values: a rating question needs at least two distinct values"),
    ("", "descending", "key questions[1].values: a rating needs ascending integer values"),
    ("", "duplicate", "key questions[2].name: 'q' is used twice"),
    ("", "reserved", "key name: 'labels' is reserved"),
    ("", "builtin", "key name: 'task_qc' is reserved"),
    ("", "stem", "key name: 'other' is not the file's stem"),
    ("", "extra_key", "key questions[1].max_length: a rating question takes no max_length"),
    ("", "unknown_key", "key colour: Extra inputs are not permitted"),
    ("", "syntax", "Unclosed array"),
    ("", "from_missing", "key questions[1].values_from: 'nope' is not a text field of the kind"),
    ("", "from_list", "key questions[1].values_from: 'f' is not a list field of the kind"),
    ("", "from_mixed", "key questions[1].values_from: 'items' is not a text field of the kind"),
    ("", "from_and_values", "key questions[1].values: a ranking takes values or values_from (one of them)"),
    ("", "summary", "key summary: 'items' is not a text field of the kind"),
]


def _bad_toml(case: str, name: str) -> str:
    top = {"unknown_key": 'colour = "red"\n', "summary": 'summary = "items"\n'}.get(case, "")
    head = f'{top}name = "{name}"\ntitle = "t"\n[[fields]]\nname = "f"\ntype = "text"\n'
    head += '[[fields]]\nname = "items"\ntype = "list"\n'
    q = '[[questions]]\nname = "q"\ntype = "rating"\n'
    r = '[[questions]]\nname = "q"\ntype = "ranking"\n'
    return (
        head
        + {
            "questions": '[[questions]]\nname = "q"\ntype = "slider"\n',
            "no_values": q,
            "descending": q + "values = [3, 2, 1]\n",
            "duplicate": q + "values = [1, 2]\n" + q + "values = [1, 2]\n",
            "reserved": q + "values = [1, 2]\n",
            "builtin": q + "values = [1, 2]\n",
            "stem": q + "values = [1, 2]\n",
            "extra_key": q + "values = [1, 2]\nmax_length = 3\n",
            "unknown_key": q + "values = [1, 2]\n",
            "syntax": q + "values = [1, 2\n",
            "from_missing": r + 'values_from = ["f", "nope"]\n',
            "from_list": r + 'values_from = "f"\n',
            "from_mixed": r + 'values_from = ["f", "items"]\n',
            "from_and_values": r + 'values = ["a", "b"]\nvalues_from = ["f", "f"]\n',
            "summary": q + "values = [1, 2]\n",
        }[case]
    )


@pytest.mark.parametrize(("_unused", "case", "line"), BAD_DECLARATIONS)
def test_a_bad_declaration_is_one_line_naming_file_and_key_and_exit_1(project, _unused, case, line):
    stem = {"reserved": "labels", "builtin": "task_qc"}.get(case, case)
    name = "other" if case == "stem" else stem
    (project.root / "kinds" / f"{stem}.toml").write_text(_bad_toml(case, name), encoding="utf-8")
    for command in ("list", "check"):
        result = CliRunner().invoke(cli, ["kinds", command, "-p", str(project.root)])
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        errors = [x for x in result.stderr.splitlines() if x]
        assert len(errors) == 1 and errors[0].startswith(f"kinds/{stem}.toml: ") and line in errors[0]
    if case not in ("reserved", "builtin"):
        with pytest.raises(LabelError, match=f"kinds/{stem}.toml: "):
            get_kind(stem)  # other commands name the same line instead of loading the kind


BAD_ITEMS = [
    ({"id": "i1", "history": [], "preferences": []}, "key response_a: Field required"),
    ({**ITEMS[0], "colour": 1}, "key colour: Extra inputs are not permitted"),
    ({**ITEMS[0], "history": [{"content": "no role"}]}, "key history.0.role: Field required"),
    (
        {**ITEMS[0], "history": [{"role": "user", "content": "hi", "speaker": "me"}]},
        "key history.0.speaker: Extra inputs are not permitted",
    ),
    (
        {**ITEMS[0], "history": [{"role": "user", "content": "hi", "date": "3 Jan"}]},
        "key history.0.date: Value error, '3 Jan' is not an ISO 8601 date",
    ),
    ({**ITEMS[0], "preferences": "not a list"}, "key preferences: Input should be a valid list"),
    ({**ITEMS[0], "id": "bad\u202eid"}, "key id: Value error, an id cannot hold U+202E"),
    ({**ITEMS[0], "gold": {"better": "C"}}, "key gold.better: 'C' is not one of A, B, tie"),
    (ITEMS[0], "line 1"),  # the same id twice
]


@pytest.mark.parametrize(("bad", "message"), BAD_ITEMS)
def test_a_bad_item_file_is_one_line_naming_file_line_and_key_and_writes_nothing(
    project, tmp_path, bad, message
):
    declare(project.root)
    use_project_kinds(project.root)
    items = write_items(tmp_path / "items.jsonl", [ITEMS[0], bad])
    with pytest.raises(TaskFileError) as exc:
        work.create(project, "t", NAME, items=items)
    assert str(exc.value).startswith(f"{items}:2: ") and message in str(exc.value)
    assert project.store.count("tasks", kind=NAME) == 0


def test_import_through_the_cli_is_all_or_nothing_and_again_a_no_op(project, tmp_path):
    declare(project.root)
    items = write_items(tmp_path / "items.jsonl", [*ITEMS, {**ITEMS[0], "id": "g1", "gold": DECIDED["i1"]}])
    args = ["tasks", "import", "--kind", NAME, str(items), "--overlap", "2..3", "-p", str(project.root)]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert "imported 3 pairwise_alignment tasks" in first.output
    again = CliRunner().invoke(cli, args)
    assert "imported 0 pairwise_alignment tasks" in again.output
    tasks = {t.item_ref: t for t in project.store.labels.tasks(kind=NAME)}
    assert tasks["g1"].is_gold and tasks["g1"].gold_answer == DECIDED["i1"]
    assert tasks["i1"].payload["history"][0] == {"role": "user", "content": "<b>question 1</b>"}
    assert tasks["i1"].overlap_max == 3
    assert (project.root / "guidelines" / f"{NAME}.md").read_text().startswith("# Guidelines: Which response")
    refused = CliRunner().invoke(cli, ["tasks", "create", "--kind", NAME, "-p", str(project.root)])
    assert refused.exit_code == 1 and "prefkit tasks import --kind pairwise_alignment" in refused.output


def test_kinds_new_writes_an_example_that_checks_and_list_shows_where_kinds_come_from(project):
    new = CliRunner().invoke(cli, ["kinds", "new", "response_fit", "-p", str(project.root)])
    assert new.exit_code == 0 and (project.root / "kinds" / "response_fit.toml").is_file()
    again = CliRunner().invoke(cli, ["kinds", "new", "response_fit", "-p", str(project.root)])
    assert again.exit_code == 1 and "exists already" in again.output
    listed = CliRunner().invoke(cli, ["kinds", "list", "--json", "-p", str(project.root)])
    rows = {r["kind"]: r for r in json.loads(listed.output)}
    assert rows["response_fit"]["from"] == "kinds/response_fit.toml"
    assert rows["response_fit"]["questions"] == "follows (rating), problems (multi_label), note (text)"
    assert rows["task_qc"]["from"] == "built in"
    reserved = CliRunner().invoke(cli, ["kinds", "new", "cupid_raw", "-p", str(project.root)])
    assert reserved.exit_code == 1 and "reserved" in reserved.output


def test_release_settings_accept_the_declared_name(tmp_path):
    project = Project.init(tmp_path / "p")
    declare(project.root)
    cfg = project.root / "prefkit.toml"
    table = f'configs = ["{NAME}", "{NAME}_unverified"]\nalpha_min = {{default = 0.8, "{NAME}.tags" = 0.3}}'
    cfg.write_text(cfg.read_text().replace("alpha_min = 0.8", table, 1), encoding="utf-8")
    config = Project(project.root).config
    assert config.release.configs == [NAME, f"{NAME}_unverified"]
    assert config.release.alpha_for(NAME, "tags:y") == 0.3 and config.release.alpha_for(NAME, "order") == 0.8
    (project.root / "kinds" / f"{NAME}.toml").unlink()
    with pytest.raises(ConfigError, match=f"unknown config '{NAME}'"):
        Project(project.root).config  # noqa: B018


def test_the_declaration_is_pinned_with_the_first_items_and_follows_each_change_on_each_backend(
    any_project, tmp_path
):
    project = any_project
    declare(project.root)
    use_project_kinds(project.root, project.store)
    assert project.store.labels.kind_declarations() == {}
    work.create(project, "t", NAME, overlap="2", items=write_items(tmp_path / "items.jsonl"))
    project.store.accounts.add_user("ann1", "annotator", "a-long-password")
    pinned = project.store.labels.kind_declarations()[NAME]  # in the items' transaction
    assert pinned == get_kind(NAME).declaration.model_dump(mode="json")
    item = workflow.current_item(project, "ann1", NAME)
    workflow.submit(project, "ann1", item, ANSWERS["ann1"][item.task.item_ref])
    assert project.store.labels.kind_declarations()[NAME] == pinned
    path = project.root / "kinds" / f"{NAME}.toml"
    path.write_text(
        TOML + '[[questions]]\nname = "later"\ntype = "text"\nrequired = false\n', encoding="utf-8"
    )
    assert use_project_kinds(project.root, project.store) == {}
    item = workflow.current_item(project, "ann1", NAME)
    workflow.submit(project, "ann1", item, {**ANSWERS["ann1"][item.task.item_ref], "later": "added"})
    assert project.store.labels.kind_declarations()[NAME] == get_kind(NAME).declaration.model_dump(
        mode="json"
    )
    assert [q["name"] for q in project.store.labels.kind_declarations()[NAME]["questions"]][-1] == "later"


def test_an_ordinal_label_question_is_measured_as_ordinal_in_the_order_of_its_labels(project):
    (project.root / "kinds" / f"{NAME}.toml").write_text(
        TOML.replace('labels = ["A", "B", "tie"]', 'labels = ["A", "tie", "B"]\nordinal = true'),
        encoding="utf-8",
    )
    use_project_kinds(project.root)
    spec = get_kind(NAME).field("better")
    assert (spec.level, spec.choices) == ("ordinal", ("A", "tie", "B"))
    assert [f.name for f in get_kind(NAME).fields] == ["better", "strength", "tags:x", "tags:y", "order"]


def test_labels_export_and_import_back_write_nothing_new(project, tmp_path):
    _labelled(project, tmp_path)
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["labels", "export", str(out), "--kind", NAME, "-p", str(project.root)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and {(r["task_kind"], r["item_id"]) for r in rows} == {(NAME, "i1"), (NAME, "i2")}
    again = CliRunner().invoke(cli, ["labels", "import", str(out), "-p", str(project.root)])
    assert again.exit_code == 0 and "0 new event(s)" in again.output


def test_adaptive_overlap_gives_an_uncertain_item_one_more_annotator(project, tmp_path):
    declare(project.root)
    use_project_kinds(project.root, project.store)
    work.create(project, "t", NAME, overlap="2..3", items=write_items(tmp_path / "items.jsonl"))
    for who in ("ann1", "ann2"):
        project.store.accounts.add_user(who, "annotator", "a-long-password")
    regular = [t for t in project.store.labels.tasks(kind=NAME) if not t.audit]
    assert regular, "at least one item is not an audit item"
    target = regular[0]
    for who, better in (("ann1", "A"), ("ann2", "B")):
        while (item := workflow.current_item(project, who, NAME)).task.task_id != target.task_id:
            workflow.skip(project, who, item, "cannot judge")
        workflow.submit(project, who, item, {"better": better, "strength": 1, "order": ["m1", "m2", "m3"]})
    assert project.store.labels.task(target.task_id).overlap == 3


def test_the_dashboard_says_a_text_question_is_not_measured(project, tmp_path):
    rows = agreement_table(agreement_rows(_labelled(project, tmp_path).store, kind=NAME, n_boot=20))
    compared = {r["field"]: r["compared"] for r in rows}
    assert compared["why"] == "not measured (free text)" and compared["better"] == "people"


def test_a_field_added_after_labels_leaves_the_earlier_items_without_it(project, tmp_path):
    from prefkit.annotate_app.labelstudio.config import ls_kind
    from prefkit.curation.annotation.task_kinds import get_kind
    from prefkit.exports.declared import declared_configs
    from prefkit.exports.release_data import ConfigData

    _labelled(project, tmp_path)
    path = project.root / "kinds" / f"{NAME}.toml"
    path.write_text(TOML + '[[fields]]\nname = "source"\ntype = "text"\n', encoding="utf-8")
    assert use_project_kinds(project.root, project.store) == {}
    more = write_items(tmp_path / "more.jsonl", [{**ITEMS[0], "id": "i3", "source": "a forum"}])
    assert work.create(project, "t", NAME, overlap="3", items=more) == 1
    decided, _rest = declared_configs(project.store, get_kind(NAME), ConfigData, str)
    rows = [json.loads(line) for line in decided.splits["test"]]
    assert [(r["id"], r["source"]) for r in rows] == [("i1", None), ("i2", None)]
    old = project.store.labels.task(project.store.labels.task_ids_by_ref(NAME, ["i1"])["i1"])
    assert ls_kind(NAME).data(old)["source"] == ""


def test_per_annotator_and_dawid_skene_reliability_cover_every_measured_question(project, tmp_path):
    stats = annotator_stats(_labelled(project, tmp_path).store, kind=NAME)
    assert [s["annotator"] for s in stats] == ["ann1", "ann2", "ann3"]
    assert all(s["n_labels"] == 2 and s["reliability_model"] == "dawid_skene" for s in stats)
    assert set(stats[0]["confusion"]) == {"better", "strength", "tags:x", "tags:y", "order"}
    assert all(0 <= s["reliability"] <= 1 for s in stats)


def test_a_memory_qa_item_keeps_its_sessions_names_itself_and_ranks_its_texts(project, tmp_path):
    """Sessions and dates stay on their turns in the stored item (the release carries them); the item is
    named by its id and summary field; the ranking records the fields' names, decided by mean rank;
    guidelines and Label Studio show titles, the recorded value stays raw."""
    from memoryqa import ITEMS as QA
    from memoryqa import NAME as QA_NAME
    from memoryqa import TOML as QA_TOML
    from prefkit.annotate_app.labelstudio.declared import DeclaredConfig
    from prefkit.curation.annotation.task_kinds import item_name

    order = {
        "ann1": ["candidate_b", "candidate_a", "candidate_c"],
        "ann2": ["candidate_b", "candidate_c", "candidate_a"],
    }
    order["ann3"] = ["candidate_a", "candidate_b", "candidate_c"]
    rows = label_rows({w: {"q1": {"verdict": "correct", "best": o}} for w, o in order.items()}, QA_NAME)
    assert labelled(project, tmp_path, QA_TOML, QA_NAME, QA, rows) == (2, 3)
    kind, task = get_kind(QA_NAME), project.store.labels.task(get_kind(QA_NAME).task_id("q1"))
    assert task.payload["history"][0] == {**QA[0]["history"][0], "session": "Session 1", "date": "2024-01-03"}
    assert [t.get("session") for t in task.payload["history"]].count(None) == 15  # 3 of 18 turns open one
    assert item_name(task) == "q1 · Where does the user live now? (1)"
    assert (
        final_labels(project.store, QA_NAME)[task.task_id].values["best"] == order["ann1"]
    )  # means 1.7, 2, 2.3
    with pytest.raises(LabelError, match="best: put every one of candidate_a, candidate_b, candidate_c"):
        kind.validate({"verdict": "wrong", "best": ["candidate_a"]}, task)
    guide = kind.default_guidelines()
    assert "pick one of correct, wrong, Not answerable" in guide and "put Candidate A, Candidate B" in guide
    assert (
        "**Anything else (optional)** — write your answer." in guide and "(optional) (optional)" not in guide
    )
    config = DeclaredConfig(kind)
    assert '<Choice value="Not answerable" alias="not_answerable"' in config.xml()
    assert "Anything else (optional)(optional)" not in config.xml().replace(" ", "")
    listed = config.data(task)["best__values"]
    assert listed[1] == {"id": "candidate_b", "title": "Candidate B", "body": QA[0]["candidate_b"]}
    free = QA_TOML.replace(
        'values_from = ["candidate_a", "candidate_b", "candidate_c"]', 'values_from = "options"'
    )
    free += '[[fields]]\nname = "options"\ntype = "list"\n'
    declare(
        project.root, free.replace('summary = "question"', "").replace(QA_NAME, "memory_free"), "memory_free"
    )
    use_project_kinds(project.root)
    other = get_kind("memory_free")
    payload = {**QA[0], "options": ["Porto", "Lisbon"]}
    assert other.answers({"verdict": "wrong", "best": ["Lisbon", "Porto"]}, payload)["best"] == [
        "Lisbon",
        "Porto",
    ]
    with pytest.raises(LabelError, match="best: expected a list of Porto, Lisbon"):
        other.answers({"verdict": "wrong", "best": ["candidate_a", "Porto"]}, payload)
    assert other.summary(payload) == QA[0]["question"]  # the first text field by default
