"""A declared task kind with every question type, its items and three annotators' answers, shared
by the tests of declared kinds (library, CLI, browser, Label Studio, release). The agreement values
and decisions these answers give are computed by hand in tests/test_declared_kinds.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from prefkit.curation.annotation import work
from prefkit.curation.project import Project

NAME = "pairwise_alignment"

#: The declaration as its users write it (a file beside this module).
TOML = (Path(__file__).parent / f"{NAME}.toml").read_text(encoding="utf-8")

ITEMS = [
    {
        "id": f"i{n}",
        "history": [
            {"role": "user", "content": f"<b>question {n}</b>"},
            {"role": "assistant", "content": "an answer"},
        ],
        "preferences": ["short answers", "no jargon"],
        "response_a": f"response **{n}**",
    }
    for n in (1, 2)
]

#: ``{annotator: {item id: values}}``
ANSWERS = {
    "ann1": {
        "i1": {"better": "A", "strength": 1, "tags": ["x"], "order": ["m1", "m2", "m3"], "why": "clear"},
        "i2": {"better": "B", "strength": 4, "tags": ["y"], "order": ["m3", "m2", "m1"]},
    },
    "ann2": {
        "i1": {"better": "A", "strength": 1, "tags": ["x", "y"], "order": ["m1", "m2", "m3"]},
        "i2": {"better": "B", "strength": 4, "tags": ["y"], "order": ["m3", "m1", "m2"]},
    },
    "ann3": {
        "i1": {"better": "B", "strength": 2, "tags": ["x"], "order": ["m2", "m1", "m3"]},
        "i2": {"better": "B", "strength": 5, "order": ["m2", "m3", "m1"]},
    },
}

#: The decisions (worked out in tests/test_declared_kinds.py).
DECIDED = {
    "i1": {"better": "A", "strength": 1, "tags": ["x"], "order": ["m1", "m2", "m3"]},
    "i2": {"better": "B", "strength": 4, "tags": ["y"], "order": ["m3", "m2", "m1"]},
}


def declare(root: Path, toml: str = TOML, name: str = NAME) -> Path:
    """The kind declared in the project at ``root`` (another kind's ``toml`` and ``name`` too)."""
    path = Path(root) / "kinds" / f"{name}.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(toml, encoding="utf-8")
    return path


def write_items(path: Path, items: list[dict] | None = None) -> Path:
    Path(path).write_text("".join(json.dumps(i) + "\n" for i in items or ITEMS), encoding="utf-8")
    return Path(path)


def declared_project(
    root: Path, title: str | None, overlap: str = "3", toml: str = TOML, name: str = NAME, items=None
) -> Project:
    """A project called ``title`` at ``root`` with the kind declared and its items (these or another
    kind's) made batch ``t`` at ``overlap``."""
    Project.init(root, name=title).close()
    declare(root, toml, name)
    project = Project(root)
    work.create(project, "t", name, overlap=overlap, items=write_items(root / "items.jsonl", items or ITEMS))
    return project


def labelled(
    project: Project, tmp_path: Path, toml: str = TOML, name: str = NAME, items=None, rows=None
) -> tuple[int, int]:
    """The kind declared in ``project`` (read back as the project's kinds), its items made tasks at
    overlap 3 and the answers (``rows``: these or another kind's) imported by their annotators; how
    many tasks and labels were written."""
    from prefkit.curation.annotation.declared import use_project_kinds
    from prefkit.curation.annotation.labels_io import import_labels

    rows = label_rows() if rows is None else rows
    declare(project.root, toml, name)
    use_project_kinds(project.root, project.store)
    made = work.create(
        project, "t", name, overlap="3", items=write_items(tmp_path / "items.jsonl", items or ITEMS)
    )
    for who in sorted({r["annotator"] for r in rows}):
        project.store.accounts.add_user(who, "annotator", "a-long-password")
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return made, import_labels(project.store, labels).written


def app_project(project: Project, monkeypatch) -> Iterator[Project]:
    """``project`` with alice and bob (annotators) and maya (maintainer), the app's project, closed after."""
    from appkit import PASSWORD

    for who, role in (("alice", "annotator"), ("bob", "annotator"), ("maya", "maintainer")):
        project.store.accounts.add_user(who, role, PASSWORD)
    monkeypatch.setenv("PREFKIT_PROJECT", str(project.root))
    yield project
    project.close()


def label_rows(answers: dict | None = None, name: str = NAME) -> list[dict]:
    """The answers (``{annotator: {item id: values}}``, these or another kind's) as a labels file's rows
    (``prefkit labels import``)."""
    return [
        {
            "annotator": who,
            "task_kind": name,
            "item_id": item,
            "action": "label",
            "timestamp": "2026-01-01T00:00:00+00:00",
            "values": values,
        }
        for who, mine in (ANSWERS if answers is None else answers).items()
        for item, values in mine.items()
    ]
