"""The static step reads the whole installed layout, and a broken layer contract fails it.

``.ci/layout.py`` is the one view of the installed package for mypy and import-linter; if it missed a
folder, or import-linter read nothing, the static step would pass by default."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / ".ci" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_layout_links_every_source_file_under_its_installed_name(tmp_path):
    layout = _module("layout")
    tree = layout.build(tmp_path / "layout")
    linked = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.py"))
    expected = sorted(
        f"prefkit/{p.relative_to(ROOT).as_posix()}"
        if p.parts[len(ROOT.parts)] != "prefkit"
        else p.relative_to(ROOT).as_posix()
        for folder in ("prefkit", "schemas", "pipelines", "curation", "annotate_app", "exports")
        for p in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in p.parts
    )
    assert linked == expected
    assert (tree / "prefkit/schemas/__init__.py").resolve() == ROOT / "schemas/__init__.py"
    report = f"{tree}/prefkit/curation/store/x.py:3: error"
    assert layout.repository_paths(report, tree) == "curation/store/x.py:3: error"


def test_a_schema_importing_the_cli_breaks_the_layer_contract(tmp_path):
    layout = _module("layout")
    tree = layout.build(tmp_path / "layout")
    (tree / "prefkit/schemas/upward.py").write_text("import prefkit.cli\n", encoding="utf-8")
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
