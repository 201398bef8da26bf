"""prefkit: human-verified personalization benchmarks for LLMs.

The public API in one place::

    from prefkit import Project
    project = Project.init("my-bench")
    project.store.status()

Each name is imported when first used (PEP 562), so ``import prefkit`` (and ``prefkit --help``) does
not load the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, TaskKind, get_kind
    from prefkit.curation.project import Project
    from prefkit.curation.store import ProjectStore
    from prefkit.schemas import ALL_SCHEMAS, PrefkitError

__version__ = "0.1.0"

#: The module each public name lives in.
_HOMES = {
    "ALL_SCHEMAS": "prefkit.schemas",
    "PrefkitError": "prefkit.schemas",
    "TASK_KIND_REGISTRY": "prefkit.curation.annotation.task_kinds",
    "TaskKind": "prefkit.curation.annotation.task_kinds",
    "get_kind": "prefkit.curation.annotation.task_kinds",
    "Project": "prefkit.curation.project",
    "ProjectStore": "prefkit.curation.store.project_store",
}

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


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'prefkit' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
