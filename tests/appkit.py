"""Test data for the annotation app: generated-style sessions, preference pairs, users and tasks.

Sessions are written through the store's tables directly (dialogues, turns, sessions with a
``Session`` record without turns), the same rows the generation pipeline writes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from curation.project import Project
from curation.task_admin import create_tasks
from schemas.common import utcnow
from schemas.curation import Provenance
from schemas.generation import ChecklistItem, ContextFactor, ContextualPreference, Session

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
    store, now = project.store, utcnow()
    with store.write() as conn:
        for i in range(n):
            rec = session_record(i)
            conn.execute(store.t["dialogues"].insert(), {
                "dialogue_id": rec.session_id, "origin": "generated", "persona_id": "p1", "session_index": rec.index,
                "needs_reverification": False, "schema_version": "1.0", "created_at": now,
            })  # fmt: skip
            for j, (role, content) in enumerate(session_turns(i, hostile_first and i == 0)):
                conn.execute(store.t["turns"].insert(), {
                    "dialogue_id": rec.session_id, "turn_index": j, "role": role, "content": content,
                })  # fmt: skip
            conn.execute(store.t["sessions"].insert(), {
                "session_id": rec.session_id, "persona_id": "p1", "session_index": rec.index,
                "record_json": store.dumps(rec.model_dump(mode="json", exclude={"turns"})), "schema_version": "1.0",
            })  # fmt: skip


def seed_pairs(project: Project, n: int) -> None:
    pairs = [
        {"pair_id": f"pair_{i:04d}", "checklist_item": f"Does the reply mention deadline {i}?",
         "candidate": f"The user wants deadlines for task {i} called out.", "origin": "test-model",
         "instance_id": None, "meta_json": None}
        for i in range(n)
    ]  # fmt: skip
    project.store.add_preference_pairs(pairs, Provenance(source="test.pairs"))


def copy_packets(alps: Path, dest: Path, n: int) -> Path:
    """The first ``n`` real AlpsBench packets copied to ``dest`` (a small, fast import)."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(alps.rglob("sess_*.json"))[:n]:
        shutil.copy(f, dest / f.name)
    return dest


def make_project(
    root: Path, n: int = 6, overlap: int = 2, alps: Path | None = None, hostile: bool = False
) -> Project:
    """A project with users, sessions, pairs (and AlpsBench packets) and tasks of every kind."""
    project = Project.init(root, name="app-test")
    for name, role in USERS:
        project.store.add_user(name, role, PASSWORD)
    seed_sessions(project, n, hostile_first=hostile)
    seed_pairs(project, n)
    create_tasks(project, "preference_expressed", overlap=overlap, gold_rate=0)
    create_tasks(project, "preference_match", overlap=overlap, gold_rate=0)
    if alps is not None:
        from pipelines.ingest import alpsbench

        packets = copy_packets(alps, root.parent / f"{root.name}-packets", n)
        project.store.import_bundle(alpsbench.build_bundle(packets))
        create_tasks(project, "memory_verify", overlap=overlap, gold_rate=0)
    return project


def clone_project(template: Project, dest: Path) -> Project:
    """A copy of a closed template project (building one costs seconds of argon2 hashing)."""
    template.close()
    shutil.copytree(template.root, dest)
    return Project(dest)
