"""prefkit: human-verified personalization benchmarks for LLMs.

The public API in one place::

    from prefkit import Project
    project = Project.init("my-bench")
    project.store.status()
"""

from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, TaskKind, get_kind
from prefkit.curation.project import Project, ProjectStore
from prefkit.schemas import ALL_SCHEMAS, PrefkitError

__version__ = "0.1.0"

__all__ = [
    "ALL_SCHEMAS",
    "TASK_KIND_REGISTRY",
    "PrefkitError",
    "Project",
    "ProjectStore",
    "TaskKind",
    "__version__",
    "get_kind",
]
