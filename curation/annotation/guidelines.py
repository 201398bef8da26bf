"""Annotation guidelines per task kind: the defaults copied into a new project's ``guidelines/``, and
their versions (the first 12 hex characters of the SHA-256 of the text as shown), which every label
records."""

from __future__ import annotations

import difflib
import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, get_kind
from prefkit.schemas.common import PrefkitError

if TYPE_CHECKING:
    from prefkit.curation.project_dir import ProjectDir
    from prefkit.curation.store import ProjectStore

#: What a guidelines version looks like.
VERSION = re.compile(r"[0-9a-f]{12}")


def default_guidelines(kind: str) -> str:
    return get_kind(kind).default_guidelines()


def write_default_guidelines(directory: Path, kinds: list[str] | None = None) -> list[Path]:
    """Write each kind's guidelines (or only those of ``kinds``) unless the project already has its own
    version."""
    written = []
    directory.mkdir(parents=True, exist_ok=True)
    for kind in TASK_KIND_REGISTRY if kinds is None else kinds:
        path = directory / f"{kind}.md"
        if not path.exists():
            path.write_text(default_guidelines(kind), encoding="utf-8")
            written.append(path)
    return written


def version_of(text: str) -> str:
    """The version of a guidelines text exactly as the annotator is shown it (a declared kind's
    resolved text included): the first 12 hex characters of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def current_version(project: ProjectDir, store: ProjectStore, kind: str) -> str:
    """The version of ``kind``'s guidelines as the project shows them now, kept in the store (with
    the time it was first seen) the first time it appears."""
    text = project.guidelines(get_kind(kind).name)
    version = version_of(text)
    store.guidelines.record(kind, version, text)
    return version


def versions_now(project: ProjectDir, store: ProjectStore, kinds: list[str] | None = None) -> dict[str, str]:
    """The current version of each kind's guidelines (every registered kind by default)."""
    return {k: current_version(project, store, k) for k in (kinds or list(TASK_KIND_REGISTRY))}


class GuidelinesError(PrefkitError):
    """A guidelines version this project never had (one line naming it)."""


def diff(store: ProjectStore, kind: str, old: str, new: str) -> str:
    """The unified diff between two versions of ``kind``'s guidelines."""
    kind = get_kind(kind).name
    texts = []
    for version in (old, new):
        text = store.guidelines.text(kind, version)
        if text is None:
            raise GuidelinesError(
                f"{kind} has no guidelines version {version!r} in this project (prefkit guidelines list)"
            )
        texts.append(text)
    lines = difflib.unified_diff(
        texts[0].splitlines(keepends=True),
        texts[1].splitlines(keepends=True),
        f"{kind}@{old}",
        f"{kind}@{new}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
