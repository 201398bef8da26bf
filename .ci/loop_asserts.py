"""A test must not pass on empty data: one whose only checks sit inside a loop over rows it reads (a loop
that may run zero times) fails this step, which names it. ``make check`` runs it (``.ci/static.py``).

A check is an ``assert`` or a ``with pytest.raises(...)``. A loop over what the test spells out itself
(a literal, ``range(3)``, a module CONSTANT or its ``.items()``) cannot be empty, so checks inside it count
as the test's own; checks inside any other loop count only when the test also checks something outside it
(that there are rows, usually: ``assert rows``). ``assert all(x for x in rows)`` is such a loop: it
holds of no rows at all.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPELLED_OUT = (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Constant)


def _constant(node: ast.expr) -> bool:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("items", "values", "keys")
    ):
        node = node.func.value
    return isinstance(node, SPELLED_OUT) or (isinstance(node, ast.Name) and node.id.isupper())


def spelled_out(loop: ast.AST) -> bool:
    """A ``for`` over a literal, ``range``/``enumerate``/``zip``/``sorted`` of literals, or a CONSTANT."""
    it = getattr(loop, "iter", None)
    if it is None:
        return False
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id in ("range", "enumerate", "zip", "sorted")
    ):
        return all(_constant(a) for a in it.args)
    return _constant(it)


def _is_check(node: ast.AST) -> bool:
    return isinstance(node, ast.Assert) or (
        isinstance(node, ast.With) and any("raises" in ast.unparse(i.context_expr) for i in node.items)
    )


def vacuous_all(node: ast.AST) -> bool:
    """``assert all(<generator>)`` over what the test does not spell out: true of an empty collection."""
    test = node.test if isinstance(node, ast.Assert) else None
    return (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "all"
        and len(test.args) == 1
        and isinstance(test.args[0], ast.GeneratorExp | ast.ListComp | ast.SetComp)
        and not all(spelled_out(g) for g in test.args[0].generators)
    )


def _checks(node: ast.AST, in_loop: bool = False):
    """Each check under ``node`` (not in nested functions) and whether a loop that may be empty holds it
    (an ``assert all(...)`` over a generator is such a loop)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        loops = isinstance(node, ast.For | ast.AsyncFor | ast.While) and child in node.body
        here = in_loop or (loops and not spelled_out(node))
        if _is_check(child):
            yield child, here or vacuous_all(child)
        yield from _checks(child, here)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _derived(fn: ast.AST, names: set[str]) -> set[str]:
    """``names`` and every name the test assigns from them (``got = {...for r in rows}``), at any depth."""
    steps = [(_names(a.value), {t.id for t in a.targets if isinstance(t, ast.Name)}) for a in ast.walk(fn)
             if isinstance(a, ast.Assign)]  # fmt: skip
    while True:
        more = set().union(names, *(targets for used, targets in steps if used & names))
        if more == names:
            return names
        names = more


def unchecked_all(fn: ast.AST) -> list[int]:
    """Lines of each ``assert all(<generator>)`` whose collection (or what the test made of it) no
    other check of the test names (``assert rows``, ``len(rows) == 3``): it would hold of an empty one."""
    checks = [c for c, _ in _checks(fn)]
    out = []
    for check in checks:
        if vacuous_all(check):
            over = set().union(*(_names(g.iter) for g in check.test.args[0].generators)) - {"len", "sorted"}
            others = set().union(*(_names(c) for c in checks if not vacuous_all(c)))
            if not _derived(fn, over) & others:
                out.append(check.lineno)
    return out


def vacuous(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each test function whose every check sits in a loop that may run zero times,
    and of each ``assert all(...)`` over a collection the test never checks is there."""
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name.startswith("test_"):
            looped = [in_loop for _check, in_loop in _checks(fn)]
            if looped and all(looped):
                found.append((fn.lineno, fn.name))
            else:
                found += [(line, fn.name) for line in unchecked_all(fn)]
    return found


def main() -> int:
    bad = [
        f"{path.relative_to(ROOT)}:{line}: {name} checks only inside a loop that may run zero times "
        "(or all(...) over what it never checks is there); check that there are rows too"
        for path in sorted((ROOT / "tests").glob("test_*.py"))
        for line, name in vacuous(ast.parse(path.read_text(encoding="utf-8")))
    ]
    if bad:
        print("\n".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
