"""The README stays true: its CLI reference is generated from the commands and is up to date."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "docs" / "cli_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_cli_reference_is_current():
    gen = _generator()
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert gen.START in text and gen.END in text
    assert gen.updated_readme(text) == text, "run: python docs/cli_reference.py --write"


def test_readme_first_screen_has_the_two_commands():
    first_screen = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:25]
    assert any("make demo" in line for line in first_screen)
    assert any("make test" in line for line in first_screen)


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
