"""The static checks, as their own step before the tests (``make check``; ``make test`` runs it first).

- ruff: lint and format, over the repository;
- mypy: the library type-checks with ``[tool.mypy]`` of pyproject.toml;
- import-linter: the layer contract of ``[tool.importlinter]`` holds (layers, SQL only in the store,
  Streamlit only in the app, no import cycles at any depth, imports inside functions included);
- the CLI reference in docs/cli.md is the one the commands generate;
- no test checks only inside a loop over rows that may be empty (``.ci/loop_asserts.py``).

mypy and import-linter read the repository as it is: prefkit/<folder> are relative links to the top-level
folders, so ``prefkit.curation...`` is the folder prefkit/curation/ for them as for Python. Each check
prints one line with its time; a failing check prints its tool's report and the step exits 1 after running
the others.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The top-level folders prefkit/ links to (prefkit/<folder> -> ../<folder>).
LINKED = ("schemas", "pipelines", "curation", "annotate_app", "exports")
BIN = Path(sys.executable).parent


#: mypy's incremental cache: in the checkout locally; in CI, a fresh clone thrown away after, beside
#: pip's cache in the user's cache folder, so the next clone starts warm (mypy checks each module's hash
#: against it and rechecks what changed and what depends on it: 27 CPU-s cold, 1-4 s warm, 2 cores).
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
MYPY_CACHE = str(CACHE_HOME / "prefkit" / "mypy" if IN_CI else ROOT / ".mypy_cache")


def tool(name: str) -> str:
    return str(BIN / name)


def checks() -> list[tuple[str, list[str], Path, dict[str, str]]]:
    """(name, argv, working directory, extra environment) of each check."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = len(config["tool"]["importlinter"]["contracts"])
    return [
        ("ruff check", [tool("ruff"), "check", "--quiet", "."], ROOT, {}),
        ("ruff format", [tool("ruff"), "format", "--check", "--quiet", "."], ROOT, {}),
        ("cli reference", [sys.executable, "docs/cli_reference.py", "--check"], ROOT, {}),
        ("asserts outside loops", [sys.executable, ".ci/loop_asserts.py"], ROOT, {}),
        (
            "mypy",
            [
                sys.executable,
                "-m",
                "mypy",
                "--config-file",
                str(ROOT / "pyproject.toml"),
                "--cache-dir",
                MYPY_CACHE,
                "-p",
                "prefkit",
            ],
            ROOT,
            {"MYPYPATH": ""},
        ),
        (
            f"import contracts ({contracts})",
            [tool("lint-imports"), "--no-cache", str(ROOT / "pyproject.toml")],
            ROOT,
            {"PYTHONPATH": str(ROOT)},
        ),
    ]


def repository_paths(report: str) -> str:
    """A tool's paths through the links (``prefkit/schemas/x.py``) as the repository's (``schemas/x.py``)."""
    for folder in LINKED:
        report = report.replace(f"prefkit/{folder}/", f"{folder}/")
    return report


def complete(name: str, report: str) -> bool:
    """The tool read every module of prefkit (a tool that found nothing must not pass)."""
    modules = sum(1 for folder in ("prefkit", *LINKED) for _ in (ROOT / folder).rglob("*.py"))
    if name == "mypy":
        found = re.search(r"Success: no issues found in (\d+) source files", report)
        return bool(found) and int(found.group(1)) >= modules
    if name.startswith("import contracts"):
        found = re.search(r"Analyzed (\d+) files", report)
        return bool(found) and int(found.group(1)) >= modules and "0 broken" in report
    return True


def main() -> int:
    failed = []
    for name, argv, cwd, extra in checks():
        t0 = time.monotonic()
        done = subprocess.run(argv, cwd=cwd, env={**os.environ, **extra}, capture_output=True, text=True)
        report = repository_paths(done.stdout + done.stderr)
        if done.returncode == 0 and not complete(name, report):
            done.returncode = 1
            report += f"\n{name}: the tool did not read the whole package"
        print(f"  {name:<24} {'ok' if done.returncode == 0 else 'FAILED':<7} {time.monotonic() - t0:6.1f}s")
        if done.returncode != 0:
            failed.append(name)
            print(report.rstrip(), file=sys.stderr)
    if failed:
        print(f"static checks failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
