"""Default annotation guidelines per task kind, copied into a new project's ``guidelines/``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from schemas.curation import TASK_KINDS


def default_guidelines(kind: str) -> str:
    return resources.files("curation").joinpath(f"templates/guidelines/{kind}.md").read_text(encoding="utf-8")


def write_default_guidelines(directory: Path) -> list[Path]:
    """Write each kind's guidelines unless the project already has its own version."""
    written = []
    for kind in TASK_KINDS:
        path = directory / f"{kind}.md"
        if not path.exists():
            path.write_text(default_guidelines(kind), encoding="utf-8")
            written.append(path)
    return written
