"""The library type-checks: mypy over prefkit (schemas, pipelines, curation, annotate_app, exports and
the CLI) with the settings of ``[tool.mypy]`` in pyproject.toml reports no error.

The folders sit at the repository top but import as ``prefkit.<folder>`` (pyproject's package-dir
mapping), which mypy cannot follow through an editable install: the test lays the package out as it
is installed, with symbolic links under ``.mypy_cache/tree/``, and checks that. A failure prints
mypy's own report with the repository's paths (``schemas/config.py:12: error: ...``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAPPED = ("schemas", "pipelines", "curation", "annotate_app", "exports")


def installed_layout(tree: Path) -> Path:
    """``tree/prefkit`` as an installed prefkit: its own files plus one link per mapped folder."""
    pkg = tree / "prefkit"
    pkg.mkdir(parents=True, exist_ok=True)
    wanted = {p.name: p for p in (ROOT / "prefkit").iterdir() if p.name != "__pycache__"}
    wanted.update({name: ROOT / name for name in MAPPED})
    for link in pkg.iterdir():
        if link.name not in wanted or not link.is_symlink() or link.resolve() != wanted[link.name]:
            link.unlink()
    for name, target in wanted.items():
        if not (pkg / name).is_symlink():
            (pkg / name).symlink_to(target)
    return tree


def repository_paths(report: str) -> str:
    """mypy's paths in the layout (``prefkit/schemas/x.py``) as the repository's (``schemas/x.py``)."""
    for name in MAPPED:
        report = report.replace(f"prefkit/{name}/", f"{name}/")
    return report


@pytest.mark.slow
def test_mypy_reports_no_error_in_the_library():
    cache = ROOT / ".mypy_cache"
    tree = installed_layout(cache / "tree")
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(cache), "-p", "prefkit"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    report = repository_paths(out.stdout + out.stderr)
    assert out.returncode == 0, f"mypy found type errors (fix them; [tool.mypy] in pyproject.toml):\n{report}"
    assert "Success: no issues found" in report
