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
    assert all(getattr(store, name) is not None for names in store.EXPORTS.values() for name in names)
