"""``make demo`` / ``prefkit demo``: a complete project built on embedded defaults, no key, no server.

Fills a project with offline-generated CUPID-style sessions and instances, the bundled AlpsBench-format
example packets, preference-matching pairs built from the instances (with gold answers for the
self-pairs), demo accounts and tasks of all three kinds, so the annotation app has real work to show.
Every step is idempotent: running the demo again reuses what is there. Offline content is marked
offline in provenance, so a release of the demo project is refused unless offline content is allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

from prefkit.curation.annotation.kinds.preference_match import item_ref
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.pipelines.generation.run import generate
from prefkit.pipelines.ingest import alpsbench
from prefkit.pipelines.matching import add_pairs_from_instances

DEMO_PASSWORD = "prefkit-demo"
DEMO_USERS = (
    ("maintainer", "maintainer"),
    ("alice", "annotator"),
    ("bob", "annotator"),
    ("carol", "annotator"),
)
KINDS = ("preference_expressed", "preference_match", "memory_verify")


def _generate(project: Project, personas: int, seed: int) -> None:
    generate(project, backend="offline", personas=personas, seed=seed)


def _import_examples(project: Project) -> None:
    examples = Path(str(resources.files("prefkit.pipelines").joinpath("examples/alpsbench")))
    project.store.content.import_bundle(alpsbench.build_bundle(examples))


def _pairs_and_gold(project: Project) -> None:
    store = project.store
    _, pairs = add_pairs_from_instances(store)

    create_tasks(project, "preference_match", overlap=2, batch="demo", gold_rate=0.1)
    gold_refs = [item_ref(p.pair_id) for p in pairs if (p.meta or {}).get("relation") == "same_preference"]
    ids = store.labels.task_ids_by_ref("preference_match", gold_refs[::4])  # a quarter of the self-pairs
    for task_id in ids.values():
        store.labels.set_gold(task_id, {"coverage": "fully"})


def _users(project: Project) -> None:
    for name, role in DEMO_USERS:
        if project.store.accounts.user(name) is None:
            project.store.accounts.add_user(name, role, DEMO_PASSWORD)


def build_demo(
    path: str | Path, personas: int = 3, seed: int = 0, log: Callable[[str], None] = print
) -> Project:
    """Create (or reuse) the demo project at ``path`` and fill it."""
    project = Project.init(path, name="prefkit-demo")
    store = project.store
    if store.count("instances") == 0:
        log(f"generating {personas} personas offline (seed {seed}) ...")
        _generate(project, personas, seed)
    _import_examples(project)
    _users(project)
    create_tasks(project, "preference_expressed", overlap=2, batch="demo")
    create_tasks(project, "memory_verify", overlap=2, batch="demo")
    _pairs_and_gold(project)
    counts = store.status()
    log(
        f"demo project at {project.root}: {counts['personas']} personas, {counts['sessions']} sessions, "
        f"{counts['instances']} instances, {counts['dialogues']} dialogues, {counts['tasks']} tasks"
    )
    log(f"sign in as alice, bob or carol (annotators) or maintainer; password: {DEMO_PASSWORD}")
    return project
