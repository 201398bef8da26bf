"""Property tests over declarations and label files of declared kinds: any generated declaration
either passes ``prefkit kinds check`` and then takes items, gives its app form and Label Studio config,
takes labels and cuts a release ``datasets`` loads, or is refused in one line naming its file; any
generated label file is imported whole or refused in one line naming file and line, writing nothing."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from click.testing import CliRunner
from declaredkind import ANSWERS, ITEMS, NAME, declare, label_rows, write_items
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from prefkit.cli import cli
from prefkit.curation.annotation import work
from prefkit.curation.annotation.declared import use_project_kinds
from prefkit.curation.annotation.labels_io import LabelsFileError, import_labels
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.project import Project


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


#: Names a user may give, the release's own and YAML's words among them.
NAMES = st.sampled_from(
    ["k", "yes", "null", "on", "note", "metadata", "answers", "split", "id", "Bad", "x" * 70]
)
CHOICES = st.lists(
    st.sampled_from(["yes", "no", "null", "true", "1", "é", "", "a:b"]), min_size=1, max_size=3
)
FIELD = st.fixed_dictionaries({"name": NAMES, "type": st.sampled_from(["text", "chat", "list", "number"])})


def _question(type_: str, **keys: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"name": NAMES, "type": st.just(type_), **keys}, optional={"required": st.booleans()}
    )


QUESTION = st.one_of(
    _question("label", labels=CHOICES),
    _question("multi_label", labels=CHOICES),
    _question("rating", values=st.lists(st.integers(-2, 9), min_size=1, max_size=4)),
    _question("ranking", values=CHOICES),
    _question("text", max_length=st.integers(0, 40)),
    _question("span", labels=CHOICES, field=NAMES),
)
DECLARATION = st.fixed_dictionaries(
    {
        "name": NAMES,
        "title": st.sampled_from(["T", "Yes: a [title]", ""]),
        "fields": st.lists(FIELD, min_size=1, max_size=2),
        "questions": st.lists(QUESTION, min_size=1, max_size=3),
    }
)


def _toml(decl: dict[str, Any]) -> str:
    """A declaration as its user writes it (strings as TOML basic strings: JSON's are)."""

    def keys(table: dict[str, Any]) -> str:
        return "".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in table.items())

    out = keys({k: decl[k] for k in ("name", "title")})
    for key in ("fields", "questions"):
        out += "".join(f"[[{key}]]\n{keys(table)}" for table in decl[key])
    return out


def _value(type_: str) -> Any:
    return {"text": "Take the canal bike lane", "chat": [{"role": "user", "content": "I cycle daily"}]}.get(
        type_, ["short answers"]
    )


def _answer(q, payload: dict[str, Any]) -> Any:
    """An answer every annotator gives: the first choice, the choices in order, the field's first word."""
    if q.type == "span":
        shown = payload[q.field]
        text = shown[0]["content"] if isinstance(shown, list) else shown
        span = {"start": 0, "end": text.index(" "), "label": q.labels[0]}
        return [{**span, "turn": 0} if isinstance(shown, list) else span]
    return {
        "label": lambda: q.labels[0],
        "multi_label": lambda: q.labels[:1],
        "rating": lambda: q.values[0],
        "ranking": lambda: list(q.values),
        "text": lambda: "ok"[: q.max_length],
    }[q.type]()


@pytest.mark.slow
@_settings(30)
@given(decl=DECLARATION)
@example(
    decl={
        "name": "yes",
        "title": "Yes: a [title]",
        "fields": [{"name": "on", "type": "chat"}, {"name": "note", "type": "text"}],
        "questions": [
            {"name": "k", "type": "span", "labels": ["null"], "field": "on"},
            {"name": "null", "type": "label", "labels": ["true", "no"]},
            {"name": "x", "type": "ranking", "values": ["yes", "é"], "required": False},
        ],
    }
)
def test_property_a_declaration_is_refused_in_one_line_or_goes_all_the_way_to_a_release(
    tmp_path_factory, monkeypatch, decl
):
    from prefkit.annotate_app.forms import form_for
    from prefkit.annotate_app.labelstudio.config import ls_kind
    from prefkit.exports.release_integrity import verify_release
    from test_release_support import cut, hub_offline

    root = tmp_path_factory.mktemp("decl") / "p"
    Project.init(root).close()
    name = decl["name"]
    (root / "kinds" / f"{name}.toml").write_text(_toml(decl), encoding="utf-8")
    checked = CliRunner().invoke(cli, ["kinds", "check", "-p", str(root)])
    assert "Traceback" not in checked.output
    assert checked.exception is None or isinstance(checked.exception, SystemExit)
    if checked.exit_code == 1:
        assert len(checked.stderr.splitlines()) == 1 and checked.stderr.startswith(f"kinds/{name}.toml: ")
        event("refused")
        return
    assert checked.exit_code == 0, checked.output
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", name):
        assert checked.stdout.startswith(f"kinds/{name}.toml: skipped: not a kind's name")
        return
    project = Project(root)
    kind = get_kind(name)
    items = [{"id": f"i{n}", **{f.name: _value(f.type) for f in kind.declaration.fields}} for n in (1, 2)]
    assert work.create(project, "t", name, overlap="3", items=write_items(root / "items.jsonl", items)) == 2
    tasks = project.store.labels.tasks(kind=name)
    form = form_for(name)
    assert [form.summary(t) for t in tasks] and ET.fromstring(ls_kind(name).xml()).tag == "View"
    rows = [
        {"annotator": who, "task_kind": name, "item_id": t.item_ref, "action": "label",
         "timestamp": "2026-01-01T00:00:00Z",
         "values": {q.name: _answer(q, t.payload) for q in kind.declaration.questions}}
        for who in ("ann1", "ann2", "ann3") for t in tasks
    ]  # fmt: skip
    for who in ("ann1", "ann2", "ann3"):
        project.store.accounts.add_user(who, "annotator", "a-long-password")
    labels = root / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert import_labels(project.store, labels).written == 6
    result = cut(project, "0.1.0", override="a generated kind")
    assert verify_release(result.path).problems == []
    datasets = hub_offline(monkeypatch)
    mine = {c: n for c, n in result.manifest.counts.items() if c == name or c.startswith(f"{name}_")}
    assert sum(mine.values()) >= 2
    for config, count in mine.items():
        ds = datasets.load_dataset(str(result.path), config, cache_dir=str(root / "hf"))
        assert sum(split.num_rows for split in ds.values()) == count
    event("released")
    project.close()


@pytest.fixture(scope="module")
def labelled_kind(tmp_path_factory):
    root = tmp_path_factory.mktemp("labels") / "p"
    Project.init(root).close()
    declare(root)
    project = Project(root)
    use_project_kinds(root, project.store)
    work.create(project, "t", NAME, overlap="3", items=write_items(root / "items.jsonl"))
    for who in ("ann1", "ann2"):
        project.store.accounts.add_user(who, "annotator", "a-long-password")
    yield project
    project.close()


ANSWER = st.one_of(st.none(), st.integers(-1, 6), st.sampled_from(["A", "B", "tie", "x", "", "m1"]),
                   st.lists(st.sampled_from(["x", "y", "z", "m1", "m2", "m3"]), max_size=3))  # fmt: skip
ROW = st.fixed_dictionaries(
    {
        "annotator": st.sampled_from(["ann1", "ann2", "nobody"]),
        "task_kind": st.sampled_from([NAME, "vibes"]),
        "item_id": st.sampled_from([i["id"] for i in ITEMS] + ["i9"]),
        "action": st.sampled_from(["label", "label", "skip"]),
        "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "yesterday"]),
        "values": st.dictionaries(
            st.sampled_from(["better", "strength", "tags", "order", "why", "x"]), ANSWER
        ),
    },
    optional={"repeat": st.sampled_from([False, 1, "true"]), "time_spent_s": st.sampled_from([1.5, -1])},
)


@pytest.mark.slow
@_settings(50)
@given(rows=st.lists(ROW, min_size=1, max_size=3))
@example(rows=label_rows({"ann1": {"i1": ANSWERS["ann1"]["i1"]}}))
def test_property_a_label_file_is_imported_whole_or_refused_in_one_line_writing_nothing(labelled_kind, rows):
    store = labelled_kind.store
    path = labelled_kind.root / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    before = store.count("label_events")
    try:
        written = import_labels(store, path).written
    except LabelsFileError as exc:
        line = str(exc)
        assert "\n" not in line and re.match(rf"{re.escape(str(path))}:[1-3]: \w", line), line
        assert store.count("label_events") == before
        event("refused")
    else:
        assert 0 <= written <= len(rows) and store.count("label_events") == before + written
        event("imported")
