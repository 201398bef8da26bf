"""Test data for the annotation app: generated-style sessions, preference pairs, AlpsBench packets
(:mod:`fixtures_alps`), users and tasks.

Sessions are written through the store's tables directly (dialogues, turns, sessions with a
``Session`` record without turns), the same rows the generation pipeline writes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fixtures_alps import write_packets
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.curation.store.content import PreferencePair
from prefkit.schemas.curation import Provenance
from prefkit.schemas.generation import ChecklistItem, ContextFactor, ContextualPreference, Session, Turn

PASSWORD = "correct-horse-9"
HOSTILE = '<script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2"> **bold** $x$'
USERS = (("alice", "annotator"), ("bob", "annotator"), ("maya", "maintainer"))


def session_record(i: int) -> Session:
    pref = ContextualPreference(
        text=f"Keep answers about project {i} under five bullet points.",
        family="Style",
        preference_type="length",
    )
    factor = ContextFactor(
        factor_id=f"f{i}", type="activity", name=f"Project {i}", background="A side project.",
        task_types=["planning"], preference=pref,
    )  # fmt: skip
    return Session(
        session_id=f"sess_{i:04d}", persona_id="p1", index=i + 1, timestamp="2026-01-01T00:00:00Z",
        context_factor=factor, preference=pref,
        checklist=[ChecklistItem(question="Is the reply at most five bullet points?"),
                   ChecklistItem(question="Does the reply avoid long paragraphs?")],
    )  # fmt: skip


def session_turns(i: int, hostile: bool) -> list[tuple[str, str]]:
    first = HOSTILE if hostile else f"Help me plan project {i}. I read this on my phone."
    return [
        ("user", first),
        ("assistant", "Here is a long plan with many paragraphs..."),
        ("user", "That is a lot to read on a small screen."),
        ("assistant", "- Step 1\n- Step 2\n- Step 3"),
    ]


def seed_sessions(project: Project, n: int, hostile_first: bool = False) -> None:
    for i in range(n):
        turns = [
            Turn(index=j, role=role, content=content)
            for j, (role, content) in enumerate(session_turns(i, hostile_first and i == 0))
        ]
        session = session_record(i).model_copy(update={"turns": turns})
        project.store.generation.add_session(session, {}, [None] * len(turns), Provenance(source="test"))


def seed_pairs(project: Project, n: int) -> None:
    pairs = [
        PreferencePair(f"pair_{i:04d}", f"Does the reply mention deadline {i}?", f"The user wants deadlines for task {i} called out.", "test-model")
        for i in range(n)
    ]  # fmt: skip
    project.store.content.add_preference_pairs(pairs, Provenance(source="test.pairs"))


def make_project(
    root: Path, n: int = 6, overlap: int = 2, alps: bool = False, hostile: bool = False
) -> Project:
    """A project with users, sessions, pairs and tasks of every kind; with ``alps``, ``n`` AlpsBench
    packets written by :mod:`fixtures_alps` are imported and given memory-verification tasks."""
    project = Project.init(root, name="app-test")
    for name, role in USERS:
        project.store.accounts.add_user(name, role, PASSWORD)
    seed_sessions(project, n, hostile_first=hostile)
    seed_pairs(project, n)
    create_tasks(project, "preference_expressed", overlap=overlap, gold_rate=0)
    create_tasks(project, "preference_match", overlap=overlap, gold_rate=0)
    if alps:
        from prefkit.pipelines.ingest import alpsbench

        packets = write_packets(root.parent / f"{root.name}-packets", n)
        project.store.content.import_bundle(alpsbench.build_bundle(packets))
        create_tasks(project, "memory_verify", overlap=overlap, gold_rate=0)
    return project


def clone_project(template: Project, dest: Path) -> Project:
    """A copy of a closed template project (building one costs seconds of argon2 hashing)."""
    template.close()
    shutil.copytree(template.root, dest)
    return Project(dest)


def project_fixtures(env: bool = False, **make: object):
    """The ``template`` (module scope, built once by :func:`make_project` with ``make``) and ``project`` (a
    fresh copy per test; with ``env``, also ``$PREFKIT_PROJECT``) fixtures of an app test module:
    ``template, project = project_fixtures(n=6, overlap=2)``."""

    @pytest.fixture(scope="module")
    def template(tmp_path_factory):
        project = make_project(tmp_path_factory.mktemp("tpl") / "proj", **make)
        project.close()
        return project

    @pytest.fixture
    def project(template, tmp_path, monkeypatch):
        project = clone_project(template, tmp_path / "proj")
        if env:
            monkeypatch.setenv("PREFKIT_PROJECT", str(project.root))
        yield project
        project.close()

    return template, project


#: Planted in every field the app displays: markup, a remote image, live-link candidates, a directive.
PAYLOAD = (
    '<img src="http://127.0.0.9:9/x.png" onerror="window.__pwned=1"> https://evil.example/p '
    "www.evil.example mail@evil.example [click](https://evil.example/l) ![i](https://evil.example/i.png) "
    ':red[red] $x$ <a href="https://evil.example/a">a</a>'
)


def hostile_tasks(batch: str = "wk" + PAYLOAD) -> list:
    """One task of every kind with ``PAYLOAD`` in every field a screen shows (ids and captions too)."""
    from prefkit.curation.annotation.task_kinds import get_kind

    turns = [{"index": 0, "role": "user", "content": "turn0 " + PAYLOAD},
             {"index": 1, "role": "assistant", "content": "turn1 " + PAYLOAD},
             {"index": 2, "role": "user", "content": "turn2 " + PAYLOAD}]  # fmt: skip
    memory = {"value": "value " + PAYLOAD, "label": "label " + PAYLOAD, "type": "type " + PAYLOAD,
              "evidence_text": "evidence " + PAYLOAD}  # fmt: skip
    payloads = {
        "preference_expressed": {
            "dialogue_id": "dlg " + PAYLOAD, "persona_id": "p", "session_index": 1, "turns": turns,
            "context_factor": "context " + PAYLOAD, "preference": "preference " + PAYLOAD,
            "checklist": ["first " + PAYLOAD + "?", "second " + PAYLOAD + "?"],
        },
        "preference_match": {
            "pair_id": "pair", "checklist_item": "item " + PAYLOAD, "candidate": "candidate " + PAYLOAD,
            "instance_id": None, "origin": "origin " + PAYLOAD,
        },
        "memory_verify": {
            "dialogue_id": "dlg " + PAYLOAD, "turns": turns,
            "candidates": [{"key": f"model {PAYLOAD}:0", "model": "model " + PAYLOAD, "memory": memory,
                            "valid": False, "problems": ["problem " + PAYLOAD],
                            "evidence_flags": ["flag " + PAYLOAD], "group": 0}],
        },
    }  # fmt: skip
    return [get_kind(k).make_task("ref " + PAYLOAD, p, 3, batch) for k, p in payloads.items()]


HOSTILE_LABELS = {
    "preference_expressed": ({"items": [{"item": 0, "expressed": True, "evidence": [0]}, {"item": 1, "expressed": False}]},
                             {"items": [{"item": 0, "expressed": False}, {"item": 1, "expressed": True, "evidence": [2]}]}),
    "preference_match": ({"coverage": "fully"}, {"coverage": "not_covered"}),
    "memory_verify": ({"decisions": [{"key": f"model {PAYLOAD}:0", "decision": "accept"}]},
                      {"decisions": [{"key": f"model {PAYLOAD}:0", "decision": "reject", "reason": "other"}]}),
}  # fmt: skip


def make_hostile_project(root: Path) -> Project:
    """Tasks of every kind with ``PAYLOAD`` everywhere; alice and bob disagree on each (with the
    payload as their comment), carol has them open, maya adjudicates."""
    from prefkit.curation.annotation import workflow

    project = Project.init(root, name="hostile")
    for name, role in (*USERS, ("carol", "annotator")):
        project.store.accounts.add_user(name, role, PASSWORD)
    project.store.labels.add_tasks(hostile_tasks())
    for kind, (first, second) in HOSTILE_LABELS.items():
        for who, values in (("alice", first), ("bob", second)):
            item = workflow.current_item(project, who, kind)
            workflow.submit(project, who, item, values, comment="comment " + PAYLOAD)
    return project
