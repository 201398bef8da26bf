"""Default annotation guidelines per task kind, copied into a new project's ``guidelines/``."""

from __future__ import annotations

from pathlib import Path

from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, get_kind


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
