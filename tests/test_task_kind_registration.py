"""One door for task kinds: prefkit's own kinds are declared exactly as a plugin declares its kinds,
one line each in the ``prefkit.task_kinds`` entry point group (pyproject.toml), and each kind names its
app form and Label Studio config. Nothing registers by import: every built-in kind module is listed,
the registry holds exactly the kinds the group names, every form and config module is named by one
kind, and no library module calls a registration function."""

from __future__ import annotations

import ast
import tomllib
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path

from conftest import ROOT
from prefkit.annotate_app.forms import FORM_FUNCTIONS, form_for
from prefkit.annotate_app.labelstudio.config import LSConfig, ls_kind
from prefkit.curation.annotation.declared import DeclaredKind
from prefkit.curation.annotation.task_kinds import (
    ENTRY_POINT_GROUP,
    OWN_DISTRIBUTION,
    TASK_KIND_REGISTRY,
    TaskKind,
    get_kind,
)

KINDS_DIR = ROOT / "curation" / "annotation" / "kinds"
FORMS_DIR = ROOT / "annotate_app" / "forms"
LS_DIR = ROOT / "annotate_app" / "labelstudio" / "kinds"
LIBRARY = ("schemas", "pipelines", "curation", "annotate_app", "exports", "prefkit")


def declared() -> dict[str, str]:
    """pyproject.toml's ``[project.entry-points."prefkit.task_kinds"]``: kind name -> reference."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["project"]["entry-points"][ENTRY_POINT_GROUP]


def installed() -> dict[str, str]:
    return {
        ep.name: ep.value
        for ep in entry_points(group=ENTRY_POINT_GROUP)
        if ep.dist is not None and ep.dist.name == OWN_DISTRIBUTION
    }


def modules(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}


def test_the_installed_metadata_declares_what_pyproject_declares():
    """A stale install (pyproject.toml edited, prefkit not reinstalled: ``make setup``) fails here."""
    assert installed() == declared()


def test_every_built_in_kind_module_is_one_entry_point_and_the_registry_has_exactly_those_kinds():
    group = declared()
    assert {value.partition(":")[0] for value in group.values()} == {
        f"prefkit.curation.annotation.kinds.{m}" for m in modules(KINDS_DIR)
    }
    for name, value in group.items():
        module, _, attribute = value.partition(":")
        kind = getattr(import_module(module), attribute)
        assert isinstance(kind, TaskKind) and kind.name == name
        assert get_kind(name) is kind  # the one instance: the module's and the registry's
    assert set(TASK_KIND_REGISTRY.built_in()) == set(group)
    plugins = {n for n in TASK_KIND_REGISTRY if TASK_KIND_REGISTRY.origin(n) is not None}
    assert set(TASK_KIND_REGISTRY) - plugins == set(group)


def test_the_built_in_kinds_keep_their_menu_order():
    assert tuple(TASK_KIND_REGISTRY)[:4] == (
        "preference_expressed",
        "preference_match",
        "memory_verify",
        "task_qc",
    )
    orders = [get_kind(n).menu_order for n in declared()]
    assert len(set(orders)) == len(orders)


def test_every_form_and_label_studio_config_module_is_named_by_one_kind():
    forms, configs = {}, {}
    for name in declared():
        kind = get_kind(name)
        form = form_for(name)
        assert all(callable(getattr(form, f, None)) for f in FORM_FUNCTIONS)
        forms[name] = kind.app_form
        assert isinstance(ls_kind(name), LSConfig)
        configs[name] = kind.labelstudio_config
    helpers = {"suggestion", "text"}  # the forms package's shared modules, no kind's form
    # the generic form and config: every declared kind's (prefkit's own declarations and kinds/*.toml)
    generic = {DeclaredKind.app_form, DeclaredKind.labelstudio_config}
    assert {"preference_match", "task_qc"} <= {n for n in forms if forms[n] in generic}
    used = {ref.partition(":")[0] for ref in [*forms.values(), DeclaredKind.app_form]}
    assert sorted(used) == sorted(f"prefkit.annotate_app.forms.{m}" for m in modules(FORMS_DIR) - helpers)
    assert sorted(set(configs.values()) - generic) == sorted(
        f"prefkit.annotate_app.labelstudio.kinds.{m}:CONFIG" for m in modules(LS_DIR)
    )


def import_time_calls(node: ast.AST):
    """The calls that run when a module is imported: everything outside function bodies."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(child, ast.Call):
            yield child
        yield from import_time_calls(child)


def test_no_library_module_registers_a_kind_form_or_config_when_imported():
    """``register`` is for in-process use (tests, notebooks); prefkit's own modules declare, and
    register nothing when imported."""
    calls = []
    for folder in LIBRARY:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for call in import_time_calls(ast.parse(path.read_text(encoding="utf-8"))):
                func = call.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in ("register", "register_form", "register_ls", "register_suggester"):
                    calls.append(f"{path.relative_to(ROOT)}:{call.lineno}")
    assert calls == []
