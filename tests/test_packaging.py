"""Installing prefkit claims one import name: ``prefkit``. The layout's folders (schemas/, pipelines/,
curation/, annotate_app/, exports/) are linked as prefkit/<folder> and install as ``prefkit.schemas`` etc.,
editable installs included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ("schemas", "pipelines", "curation", "annotate_app", "exports")


def test_each_folder_is_a_relative_link_under_prefkit():
    for top in LAYOUT:
        link = ROOT / "prefkit" / top
        assert link.is_symlink() and str(link.readlink()) == f"../{top}", top
        assert (link / "__init__.py").samefile(ROOT / top / "__init__.py")


def test_outside_the_repository_only_prefkit_imports(tmp_path):
    code = (
        "import importlib, json\n"
        "out = {}\n"
        f"for name in {LAYOUT!r}:\n"
        "    try:\n"
        "        importlib.import_module(name); out[name] = True\n"
        "    except ImportError:\n"
        "        out[name] = False\n"
        "import prefkit.cli, prefkit.schemas, prefkit.annotate_app.server\n"
        "out['prefkit.schemas'] = prefkit.schemas.__file__\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    import json

    out = json.loads(done.stdout)
    assert {name: out[name] for name in LAYOUT} == dict.fromkeys(LAYOUT, False)
    assert Path(out["prefkit.schemas"]).resolve() == (ROOT / "schemas" / "__init__.py").resolve()


def test_the_app_script_is_found_through_the_package():
    from prefkit.cli.annotate_cmds import streamlit_argv

    argv = streamlit_argv(8501, "127.0.0.1")
    assert argv[1:4] == ["-m", "prefkit.annotate_app.server", "run"]
    assert Path(argv[4]) == (ROOT / "annotate_app" / "app.py").resolve()


def test_outside_the_repository_init_and_examples_find_their_bundled_files(tmp_path):
    prefkit = Path(sys.executable).with_name("prefkit")
    for argv in ([str(prefkit), "init", "proj"], [str(prefkit), "examples", "ex"]):
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "proj" / "prefkit.toml").read_text(encoding="utf-8").startswith("#")
    assert (tmp_path / "ex" / "release" / "cupid.jsonl").is_file()
