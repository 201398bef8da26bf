"""Declarations, guideline files and imports under hostile input: entries of kinds/ that are not
declarations, a declaration changed under recorded answers and gold, names that would collide with the
release's own, guidelines files outside the project or not text. Every case reads the store back."""

from __future__ import annotations

import json
import os
import re

import pytest
from click.testing import CliRunner
from declaredkind import DECIDED, ITEMS, NAME, TOML, declare, labelled, write_items
from prefkit.cli import cli
from prefkit.curation.annotation import work
from prefkit.curation.annotation.declared import use_project_kinds
from prefkit.curation.project import Project


def _run(project: Project, *args: str):
    result = CliRunner().invoke(cli, [*args, "-p", str(project.root)])
    assert "Traceback" not in result.output and not isinstance(result.exception, OSError | RecursionError)
    return result


#: An entry of kinds/ that is no declaration, and the line ``kinds check`` prints for it.
SKIPPED = [
    (lambda p: p.mkdir(), "x.toml", "not a regular file"),
    (lambda p: p.symlink_to("alice@host.1234:1700000000"), ".#response_fit.toml", "not a regular file"),
    (lambda p: os.mkfifo(p), "fifo.toml", "not a regular file"),
    (lambda p: p.write_text('name = "Bad"'), "Bad-Name.toml", "not a kind's name"),
    (lambda p: p.write_text("x"), "a" * 65 + ".toml", "not a kind's name"),
    (lambda p: p.write_text("x"), "response_fit.toml~", "not a .toml file"),
]


@pytest.mark.slow
def test_entries_that_are_no_declaration_are_skipped_in_one_line_each_and_every_command_works(project):
    declare(project.root)
    for make, name, _why in SKIPPED:
        make(project.root / "kinds" / name)
    checked = _run(project, "kinds", "check")
    assert checked.exit_code == 0, checked.output
    lines = checked.output.splitlines()
    assert lines[0].startswith(f"kinds/{NAME}.toml: ok")
    assert sorted(line.split(" (")[0] for line in lines[1:]) == sorted(
        f"kinds/{name}: skipped: {why}" for _, name, why in SKIPPED
    )
    for command in (
        ("kinds", "list"),
        ("tasks", "list"),
        ("agreement",),
        ("release", "check"),
        ("guidelines", "list"),
        ("adjudicate", "queue"),
    ):
        result = _run(project, *command)
        assert result.exit_code in (0, 1) and "skipped" not in result.output, (command, result.output)
    assert NAME in _run(project, "kinds", "list").output


def test_a_declaration_nested_too_deep_is_refused_in_one_line_and_the_others_still_load(project):
    declare(project.root)
    (project.root / "kinds" / "deep.toml").write_text("title = " + "[" * 20000 + "]" * 20000)
    result = _run(project, "kinds", "check")
    assert result.exit_code == 1
    assert result.stderr.strip() == "kinds/deep.toml: nested too deep to be a declaration"
    assert f"kinds/{NAME}.toml: ok" in result.stdout


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("a" * 300, "use at most 64 lower-case letters"),
        ("../prefkit", "'../prefkit': use at most 64"),
        ("Upper", "'Upper': use at most 64"),
    ],
)
def test_kinds_new_refuses_a_name_no_kind_can_take_in_one_line(project, name, line):
    result = _run(project, "kinds", "new", name)
    assert result.exit_code == 1 and line in result.output and len(result.output.splitlines()) == 1
    assert sorted(p.name for p in (project.root / "kinds").iterdir()) == []


def _check(project: Project, toml: str):
    (project.root / "kinds" / f"{NAME}.toml").write_text(toml, encoding="utf-8")
    return _run(project, "kinds", "check")


REQUIRED = '[[questions]]\nname = "later"\ntype = "label"\nlabels = ["p", "q"]\n'

#: A change of the declaration under six labels (docs: tests/declaredkind.py), and what it orphans.
ORPHANING = [
    (('[[questions]]\nname = "why"', '[[questions]]\nname = "because"'), "1 label", "why: not a question"),
    (('labels = ["A", "B", "tie"]', 'labels = ["A", "tie"]'), "4 labels", "better: 'B' is not one of A, tie"),
    (("values = [1, 2, 3, 4, 5]", "values = [1, 2, 3]"), "3 labels", "strength: 4 is not one of 1, 2, 3"),
    (("max_length = 200", "max_length = 3"), "1 label", "why: at most 3 characters (this one has 5)"),
    (
        ('required = false\n[[questions]]\nname = "order"', 'required = true\n[[questions]]\nname = "order"'),
        "1 label",
        "tags: required",
    ),
    (("", REQUIRED), "6 labels", "later: required"),
]


@pytest.mark.parametrize(("change", "count", "first"), ORPHANING)
def test_a_change_orphaning_recorded_answers_is_refused_in_one_line_and_the_pin_kept(
    project, tmp_path, change, count, first
):
    assert labelled(project, tmp_path) == (2, 6)
    pinned = project.store.labels.kind_declarations()[NAME]
    toml = TOML.replace(*change) if change[0] else TOML + change[1]
    assert toml != TOML
    result = _check(project, toml)
    assert result.exit_code == 1
    assert result.stderr.strip().startswith(
        f"kinds/{NAME}.toml: the change orphans {count} of {NAME} ({first}"
    ), result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert Project(project.root).store.labels.kind_declarations()[NAME] == pinned


def test_an_accepted_change_is_pinned_and_the_next_is_held_to_it(project, tmp_path):
    assert labelled(project, tmp_path) == (2, 6)
    toml = TOML.replace('labels = ["A", "B", "tie"]', 'labels = ["A", "B"]')  # no label said tie
    assert _check(project, toml).exit_code == 0
    store = Project(project.root).store
    better = next(q for q in store.labels.kind_declarations()[NAME]["questions"] if q["name"] == "better")
    assert better["labels"] == ["A", "B"]
    removed = toml.replace('[[questions]]\nname = "tags"', '[[questions]]\nname = "tags_gone"')
    result = _check(project, removed)  # 5 labels answered tags
    assert result.exit_code == 1 and "orphans 5 labels" in result.stderr


def test_a_field_retyped_under_items_and_gold_a_change_leaves_unreachable_are_refused(project, tmp_path):
    declare(project.root)
    use_project_kinds(project.root, project.store)
    gold = {**ITEMS[0], "id": "g1", "gold": {**DECIDED["i1"], "strength": 5}}
    work.create(project, "t", NAME, items=write_items(tmp_path / "items.jsonl", [*ITEMS, gold]))
    retyped = _check(
        project, TOML.replace('name = "response_a"\ntype = "text"', 'name = "response_a"\ntype = "chat"')
    )
    assert retyped.exit_code == 1
    assert retyped.stderr.strip() == (
        f"kinds/{NAME}.toml: field 'response_a' is retyped (text -> chat) but 3 items hold it"
    )
    rescaled = _check(project, TOML.replace("values = [1, 2, 3, 4, 5]", "values = [1, 2, 3]"))
    assert rescaled.exit_code == 1
    assert "orphans 1 gold answer of" in rescaled.stderr and "strength: 5 is not one of" in rescaled.stderr
    assert _check(project, TOML).exit_code == 0


def _kind(name: str = "k", field: str = "f", question: str = "q") -> str:
    return (
        f'name = "{name}"\ntitle = "T"\n[[fields]]\nname = "{field}"\ntype = "text"\n'
        f'[[questions]]\nname = "{question}"\ntype = "label"\nlabels = ["true", "null"]\n'
    )


@pytest.mark.parametrize(
    ("stem", "toml", "line"),
    [
        *[(n, _kind(name=n), f"key name: {n!r} is reserved") for n in ("metadata", "gates", "label_summary")],
        *[
            ("k", _kind(field=n), f"key fields[1].name: {n!r} is used twice or reserved")
            for n in ("answers", "split")
        ],
        *[
            ("k", _kind(question=n), f"key questions[1].name: {n!r} is used twice or reserved")
            for n in ("id", "meta", "n_labels", "decided_by")
        ],
    ],
)
def test_names_the_release_uses_itself_are_refused_naming_the_key(project, stem, toml, line):
    (project.root / "kinds" / f"{stem}.toml").write_text(toml, encoding="utf-8")
    result = _run(project, "kinds", "check")
    assert result.exit_code == 1 and result.stderr.strip().startswith(f"kinds/{stem}.toml: {line}"), (
        result.stderr
    )


def test_a_kind_named_yes_with_yaml_words_for_names_ships_a_release_datasets_loads(
    project, tmp_path, monkeypatch
):
    from prefkit.exports.release_integrity import verify_release
    from test_release_support import cut, duckdb_rows, hub_offline

    rows = [
        {
            "annotator": a,
            "task_kind": "yes",
            "item_id": i,
            "action": "label",
            "timestamp": "2026-01-01T00:00:00Z",
            "values": {"on": "true"},
        }
        for a in ("ann1", "ann2", "ann3")
        for i in ("i1", "i2")
    ]
    items = [{"id": "i1", "no": "first"}, {"id": "i2", "no": "second"}]
    assert labelled(project, tmp_path, _kind("yes", "no", "on"), "yes", items, rows) == (2, 6)
    result = cut(project, "0.1.0", override="two items, no gold")
    assert verify_release(result.path).problems == []
    datasets = hub_offline(monkeypatch)
    labels = datasets.load_dataset(str(result.path), "labels", cache_dir=str(tmp_path / "hf"))
    assert list(labels) == ["yes"] and labels["yes"].num_rows == 6  # the split is the kind
    loaded = datasets.load_dataset(str(result.path), "yes", cache_dir=str(tmp_path / "hf"))["test"]
    assert loaded["no"] == ["first", "second"] and loaded["answers"] == [{"on": "true"}] * 2
    assert duckdb_rows(result.path, 'SELECT count(*) FROM "yes"') == [(2,)]
    card = result.path / "README.md"
    card.write_text(card.read_text().replace('config_name: "yes"', "config_name: yes"))
    problems = verify_release(result.path).problems
    assert [p for p in problems if "config_name" in p] == [
        "README.md: configs[3].config_name reads as True (bool), not its folder's name 'yes'",
        "README.md: dataset_info[3].config_name reads as True (bool), not a string",
    ]


def test_the_reserved_table_names_are_the_release_databases_own():
    from prefkit.exports.duckdb_export import VIEWS
    from prefkit.schemas.config import RELEASE_TABLES

    assert sorted(RELEASE_TABLES) == sorted({"gates", "agreement", "metadata", *VIEWS})


SECRET = "OPENAI_API_KEY=sk-never-shown\n"

#: A guidelines file no one may be shown, and the end of its one line.
BAD_GUIDELINES = [
    (lambda p: p.write_bytes(b"caf\xe9\n"), "not UTF-8 text (byte 3 is 0xe9)"),
    (lambda p: p.mkdir(), "not a regular file"),
    (lambda p: os.mkfifo(p), "not a regular file"),
    (lambda p: p.symlink_to(p.parent / "gone.md"), "not a regular file"),
    (lambda p: p.symlink_to(p.parents[2] / "secret.env"), "outside the project; only its own files are read"),
]


@pytest.mark.parametrize(("make", "line"), BAD_GUIDELINES)
def test_a_guidelines_file_that_cannot_be_shown_is_one_line_everywhere_and_draws_nothing(
    project, tmp_path, make, line
):
    from declaredkind import label_rows
    from prefkit.curation.annotation import workflow
    from prefkit.schemas.common import InputError

    (project.root.parent / "secret.env").write_text(SECRET)
    declare(project.root)
    use_project_kinds(project.root, project.store)
    work.create(project, "t", NAME, items=write_items(tmp_path / "items.jsonl"))
    project.store.accounts.add_user("ann1", "annotator", "a-long-password")
    path = project.root / "guidelines" / f"{NAME}.md"
    path.unlink()
    make(path)
    want = f"guidelines/{NAME}.md: {line}"
    listed = _run(project, "guidelines", "list")
    assert listed.exit_code == 1 and listed.stderr.strip() == f"error: {want}" and "sk-" not in listed.output
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in label_rows() if r["annotator"] == "ann1"))
    imported = _run(project, "labels", "import", str(labels))
    assert imported.exit_code == 1 and imported.stderr.strip().endswith(want), imported.output
    with pytest.raises(InputError, match=re.escape(want)):
        workflow.current_item(project, "ann1", NAME)
    assert project.store.count("label_events") == 0 and project.store.count("assignments") == 0
    texts = [project.store.guidelines.text(NAME, v.version) for v in project.store.guidelines.versions(NAME)]
    assert "sk-never-shown" not in json.dumps(texts)  # no version was taken from it


@pytest.mark.parametrize(
    ("given", "line"),
    [
        ("{outside}/secret.env", "outside the project"),
        ("../secret.env", "outside the project"),
        ("guidelines/link.md", "outside the project"),
        ("guidelines", "not a regular file"),
    ],
)
def test_a_declarations_guidelines_are_read_only_from_inside_the_project(project, given, line):
    (project.root.parent / "secret.env").write_text(SECRET)
    (project.root / "guidelines" / "link.md").symlink_to(project.root.parent / "secret.env")
    given = given.format(outside=project.root.parent)
    declare(project.root, TOML.replace('title = "Which', f'guidelines = "{given}"\ntitle = "Which', 1))
    result = _run(project, "kinds", "check")
    assert result.exit_code == 1 and "sk-" not in result.output
    assert result.stderr.strip() == f"kinds/{NAME}.toml: key guidelines: {given}: {line}" + (
        "; only its own files are read" if line.startswith("outside") else ""
    )


def test_guidelines_saved_in_place_are_versioned_only_complete(project):
    import threading

    from prefkit.curation.annotation.guidelines import current_version, version_of

    path = project.guidelines_dir / "task_qc.md"
    complete = "# Task QC\n\nCheck each task.\n"
    path.write_text("")  # truncated: the save's first step
    threading.Timer(0.1, lambda: path.write_text(complete)).start()
    assert current_version(project, project.store, "task_qc") == version_of(complete)
    versions = project.store.guidelines.versions("task_qc")
    assert [project.store.guidelines.text("task_qc", v.version) for v in versions] == [complete]


def test_importing_an_existing_id_with_other_content_is_refused_naming_the_ids(project, tmp_path):
    declare(project.root)
    args = ["tasks", "import", "--kind", NAME]
    assert _run(project, *args, str(write_items(tmp_path / "items.jsonl"))).exit_code == 0
    changed = [{**ITEMS[0], "response_a": "other text"}, ITEMS[1], {**ITEMS[0], "id": "i9"}]
    again = _run(project, *args, str(write_items(tmp_path / "again.jsonl", changed)))
    assert again.exit_code == 1
    assert again.stderr.strip() == (
        f"error: {tmp_path}/again.jsonl: 1 item(s) already in the project with other content: i1 "
        "(an import only adds items: give new ids)"
    )
    stored = {
        t.item_ref: t.payload["response_a"] for t in Project(project.root).store.labels.tasks(kind=NAME)
    }
    assert stored == {"i1": "response **1**", "i2": "response **2**"}  # i9 not written either


def test_a_repeat_holds_its_answers_against_a_change_as_a_label_does(project, tmp_path):
    from declaredkind import ANSWERS, label_rows
    from prefkit.curation.annotation.labels_io import import_labels

    assert labelled(project, tmp_path) == (2, 6)
    [row] = label_rows({"ann2": {"i2": {**ANSWERS["ann2"]["i2"], "why": "longer answer"}}})
    again = tmp_path / "repeat.jsonl"
    again.write_text(json.dumps({**row, "repeat": True}) + "\n", encoding="utf-8")
    assert import_labels(project.store, again).written == 1
    assert len(project.store.repeats.events(kind=NAME)) == 1
    result = _check(project, TOML.replace("max_length = 200", "max_length = 5"))  # "clear" still fits
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"kinds/{NAME}.toml: the change orphans 1 repeat of {NAME} (why: at most 5 characters (this one has 13))"
    )
