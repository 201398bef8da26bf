"""Start-up stays light: the ``prefkit`` group imports a command's module only when that command runs,
command modules import at their top, and the few imports left inside functions say why.

Timings are bench/bench_startup.py's; these tests check what is imported, never how long it takes."""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import tokenize
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: In-function imports the whole library may keep (an optional heavy dependency on a rarely used path,
#: a feature detection), each with a comment saying why.
MAX_IN_FUNCTION = 10
#: Imported by no ``--help``; ``prefkit status`` on a SQLite project also leaves out SQLAlchemy (it reads
#: the counts through ``sqlite3``: tests/test_status_glance.py) and needs pydantic for ``prefkit.toml``.
HEAVY = ("pandas", "pyarrow", "duckdb", "streamlit", "openai", "numpy", "statsmodels", "psycopg")
NOT_FOR_HELP = (*HEAVY, "sqlalchemy", "pydantic")

CHILD = """
import json, sys
from prefkit.cli import cli
try:
    cli.main(sys.argv[1:], prog_name="prefkit")
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(sys.modules)))
"""


def _library_files() -> list[Path]:
    folders = ("prefkit", "schemas", "pipelines", "curation", "annotate_app", "exports")
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def _in_function_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import inside a function body, leaving out ``if TYPE_CHECKING:`` blocks (the checker's)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test).endswith("TYPE_CHECKING"):
                children: list[ast.AST] = child.orelse
            else:
                children = [child]
            for c in children:
                if in_function and isinstance(c, ast.Import | ast.ImportFrom):
                    found.append(c)
                visit(c, in_function or isinstance(c, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(tree, False)
    return found


def test_few_imports_stay_inside_functions_and_each_says_why():
    found, unexplained = [], []
    for path in _library_files():
        source = path.read_text(encoding="utf-8")
        imports = _in_function_imports(ast.parse(source))
        if not imports:
            continue
        comments = {
            t.start[0]
            for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.COMMENT
        }
        lines = {node.lineno for node in imports}
        for node in imports:
            first = node.lineno
            while first - 1 in lines:  # a run of imports shares the comment above its first
                first -= 1
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            found.append(where)
            if node.lineno not in comments and first - 1 not in comments:
                unexplained.append(where)
    assert len(found) <= MAX_IN_FUNCTION, f"{len(found)} imports inside functions: {found}"
    assert not unexplained, f"say why each import stays inside its function: {unexplained}"


def _modules_after(*args: str, cwd: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_the_command_list_imports_no_command(args, tmp_path):
    modules = _modules_after(*args, cwd=tmp_path)
    assert not {m.split(".")[0] for m in modules} & set(NOT_FOR_HELP)
    assert not {m for m in modules if m.startswith("prefkit.cli.") and m.endswith("_cmds")}


def test_status_of_a_sqlite_project_loads_neither_the_store_nor_anything_heavier(tmp_path):
    subprocess.run(
        [sys.executable, "-c", CHILD, "init", str(tmp_path / "p")], check=True, capture_output=True
    )
    modules = _modules_after("status", "--project", str(tmp_path / "p"), cwd=tmp_path)
    assert not {m.split(".")[0] for m in modules} & {*HEAVY, "sqlalchemy"}
    assert not {m for m in modules if m.startswith("prefkit.curation.store.")} - {
        "prefkit.curation.store.common",
        "prefkit.curation.store.glance",
    }
    assert {m for m in modules if m.startswith("prefkit.cli.") and m.endswith("_cmds")} == {
        "prefkit.cli.status_cmds"
    }


@pytest.mark.parametrize(
    "args", [["tasks", "--help"], ["labels", "--help"], ["agreement", "--help"], ["release", "--help"]]
)
def test_a_command_that_calls_no_endpoint_does_not_load_openai(args, tmp_path):
    """The openai package (~0.4 s) loads only where a backend is made for a real endpoint."""
    modules = _modules_after(*args, cwd=tmp_path)
    assert "openai" not in {m.split(".")[0] for m in modules}
    assert "prefkit.pipelines.llm.openai_backend" not in modules


def test_the_openai_backend_loads_when_an_endpoint_is_used():
    from prefkit.pipelines.llm.layer import make_backend
    from prefkit.schemas.config import LLMSection
    from prefkit.schemas.environment import Environment

    backend = make_backend(
        "openai",
        LLMSection(),
        Environment.read({"OPENAI_BASE_URL": "http://127.0.0.1:9", "OPENAI_API_KEY": "sk-test"}),
    )
    assert type(backend).__module__ == "prefkit.pipelines.llm.openai_backend"


def test_each_command_is_where_the_map_says_and_its_summary_is_its_own():
    from prefkit.cli import COMMANDS, cli

    assert cli.list_commands(click.Context(cli)) == sorted(COMMANDS)
    for name, (where, summary) in COMMANDS.items():
        command = cli.get_command(click.Context(cli), name)
        assert command is not None and command.name == name, where
        assert command.get_short_help_str(limit=10**6) == summary, f"COMMANDS[{name!r}]: {where}"


@pytest.mark.parametrize("width", [50, 80, 100, 200])
def test_the_command_list_reads_as_click_would_print_it(width):
    from prefkit.cli import cli

    ctx = click.Context(cli, info_name="prefkit", terminal_width=width, max_content_width=100)
    lazy, loaded = ctx.make_formatter(), ctx.make_formatter()
    cli.format_commands(ctx, lazy)
    click.Group.format_commands(cli, ctx, loaded)  # click's own: loads every command for its help
    assert lazy.getvalue() == loaded.getvalue()


def test_the_tasks_commands_load_the_eval_pairs_but_not_the_runs_and_scipy(tmp_path):
    """``prefkit tasks`` needs the eval package's pairs, not its runs and their scoring (SciPy ~0.3 s)."""
    modules = _modules_after("tasks", "--help", cwd=tmp_path)
    assert {"prefkit.cli.tasks_cmds", "prefkit.pipelines.eval.pairs"} <= modules
    assert not {m for m in modules if m.split(".")[0] == "scipy" or m == "prefkit.pipelines.eval.runs"}
