"""Every LLM path against a real inference engine: llama-cpp-python's server with SmolLM2-135M-Instruct
(.ci/engine.sh), the project configured only by ``base_url``, the model names and the settings of a
one-request engine (tests/enginekit.py), no key, ``[llm] structured`` left at ``auto``.

Each test goes through a recording proxy, so it checks what the engine was asked and what it reported:
the one refused ``json_schema`` request (llama-cpp-python answers it with a 500) and then every structured
call as ``json_object`` + ``schema``; every call answered; the ledger's tokens equal to the engine's
``usage``; a rerun that sends nothing; a ``kill -9`` that resumes without repeating a finished call; a
dialogue longer than the window a named failure at once. A 135M model writes what it writes: content
checks may drop its answers (each drop named), and the evaluations account its unusable answers as their
protocols say. The scripted loopback server (tests/fakeopenai.py) keeps the faults an engine cannot
produce on demand (tests/test_llm_forms.py, tests/test_llm_faults.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ALPS_PACKETS, require
from declaredkind import NAME as DECLARED
from declaredkind import declare, write_items
from enginekit import Recorder, body_key, engine, engine_project
from evalkit import cupid_release
from prefkit.cli import cli
from prefkit.curation.project import Project

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1200)]

#: Real AlpsBench packets with short English dialogues (a 135M model on one core answers them in seconds).
SHORT_PACKETS = ("sess_25002f1c240e", "sess_2bc460f6e56d", "sess_2de48a78ede2")
#: A real packet with two candidate memories: ``suggest --kind memory_verify --judge`` asks once per candidate.
TWO_MEMORIES = "sess_1cd776b2accd"
#: A real packet whose dialogue is far past the 256-token window of the small engine.
LONG_PACKET = "sess_1610c3f4f38e"
PREFKIT = str(Path(sys.executable).with_name("prefkit"))


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local engine needs none


@pytest.fixture
def proxy():
    """``proxy(small=False)``: a recording proxy in front of the engine (or the small-window one)."""
    made: list[Recorder] = []

    def make(small: bool = False) -> Recorder:
        url, _ = engine(small)
        made.append(Recorder(url))
        return made[-1]

    yield make
    for r in made:
        r.close()


@contextmanager
def opened(root: Path) -> Iterator[Project]:
    project = Project(root)
    try:
        yield project
    finally:
        project.close()


def prefkit(root: Path, *argv: str, code: int | None = 0) -> str:
    result = CliRunner().invoke(cli, [*argv, "-p", str(root)])
    assert code is None or result.exit_code == code, result.output
    return result.output


def packets(dest: Path, *names: str) -> Path:
    require(ALPS_PACKETS.is_dir(), f"AlpsBench sample not found at {ALPS_PACKETS}")
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        [path] = ALPS_PACKETS.rglob(f"{name}.json")
        shutil.copyfile(path, dest / path.name)
    return dest


def project_on(tmp_path: Path, recorder: Recorder, name: str = "proj") -> Path:
    return engine_project(tmp_path / name, recorder.base_url, os.environ["PREFKIT_ENGINE_MODEL"])


def imported_reference(root: Path) -> None:
    """The sample's own (expert) gold is the reference: these tests are about the engine, not verification."""
    toml = root / "prefkit.toml"
    toml.write_text(
        toml.read_text().replace("[release]\n", '[release]\nalpsbench_reference = "imported"\n', 1)
    )


def ledger_tokens(root: Path) -> tuple[int, int]:
    with opened(root) as project:
        rows = [
            r for r in project.store.llm.ledger() if not r.from_cache and not r.model.startswith("offline:")
        ]
    return sum(r.prompt_tokens for r in rows), sum(r.completion_tokens for r in rows)


def assert_answered_and_accounted(root: Path, recorder: Recorder, structured: bool = True) -> None:
    """Every call the engine got was answered (but the one json_schema it refuses), the structured ones
    as json_object + schema after it, the form remembered, and the ledger's tokens are the engine's."""
    assert recorder.answered(), "the engine answered nothing"
    refused = [c for c in recorder.calls if c.status != 200]
    formats = [(c.body.get("response_format") or {}).get("type") for c in recorder.calls]
    if structured:
        assert [c.status for c in refused] == [500] and refused[0].body["response_format"][
            "type"
        ] == "json_schema"
        assert recorder.calls.index(refused[0]) == formats.index("json_schema")  # the first structured call
        assert "json_schema" not in formats[formats.index("json_schema") + 1 :]
        with opened(root) as project:
            assert [(f.model, f.form) for f in project.store.llm.forms()] == [
                (os.environ["PREFKIT_ENGINE_MODEL"], "json_object_schema")
            ]
    else:
        assert refused == []
    assert ledger_tokens(root) == recorder.tokens()


def test_generate_answers_every_call_names_each_drop_and_a_rerun_sends_nothing(tmp_path, proxy):
    recorder = proxy()
    root = project_on(tmp_path, recorder)
    out = prefkit(root, "generate", "--personas", "1", "--seed", "0", code=None)
    with opened(root) as project:
        ledger = project.store.llm.ledger()
        personas = project.store.count("personas")
    assert ledger and {r.status for r in ledger} == {"done"}, out  # every call answered
    drops = [line for line in out.splitlines() if line.startswith("dropped ")]
    assert personas or drops, out  # each persona answer was written, or dropped with its reason
    assert all(": " in d for d in drops)
    assert_answered_and_accounted(root, recorder)
    recorder.reset()
    prefkit(root, "generate", "--personas", "1", "--seed", "0", code=None)
    assert recorder.calls == []  # answered from the project's cache


def test_memories_extract_on_real_packets_answers_every_call_and_names_each_failure(tmp_path, proxy):
    recorder = proxy()
    root = project_on(tmp_path, recorder)
    prefkit(root, "import", "alpsbench", str(packets(tmp_path / "packets", *SHORT_PACKETS[:2])))
    report = json.loads(
        prefkit(root, "memories", "extract", "--origin", "all", "--no-tasks", "--attempts", "1", "--json")
    )
    assert report["dialogues"] == 2, report
    with opened(root) as project:
        ledger = project.store.llm.ledger()
        failures = project.store.content.failures()
    assert {r.item for r in ledger if r.stage == "memories.candidates"} == set(SHORT_PACKETS[:2])
    # A 135M model may loop in a JSON array until max_tokens, or write what its schema refuses: each
    # such answer is a failure row naming why (never an HTTP error retried), and counted by the command.
    for row in ledger:
        assert row.status == "done" or row.error.startswith(("answer cut off", "schema-invalid")), row
    assert len(failures) == sum(r.status == "failed" for r in ledger)
    assert set(report["failed"]) == {f.item for f in failures}, report
    assert_answered_and_accounted(root, recorder)


def test_suggest_for_each_kind_and_a_declared_one(tmp_path, proxy):
    recorder = proxy()
    root = project_on(tmp_path, recorder)
    imported_reference(root)
    prefkit(root, "generate", "--personas", "1", "--seed", "0", "--backend", "offline")
    prefkit(root, "tasks", "pairs", "from-instances")
    # One memory_verify task (made before the other packets come in), so the judge is asked twice.
    prefkit(root, "import", "alpsbench", str(packets(tmp_path / "first", TWO_MEMORIES)))
    prefkit(root, "tasks", "create", "--kind", "memory_verify")
    prefkit(root, "import", "alpsbench", str(packets(tmp_path / "more", *SHORT_PACKETS)))
    for kind in ("preference_match", "preference_expressed"):
        prefkit(root, "tasks", "create", "--kind", kind)
    # task_qc checks the rows prefkit builds: three distractors from the other packets' memories
    prefkit(root, "tasks", "build-alpsbench", "--backend", "offline", "--distractors", "3")
    prefkit(root, "tasks", "create", "--kind", "task_qc")
    declare(root)
    prefkit(root, "tasks", "import", "--kind", DECLARED, str(write_items(tmp_path / "items.jsonl")))
    reports = {}
    for kind in ("preference_match", "preference_expressed", "memory_verify", "task_qc", DECLARED):
        judge = ["--judge"] if kind == "memory_verify" else []
        reports[kind] = json.loads(prefkit(root, "suggest", "--kind", kind, "--limit", "1", *judge, "--json"))
    for kind, report in reports.items():
        assert report["offline"] is False and report["tasks"] == 1, (kind, report)
        assert report["suggested"] + len(report["failed"]) == 1, (kind, report)
    assert sum(r["suggested"] for r in reports.values()) >= 1
    assert_answered_and_accounted(root, recorder)


def test_eval_cupid_scores_and_accounts_each_failure(tmp_path, proxy):
    recorder = proxy()
    root = project_on(tmp_path, recorder)
    release = cupid_release(tmp_path, personas=1)
    model = os.environ["PREFKIT_ENGINE_MODEL"]
    out = json.loads(
        prefkit(root, "eval", "cupid", "--release", str(release), "--model", model, "--limit", "2", "--json")
    )
    overall = [r for r in out["rows"] if r.get("instance_type") in ("overall", "all", None)] or out["rows"]
    counts = {k: v for k, v in overall[-1].items() if k.startswith("n_")}
    accounted = sum(
        counts.get(k, 0)
        for k in ("n_scored", "n_model_failed", "n_judge_failed", "n_empty", "n_context_length")
    )
    assert accounted == counts.get("n_instances", counts.get("n_rows", 2)), overall
    assert_answered_and_accounted(root, recorder, structured=False)  # CUPID's steps are free text


def test_eval_alpsbench_tasks_1_to_4(tmp_path, proxy):
    recorder = proxy()
    root = project_on(tmp_path, recorder)
    imported_reference(root)
    prefkit(root, "import", "alpsbench", str(packets(tmp_path / "packets", *SHORT_PACKETS)))
    prefkit(root, "release", "cut", "--version", "1.0.0", "--override", "engine test: no labels")
    model = os.environ["PREFKIT_ENGINE_MODEL"]
    for task in ("1", "2", "3", "4"):
        out = json.loads(
            prefkit(
                root,
                "eval",
                "alpsbench",
                "--release",
                str(root / "releases" / "1.0.0"),
                "--task",
                task,
                "--split",
                "test",
                "--model",
                model,
                "--limit",
                "1",
                "--json",
            )
        )
        assert out["rows"], (task, out)
        for row in out["rows"]:  # a score for every row, its failed calls counted
            assert row["n_rows"] >= 1 and 0 <= row["n_failed"] <= row["n_rows"], (task, row)
    assert_answered_and_accounted(root, recorder)


def test_kill_9_mid_run_resumes_without_repeating_a_finished_call(tmp_path, proxy):
    recorder = proxy()
    root = project_on(tmp_path, recorder)
    release = cupid_release(tmp_path, personas=1)
    argv = [
        PREFKIT,
        "eval",
        "cupid",
        "--release",
        str(release),
        "--model",
        os.environ["PREFKIT_ENGINE_MODEL"],
        "--limit",
        "2",  # a call answered before the kill, one after it
        "-p",
        str(root),
    ]
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 900
    while not recorder.answered() and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    time.sleep(0.3)  # the answers' commit (grouped over ~50 ms)
    assert child.poll() is None, "the run ended before the kill: nothing to resume"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with opened(root) as project:
        finished = {r.key for r in project.store.llm.ledger() if r.status == "done"}
        answers = {k: a.text for k, a in project.store.llm.cache_get(finished).items()}
    assert finished, "no call had finished before the kill"
    recorder.reset()
    prefkit(root, *argv[1:-2])
    assert recorder.answered(), "the resumed run asked nothing"
    assert not {body_key(c.body) for c in recorder.calls} & finished  # no finished call asked again
    with opened(root) as project:
        assert {k: a.text for k, a in project.store.llm.cache_get(finished).items()} == answers
        keys = [(r.stage, r.item, r.key) for r in project.store.llm.ledger()]
    assert len(keys) == len(set(keys)) and finished <= {k for _, _, k in keys}
    recorder.reset()
    prefkit(root, *argv[1:-2])
    assert recorder.calls == []  # a finished run's rerun sends the engine nothing


@pytest.mark.parametrize("small", [True], ids=["n_ctx=256"])
def test_a_dialogue_longer_than_the_window_is_a_named_failure_at_once(tmp_path, proxy, small):
    recorder = proxy(small=small)
    root = project_on(tmp_path, recorder)
    prefkit(root, "import", "alpsbench", str(packets(tmp_path / "packets", LONG_PACKET)))
    out = prefkit(root, "memories", "extract", "--origin", "all", "--no-tasks", "--attempts", "1", code=None)
    with opened(root) as project:
        [failure] = project.store.content.failures("memories.candidates")
    assert failure.error.startswith("context_length: ") and failure.error.endswith(" > 256"), failure.error
    asked = int(failure.error.split()[1])
    assert asked > 256
    # json_schema refused (500), then json_object + schema over the window (400): neither retried
    assert [c.status for c in recorder.calls] == [500, 400]
    assert "context_length" in out or "failed" in out
