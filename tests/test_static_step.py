"""The static step reads the whole package through its real folders, and a broken layer contract fails it.

``prefkit/<folder>`` are relative links to the top-level folders, the one layout Python, setuptools,
mypy and import-linter read; if a link were missing or pointed elsewhere, or import-linter read nothing,
the static step would pass by default."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

FOLDERS = ("schemas", "pipelines", "curation", "annotate_app", "exports")


def test_every_top_level_folder_is_linked_under_prefkit_relatively():
    for folder in FOLDERS:
        link = ROOT / "prefkit" / folder
        assert link.is_symlink() and not Path(link.readlink()).is_absolute()
        assert link.resolve() == ROOT / folder
    linked = sorted(
        p.relative_to(ROOT / "prefkit").as_posix()
        for f in FOLDERS
        for p in (ROOT / "prefkit" / f).rglob("*.py")
    )
    real = sorted(p.relative_to(ROOT).as_posix() for f in FOLDERS for p in (ROOT / f).rglob("*.py"))
    assert linked == real and len(real) > 100


def test_a_schema_importing_the_cli_breaks_the_layer_contract(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    for name in ("prefkit", *FOLDERS):  # the links are copied as links, so the copy reads itself
        shutil.copytree(ROOT / name, tree / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "schemas/upward.py").write_text("import prefkit.cli\n", encoding="utf-8")
    done = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "prefkit.schemas.upward -> prefkit.cli" in done.stdout
    assert "broken" in done.stdout
