"""The installed layout of prefkit as a tree static tools can read: ``build/layout/prefkit/...``.

The user's folders sit at the top of the repository (schemas/, pipelines/, curation/, annotate_app/,
exports/) and install as ``prefkit.<folder>`` through pyproject's package-dir mapping, which neither mypy
nor import-linter follows. This is the one place that lays the mapping out: real directories, one
symbolic link per source file (so an editor or a type checker opening ``build/layout/prefkit/schemas/x.py``
edits ``schemas/x.py``). ``.ci/static.py`` runs every static tool on it; point an editor's extra path at
``build/layout`` to get the same view.

Usage: ``python .ci/layout.py [DEST]`` (default build/layout) prints DEST.
"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def mapping() -> dict[str, Path]:
    """Each installed package root (``prefkit``, ``prefkit.schemas``, ...) and the folder it comes from."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {pkg: ROOT / folder for pkg, folder in config["tool"]["setuptools"]["package-dir"].items()}


def build(dest: Path = ROOT / "build" / "layout") -> Path:
    """Lay the installed packages out under ``dest`` (made anew each time: a deleted file leaves no link)."""
    if dest.exists():
        shutil.rmtree(dest)
    for package, folder in sorted(mapping().items(), key=lambda kv: kv[0].count(".")):
        target = dest.joinpath(*package.split("."))
        for source in folder.rglob("*.py"):
            rel = source.relative_to(folder)
            if "__pycache__" in rel.parts:
                continue
            link = target / rel
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(source)
    return dest


def repository_paths(report: str, dest: Path) -> str:
    """A tool's paths in the layout (``build/layout/prefkit/schemas/x.py``) as the repository's."""
    for package, folder in sorted(mapping().items(), key=lambda kv: -kv[0].count(".")):
        inside = "/".join(package.split("."))
        rel = folder.relative_to(ROOT).as_posix()
        for prefix in (f"{dest.as_posix()}/{inside}/", f"{inside}/"):
            report = report.replace(prefix, f"{rel}/")
    return report


if __name__ == "__main__":
    print(build(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT / "build" / "layout"))
