"""The architecture, checked by machine: import-linter's contracts in pyproject.toml (``[tool.importlinter]``:
the layers, SQL only in the store, Streamlit only in the app, no cycles) hold, the import graph has no
cycle between modules (imports inside functions count, those under ``TYPE_CHECKING`` do not), and
docs/ARCHITECTURE.md shows the layers the contract checks.

import-linter reads a package from its folder, and prefkit's subpackages live in folders of their own
(``[tool.setuptools.package-dir]``), so the check runs on a copy of the tree as it is installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def installed_tree(tmp_path_factory) -> Path:
    """The source as installed: ``prefkit/``, ``prefkit/schemas/`` (from ``schemas/``), ..., plus
    pyproject.toml."""
    dest = tmp_path_factory.mktemp("tree")
    mapping = PYPROJECT["tool"]["setuptools"]["package-dir"]
    for package, folder in sorted(mapping.items(), key=lambda kv: kv[0].count(".")):
        shutil.copytree(
            ROOT / folder,
            dest.joinpath(*package.split(".")),
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            dirs_exist_ok=True,
        )
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def run_in(tree: Path, argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree)}  # the copy, ahead of the editable install
    return subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_in_pyproject_hold(installed_tree):
    lint = Path(sys.executable).with_name("lint-imports")
    done = run_in(installed_tree, [str(lint), "--no-cache", "pyproject.toml"])
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    n = len(PYPROJECT["tool"]["importlinter"]["contracts"])
    assert f"Contracts: {n} kept, 0 broken." in report, report
    analyzed = int(re.search(r"Analyzed (\d+) files", report).group(1))
    assert analyzed >= len(list((installed_tree / "prefkit").rglob("*.py")))  # the whole tree


GRAPH = r"""
import json, sys
import grimp
graph = grimp.build_graph("prefkit", exclude_type_checking_imports=True)
edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
print(json.dumps(edges))
"""


def strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges)))
    for module in sorted(edges):
        if module not in index:
            visit(module)
    return groups


def test_no_import_cycles_between_modules_counting_imports_inside_functions(installed_tree):
    done = run_in(installed_tree, [sys.executable, "-c", GRAPH])
    assert done.returncode == 0, done.stderr
    edges = json.loads(done.stdout)
    assert len(edges) == len(list((installed_tree / "prefkit").rglob("*.py")))  # every module
    # an import inside a function is an edge (the CLI imports its library code in its commands)
    assert "prefkit.demo" in edges["prefkit.cli.demo_cmds"]
    # an import under TYPE_CHECKING is not (the registry names the project store only for type checkers)
    assert "prefkit.curation.project" not in edges["prefkit.curation.annotation.task_kinds"]
    assert strongly_connected(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert strongly_connected(edges) == [["a", "b", "c"]]


def test_the_architecture_doc_shows_the_layers_the_contract_checks():
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- layers: as in pyproject.toml -->\n```text\n(.*?)```", doc, re.S)
    assert block, "docs/ARCHITECTURE.md has no layers block"
    [layers] = [c["layers"] for c in PYPROJECT["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert [line.strip() for line in block.group(1).splitlines() if line.strip()] == layers
