"""``prefkit eval contamination`` against the loopback OpenAI-compatible server: a model that saw the
release (it knows the canary and every text of it) and one that did not."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from fakeopenai import fake_openai_fixture  # noqa: F401 - the fixture
from prefkit.cli import cli
from prefkit.exports.release import cut_release
from prefkit.pipelines.eval.contamination import MIN_WORDS, PROTOCOL
from prefkit.schemas.curation import CANARY_PREFIX
from test_generation_run import generate


@pytest.fixture
def release(project):
    generate(project, personas=2, seed=0)
    project.config.release.allow_offline = True
    return cut_release(project, "1.0.0", override="contamination test").path


def strings(value):
    if isinstance(value, str):
        yield value
    for v in value.values() if isinstance(value, dict) else value if isinstance(value, list) else []:
        yield from strings(v)


@pytest.fixture
def endpoint(fake_openai, monkeypatch, release, project):
    """'seen' answers the canary line with the GUID and any start of a text of the release with its
    rest; 'unseen' answers neither."""
    memory = [
        s
        for p in release.glob("data/*/*.jsonl")
        for line in p.read_text().splitlines()
        for s in strings(json.loads(line))
    ]

    def responder(body):
        said = body["messages"][-1]["content"]
        if body["model"] == "seen":
            if said == CANARY_PREFIX:
                return project.canary()
            rest = next(
                (" ".join(s.split())[len(said) :] for s in memory if " ".join(s.split()).startswith(said)), ""
            )
            return rest.strip() or "no idea"
        return "Sorry, I do not know this text; here is something else entirely."

    server = fake_openai(responder)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-contamination")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server


def run(project, release, model, *more):
    args = ["eval", "contamination", "--release", str(release), "--model", model, "--backend", "openai"]
    done = CliRunner().invoke(cli, [*args, "--sample", "5", *more, "-p", str(project.root)])
    assert done.exit_code == 0, done.output
    return done.output


def test_a_model_that_saw_the_release_returns_the_canary_and_the_held_out_halves(endpoint, project, release):
    report = json.loads(run(project, release, "seen", "--json"))
    assert report["protocol"] == PROTOCOL and report["canary"] == project.canary()
    assert report["canary_returned"] is True and report["n_items"] >= 2 and report["n_failed"] == 0
    assert len({i["item"] for i in report["items"]}) == report["n_items"]
    assert report["mean_lcs_ratio"] == 1.0  # every held-out half came back whole
    assert all(i["prefix_words"] >= MIN_WORDS // 2 for i in report["items"])
    assert "does not" not in report["what_it_shows"] and "never saw the data" in report["what_it_shows"]


def test_a_model_that_did_not_see_it_returns_neither_and_a_rerun_calls_nothing(endpoint, project, release):
    text = run(project, release, "unseen").splitlines()
    assert text[0].split()[:5] == ["protocol", "model", "offline", "canary_returned", "n_items"]
    assert (
        text[2].split()[:4] == [PROTOCOL, "unseen", "False", "False"] and "Neither negative shows" in text[3]
    )
    report = json.loads(run(project, release, "unseen", "--json"))
    assert report["canary_returned"] is False and report["mean_lcs_ratio"] < 0.2
    calls = len(endpoint.chat_requests())
    assert calls == 1 + report["n_items"] > 2  # each half and the canary asked once: the rerun was cached
    estimate = json.loads(run(project, release, "unseen", "--estimate", "--json"))["estimate"]
    assert (estimate["calls"], estimate["cached"]) == (0, calls) and len(endpoint.chat_requests()) == calls


def _symlink_out(release, target, rel):
    shutil.copytree(release / rel, target) if (release / rel).is_dir() else shutil.copy(release / rel, target)
    shutil.rmtree(release / rel) if (release / rel).is_dir() else (release / rel).unlink()
    (release / rel).symlink_to(target)


def _manifest(release, text):
    (release / "manifest.json").write_text(text, encoding="utf-8")


def _canary(value):
    def change(release, tmp_path):
        manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
        _manifest(release, json.dumps({**manifest, "canary": value}))

    return change


BAD_RELEASES = {
    "no manifest": (
        lambda r, t: (r / "manifest.json").unlink(),
        "{r}: not a release directory (no manifest.json)",
    ),
    "manifest not JSON": (lambda r, t: _manifest(r, "{'canary': 1"), "{r}/manifest.json:1: "),
    "manifest a list": (
        lambda r, t: _manifest(r, "[1, 2]"),
        "{r}/manifest.json: expected a JSON object, got list",
    ),
    "canary a number": (_canary(7), "{r}/manifest.json: canary: expected a GUID string, got int"),
    "canary an object": (
        _canary({"guid": "x"}),
        "{r}/manifest.json: canary: expected a GUID string, got dict",
    ),
    "test split a symlink": (
        lambda r, t: _symlink_out(r, t, next(r.glob("data/*/test.jsonl")).relative_to(r)),
        "{r}/data/{config}/test.jsonl: a symlink or special file (a release holds regular files only)",
    ),
    "config folder a symlink": (
        lambda r, t: _symlink_out(r, t, next(r.glob("data/*/test.jsonl")).parent.relative_to(r)),
        "{r}/data/{config}: a symlink or special file (a release holds regular files only)",
    ),
}


def test_a_broken_release_is_one_line_and_no_call(endpoint, project, release, tmp_path):
    cached = project.store.count("llm_cache")
    said, want = {}, {}
    for name, (change, line) in BAD_RELEASES.items():
        broken = tmp_path / name.replace(" ", "_")
        shutil.copytree(release, broken)
        config = next(broken.glob("data/*/test.jsonl")).parent.name
        change(broken, tmp_path / f"{broken.name}_outside")
        args = ["eval", "contamination", "--release", str(broken), "--model", "seen", "--backend", "openai"]
        done = CliRunner().invoke(cli, [*args, "-p", str(project.root)])
        said[name] = (done.exit_code, isinstance(done.exception, SystemExit), done.output.splitlines())
        want[name] = (1, True, [f"error: {line.format(r=broken, config=config)}"])
    # The manifest that is not JSON: the line names the spot the parser stopped at.
    cut = len(want["manifest not JSON"][2][0])
    said["manifest not JSON"][2][:] = [line[:cut] for line in said["manifest not JSON"][2]]
    assert said == want
    assert endpoint.count() == 0 and project.store.count("llm_cache") == cached
