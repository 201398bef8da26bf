"""The console blocks of README.md and docs/*.md run as shown, pasted into an empty directory.

The convention (which fences run, how output is compared) is in ``tests/consoledocs.py`` and
docs/ARCHITECTURE.md ("Console blocks in the docs")."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import require
from consoledocs import blocks, describe, missing_lines, prompt_lines_outside_console, run_file

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
WITH_CONSOLE = [p for p in DOCS if blocks(p.read_text(encoding="utf-8"))]


def _page(p: Path):
    """A page with a block that pushes to Label Studio (README.md, docs/labelstudio.md) runs in make test's
    Label Studio phase; the others run in the parallel phase."""
    pushes = any(b.needs == "labelstudio" for b in blocks(p.read_text(encoding="utf-8")))
    return pytest.param(p, id=_name(p), marks=[pytest.mark.labelstudio] if pushes else [])


def _name(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_transcripts_are_tagged_console(doc):
    """A `$ ` prompt in a fence not tagged console would escape the run below."""
    lines = prompt_lines_outside_console(doc.read_text(encoding="utf-8"))
    assert not lines, f"{_name(doc)}: tag these fences ```console (prompt lines {lines})"


def _endpoint(body: dict) -> str | dict:
    """Answers for the pages' calls to an OpenAI-compatible endpoint: generation's prompts."""
    from test_generation_openai import responder

    return responder(body)


def _needs(found) -> set[str]:
    needs = {b.needs for b in found if b.needs}
    assert needs <= {"labelstudio", "openai"}, f"unknown console needs {needs - {'labelstudio', 'openai'}}"
    return needs


@pytest.fixture(scope="session")
def page_runs(request, tmp_path_factory):
    """Every selected page's commands, started at once and run two pages at a time, ``prefkit`` through
    one warm server (tests/warmcli.py: a command forks from prefkit's imports instead of paying them):
    ``{page: future}``, each future giving ``[(command, status, output), ...]``; a test waits for its
    own page only."""
    from concurrent.futures import ThreadPoolExecutor

    from fakeopenai import start_fake_openai
    from warmcli import WarmPrefkit

    pages = [
        item.callspec.params["doc"]
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_console_blocks_run_as_shown"
    ]
    found = {p: blocks(p.read_text(encoding="utf-8")) for p in pages}
    server = start_fake_openai(_endpoint) if any("openai" in _needs(f) for f in found.values()) else None
    warm = WarmPrefkit(tmp_path_factory.mktemp("warm")) if pages else None

    def run(page: Path):
        needs = _needs(found[page])
        if "labelstudio" in needs and not os.environ.get("LABEL_STUDIO_URL"):
            return None  # the test says why
        env = (
            {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-your-key"} if "openai" in needs else {}
        )
        home = tmp_path_factory.mktemp("console") / "home"
        home.mkdir()
        return run_file(found[page], home, env_extra={**env, **warm.env}, bin_first=warm.bin_dir)

    pool = ThreadPoolExecutor(max_workers=2)
    try:
        yield {page: pool.submit(run, page) for page in pages}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if server is not None:
            server.stop()
        if warm is not None:
            warm.stop()


@pytest.mark.slow
@pytest.mark.timeout(900)  # a page runs up to run_file's own 900 s limit
@pytest.mark.parametrize("doc", [_page(p) for p in WITH_CONSOLE])
def test_console_blocks_run_as_shown(doc, page_runs):
    if "labelstudio" in _needs(blocks(doc.read_text(encoding="utf-8"))):
        require(bool(os.environ.get("LABEL_STUDIO_URL")), "a Label Studio server (source /tmp/ls.env)")
    failures = []
    for command, status, output in page_runs[doc].result():
        missing = missing_lines(command.expected, output, command.exact)
        if status != command.status or missing:
            failures.append(describe(command, status, output, missing))
    assert not failures, f"{_name(doc)}:\n\n" + "\n\n".join(failures)


DATA_HASH = re.compile(r"^\s*data\s+sha256 ([0-9a-f]{16})\s*$", re.M)


@pytest.mark.slow
@pytest.mark.labelstudio  # the README's tour pushes to Label Studio
def test_the_readme_tour_cuts_the_release_the_readme_shows_byte_for_byte(page_runs):
    """The loose comparison lets hashes change; the tour's release data hash may not: the same steps
    give the same release (ids from content, pseudonyms by account order), whoever runs them."""
    readme = ROOT / "README.md"
    if readme not in page_runs:
        pytest.skip("README.md's console blocks are not selected in this run")
    shown = [
        m[1]
        for c in blocks(readme.read_text(encoding="utf-8"))
        for x in c.commands
        for m in DATA_HASH.finditer("\n".join(x.expected))
    ]
    runs = page_runs[readme].result()
    require(runs is not None, "a Label Studio server (README.md has a block that needs one)")
    got = [m[1] for _c, _s, output in runs for m in DATA_HASH.finditer(output)]
    assert shown and got == shown, f"README.md shows data sha256 {shown}, the tour gives {got}"


def test_the_comparison_is_loose_on_numbers_unless_exact_and_strict_on_words():
    shown = ["added 16 preference pairs (0 already present)", "...", "task_abc123def  3  majority"]
    assert not missing_lines(
        shown, "added 20 preference pairs (1 already present)\nx\ntask_0f9e8d7c6  14  majority"
    )
    assert missing_lines(shown, "added 16 preference items (0 already present)\ntask_abc123def  3  majority")
    assert missing_lines(["b", "a"], "a\nb")  # order matters
    assert not missing_lines(["recall 0.041667 ok"], "recall 0.0 ok")  # a decimal is a number, not a hex id
    # a release hash that happens to be all digits is still the hash the page shows
    assert not missing_lines(["release sha256 3f2a9c01d4"], "release sha256 9120448371")
    assert missing_lines(["release sha256 3f2a9c01d4"], "release name 9120448371")
    assert missing_lines(["spans 11-15 of 9 labels"], "spans 12-16 of 9 labels", exact=True)
    assert not missing_lines(["spans 12-16  of 9 labels"], "spans 12-16 of 9 labels", exact=True)


def _same(text: str, where: Path) -> str:
    """``text`` without what differs between two runs of the same steps: the folder, the clock."""
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z?", "<time>", text.replace(str(where), "~"))


def test_the_warm_prefkit_answers_as_the_installed_one(tmp_path):
    """The pages' ``prefkit`` (tests/warmcli.py) and the installed script, the same steps in two
    folders: the same output and exit status, stdin, working directory and environment included."""
    import subprocess
    import sys

    from warmcli import WarmPrefkit

    steps = [
        ("prefkit init p", 0),
        ("printf 'long-enough-pw\\n' | prefkit users add ann1 --role annotator --password-stdin -p p", 0),
        ("cd p && prefkit users list", 0),
        ("PREFKIT_PROJECT=p prefkit kinds list", 0),
        ("prefkit tasks import --kind no_such_kind missing.jsonl -p p", 2),
        ("prefkit no-such-command", 2),
    ]
    warm = WarmPrefkit(tmp_path / "server")
    try:
        outputs = {}
        for name, path in (("installed", str(Path(sys.executable).parent)), ("warm", f"{warm.bin_dir}")):
            where = tmp_path / name
            where.mkdir()
            env = {**os.environ, **warm.env, "PATH": f"{path}:{os.environ['PATH']}", "HOME": str(where)}
            env.pop("PREFKIT_PROJECT", None)
            outputs[name] = []
            for command, status in steps:
                done = subprocess.run(
                    ["bash", "-c", command], cwd=where, env=env, capture_output=True, text=True
                )
                assert done.returncode == status, (name, command, done.stdout, done.stderr)
                outputs[name].append(tuple(_same(text, where) for text in (done.stdout, done.stderr)))
    finally:
        warm.stop()
    assert any(out for out, _err in outputs["installed"]) and outputs["warm"] == outputs["installed"]
