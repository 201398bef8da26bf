"""The architecture doc shows the layers that import-linter's contract in pyproject.toml checks.

The contracts themselves (the layers, SQL only in the store, Streamlit only in the app, no cycles) are
checked by the static step (``make check``, ``.ci/static.py``), not inside the test run."""

from __future__ import annotations

import re
import tomllib

from conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_architecture_doc_shows_the_layers_the_contract_checks():
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- layers: as in pyproject.toml -->\n```text\n(.*?)```", doc, re.S)
    assert block, "docs/ARCHITECTURE.md has no layers block"
    [layers] = [c["layers"] for c in PYPROJECT["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert [line.strip() for line in block.group(1).splitlines() if line.strip()] == layers


def test_the_store_face_names_for_the_type_checker_what_it_exports():
    import ast

    import prefkit.curation.store as store

    tree = ast.parse((ROOT / "curation" / "store" / "__init__.py").read_text(encoding="utf-8"))
    [checking] = [n for n in tree.body if isinstance(n, ast.If)]
    imported = {
        n.module.rsplit(".", 1)[1]: tuple(a.name for a in n.names)
        for n in checking.body
        if isinstance(n, ast.ImportFrom)
    }
    assert imported and imported == store.EXPORTS
    # a name equal to a submodule's would be shadowed by the module once something imports it
    assert not set(store.__all__) & {p.stem for p in (ROOT / "curation" / "store").glob("*.py")}
    assert all(getattr(store, name) is not None for names in store.EXPORTS.values() for name in names)


def test_the_architecture_doc_lists_each_store_member_with_its_module():
    import ast
    import inspect

    from prefkit.curation.store import ProjectStore

    init = ast.parse(inspect.getsource(ProjectStore.__init__).strip())
    imported = ast.parse(inspect.getsource(inspect.getmodule(ProjectStore)))
    module_of = {
        a.name: n.module.removeprefix("prefkit.curation.store.") + ".py"
        for n in imported.body
        if isinstance(n, ast.ImportFrom) and n.module.startswith("prefkit.curation.store.")
        for a in n.names
    }
    members = {
        node.targets[0].attr: module_of[node.value.func.id]
        for node in ast.walk(init)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
    }
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^  \| `store\.(\w+)` \| `(\w+\.py)`", doc, re.M))
    assert members and rows == members


def test_the_static_step_refuses_a_test_whose_only_checks_sit_in_a_loop():
    import ast
    import importlib.util

    spec = importlib.util.spec_from_file_location("loop_asserts", ROOT / ".ci" / "loop_asserts.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    source = """
def test_vacuous(rows):
    for r in rows:
        assert r.ok
def test_counted(rows):
    assert rows
    for r in rows:
        assert r.ok
def test_spelled_out():
    for n in (1, 2):
        assert n
def test_all_over_nothing(rows, other):
    assert other
    assert all(r.ok for r in rows)
def test_all_over_what_is_checked(rows):
    assert len(rows) == 3 and all(r.ok for r in rows)
    assert all(r.ok for r in rows)
def test_all_over_a_literal():
    assert all(n for n in (1, 2))
"""
    assert check.vacuous(ast.parse(source)) == [(2, "test_vacuous"), (14, "test_all_over_nothing")]
    assert check.main() == 0


def test_the_architecture_doc_names_only_paths_that_exist_and_every_migration():
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"`([\w.-]+(?:/[\w.-]+)+/?)(?::\w+)?`", doc))
    tops = [
        ROOT,
        *(ROOT / d for d in ("prefkit", "curation", "pipelines", "exports", "annotate_app", "schemas")),
    ]
    assert len(paths) > 40
    forms = {p: {p, p.rsplit(".", 1)[0] + ".py"} for p in paths if not p.startswith("..") and "..." not in p}
    assert [
        p for p, ways in sorted(forms.items()) if not any((t / w).exists() for t in tops for w in ways)
    ] == []
    code = (ROOT / "curation" / "store" / "migrations.py").read_text(encoding="utf-8")
    numbers = sorted(int(n) for n in re.findall(r"^@migration\((\d+),", code, re.M))
    listed = doc[doc.index("- Migrations:") : doc.index("Never edit a released migration")]
    assert (
        numbers and sorted({int(n) for n in re.findall(r"(?<![\w.])(\d+) (?=[a-zA-Z])", listed)}) == numbers
    )
