"""The official CUPID pipeline end to end through the loopback OpenAI-compatible server and the real
openai client: analysis-then-answer inference, the decomposer, one matcher call per checklist, every
failure branch of CUPID's ``evaluate.py`` (context length, unparsable answer, failed matcher, empty
answer), the PrefMatcher format, the generation rubric, and a CUPID checkout's own prompt files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from evalkit import cupid_release
from fakeopenai import fake_openai_fixture  # noqa: F401 - the fixture
from prefkit.cli import cli

DECOMPOSED = {"p1 contrastive": ["Is it short?", "Does it use bullets?", "Q3?", "Q4?", "Q5?"]}


def who(text: str) -> str | None:
    """The instance a prompt is about ('p0 consistent', ...), from the request or preference text."""
    for pid in ("p0", "p1"):
        for t in ("consistent", "contrastive", "changing"):
            if f"{pid} ({t})" in text or f"{pid} {t}" in text:
                return f"{pid} {t}"
    return None


def labels(checklist_text: str) -> list[dict]:
    entries = [line.split(". ", 1)[1] for line in checklist_text.splitlines() if ". " in line]
    return [
        {"index": i + 1, "entry": e, "label": "Fully Covered" if "bullets" in e else "Partially Covered"}
        for i, e in enumerate(entries)
    ]


def responder(body):
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    inst = who(user)
    if system.startswith("You help a conversational assistant") or system.startswith("TEST INFERRER"):
        if inst == "p1 consistent":
            return "### Analysis\n\nNothing bears on it.\n\n### Most Likely Preference\n\n"
        if inst == "p1 changing":
            return "I think the user wants short answers."  # no header: CUPID's parsing fails
        return f"### Analysis\n\nThey asked for brevity.\n\n### Most Likely Preference\n\nShort answers in bullet points ({inst})\nmore"
    if system.startswith("You turn a user's preference") or system.startswith("TEST DECOMPOSER"):
        return (
            "**Analysis**\n\nok\n\n**Checklist**\n\n```json\n"
            + json.dumps({"checklist": DECOMPOSED.get(inst or "", ["Is it short?", "Does it use bullets?"])})
            + "\n```"
        )
    if system.startswith("You compare an evaluation checklist") or system.startswith("TEST MATCHER"):
        if inst == "p0 changing" and "zqxgold" in user:  # the gold preference: the inferred-side call
            return "I cannot decide."
        checklist = user.split("#### Checklist", 1)[1]
        return "```json\n" + json.dumps({"results": labels(checklist)}) + "\n```"
    if system.startswith("You decide, for each question"):
        return json.dumps(labels(user.split("#### Checklist", 1)[1]))  # PrefMatcher: a bare JSON list
    if system.startswith("You are a strict evaluator"):
        if inst == "p0 changing":
            return "### Evaluation Label\n\nGood"  # no score section: a failed judge call
        return "### Evaluation of AI Assistant's Response\n\n1. ok\n\n### Evaluation Label\n\nGood\n\n### Evaluation Score\n\n7/10"
    return "Here is a short answer in bullets."


def context_length(body):
    user = body["messages"][-1]["content"]
    return "context_length" if who(user) == "p0 contrastive" and "### Session" in user else None


@pytest.fixture
def endpoint(fake_openai, monkeypatch):
    server = fake_openai(responder, fault_for=context_length)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-eval")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server


def run(project, *args):
    result = CliRunner().invoke(
        cli, ["eval", "cupid", *args, "--backend", "openai", "--json", "-p", str(project.root)]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def rows(out, task):
    return {r["group"]: r for r in out["rows"] if r["task"] == task}


def test_cupid_official_steps_and_every_failure_branch(endpoint, project, tmp_path):
    rel = cupid_release(tmp_path, personas=2)
    out = run(project, "--release", str(rel), "--model", "m")
    o = rows(out, "inference")["overall"]
    # counted: p0 consistent (2 q: 1 + 0.5; gold 1 + 0.5), p0 contrastive (context length: 2 gold, 0 q),
    # p0 changing (matcher failed: 2 gold, 2 q, no credit), p1 consistent (empty: 2 gold), p1 contrastive
    # (5 q kept whole: 1 + 4 x 0.5; gold 1.5); p1 changing left out (unparsable inference).
    assert (o["gold_items"], o["gold_credit"], o["inferred_items"], o["inferred_credit"]) == (10, 3.0, 9, 4.5)
    assert (o["precision"], o["recall"], o["f1"]) == (0.5, 0.3, 0.375)
    assert (o["n_context_length"], o["n_judge_failed"], o["n_empty"], o["n_model_failed"]) == (1, 1, 1, 1)
    s = rows(out, "inference_strict")["overall"]
    assert (s["gold_items"], s["recall"], s["f1"]) == (12, 0.25, pytest.approx(1 / 3, abs=1e-6))
    assert out["protocol"] == "cupid-official" and out["run"]["settings"]["protocol"] == "cupid-official"
    # one matcher call per checklist (two per instance that has questions), each with worked examples
    matches = [
        r.body for r in endpoint.chat_requests() if r.body["messages"][0]["content"].startswith("You compare")
    ]
    assert len(matches) == 2 * 3 and all("#### Output" in b["messages"][0]["content"] for b in matches)
    assert all(b["model"] == "gpt-4o-mini" for b in matches)
    to_model = [json.dumps(r.body) for r in endpoint.chat_requests() if r.body["model"] == "m"]
    assert len(to_model) == 6 and not [b for b in to_model if "zqx" in b]  # no hidden field reaches the model


def test_cupid_prefmatcher_against_an_openai_compatible_server(endpoint, project, tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    out = run(
        project,
        "--release",
        str(rel),
        "--model",
        "m",
        "--judge-model",
        "kixlab/prefmatcher-7b",
        "--protocol",
        "cupid-prefmatcher",
        "--decomposer-model",
        "decomposer-x",
    )
    bodies = [r.body for r in endpoint.chat_requests()]
    pm = [b for b in bodies if b["messages"][0]["content"].startswith("You decide")]
    assert pm and all(b["model"] == "kixlab/prefmatcher-7b" for b in pm)
    assert all(b["messages"][-1]["content"].startswith("#### Criterion") for b in pm)
    assert {b["model"] for b in bodies if b["messages"][0]["content"].startswith("You turn")} == {
        "decomposer-x"
    }
    o = rows(out, "inference")["consistent"]  # p0 consistent: 1.5 of 2 both ways
    assert (o["precision"], o["recall"]) == (0.75, 0.75)
    assert out["run"]["settings"]["decomposer_model"] == "decomposer-x"


def test_cupid_official_generation_uses_the_rubric_and_scores_a_failed_judge_zero(
    endpoint, project, tmp_path
):
    rel = cupid_release(tmp_path, personas=1)
    out = run(project, "--release", str(rel), "--model", "m", "--task", "generation")
    g = rows(out, "generation")["overall"]
    # p0 consistent 7, p0 changing: no score section -> 0; p0 contrastive: context length -> 0
    assert (g["n_counted"], g["mean"], g["n_judge_failed"], g["n_context_length"]) == (
        3,
        round(7 / 3, 6),
        1,
        1,
    )
    stored = json.loads(
        CliRunner()
        .invoke(cli, ["eval", "report", out["run"]["run_id"], "--format", "json", "-p", str(project.root)])
        .output.split("\nwrote ")[0]
    )
    assert stored["protocol"] == "cupid-official" and stored["rows"] == out["rows"]


def write_checkout(root: Path) -> Path:
    """A CUPID checkout's prompt layout, with texts the test recognises."""
    files = {
        "prompts/evaluation/preference_inferrer.yaml": {
            "system_prompt": "TEST INFERRER system",
            "user_prompt": "LOG:\n{interaction_log}\nNOW: {curr_request}\n### Most Likely Preference ...",
        },
        "prompts/synthesis/preference_decomposer.yaml": {
            "system_prompt": "TEST DECOMPOSER {{braces}} kept",
            "user_prompt": "P: {preferences}",
        },
        "prompts/evaluation/preference_matcher.yaml": {
            "system_prompt": "TEST MATCHER with examples:\n{examples}",
            "user_prompt": "#### Preference\n\n{preference}\n\n#### Checklist\n\n{checklist}",
        },
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    module = root / "evaluation" / "modules" / "preference_matcher.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        'EXAMPLES = [{"preference": "Checkout example pref", "checklist": {"Is it ok?": 0.5}}]\n'
        "def ignored(): raise SystemExit\n",
        encoding="utf-8",
    )
    return root


def test_prompts_from_a_cupid_checkout_are_used_and_hashed(endpoint, project, tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    checkout = write_checkout(tmp_path / "CUPID")
    out = run(project, "--release", str(rel), "--model", "m", "--prompts", str(checkout), "--limit", "1")
    bodies = [r.body["messages"] for r in endpoint.chat_requests()]
    infer = next(m for m in bodies if m[0]["content"] == "TEST INFERRER system")
    assert (
        infer[1]["content"].startswith("LOG:\n### Session 1")
        and "NOW: Plan a day out for p0" in infer[1]["content"]
    )
    assert any(
        m[0]["content"] == "TEST DECOMPOSER {braces} kept" for m in bodies
    )  # str.format, as CUPID fills it
    matcher = next(m for m in bodies if m[0]["content"].startswith("TEST MATCHER"))
    assert (
        '"label": "Partially Covered"' in matcher[0]["content"]
        and "Checkout example pref" in matcher[0]["content"]
    )
    prompts = out["run"]["prompts"]
    sha = hashlib.sha256((checkout / "prompts/evaluation/preference_inferrer.yaml").read_bytes()).hexdigest()[
        :12
    ]
    assert prompts["infer"] == f"prompts/evaluation/preference_inferrer.yaml@{sha}"
    assert prompts["match_examples"].startswith("evaluation/modules/preference_matcher.py@")
    assert out["run"]["settings"]["prompts_from"] == str(checkout.resolve())
    assert rows(out, "inference")["overall"]["n_counted"] == 1


def test_a_checkout_without_a_prompt_file_is_one_clear_error(project, tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    checkout = write_checkout(tmp_path / "CUPID")
    (checkout / "prompts/synthesis/preference_decomposer.yaml").unlink()
    result = CliRunner().invoke(
        cli,
        f"eval cupid --release {rel} --model m --prompts {checkout} -p {project.root}".split(),
    )
    assert result.exit_code == 1
    assert "no prompts/synthesis/preference_decomposer.yaml (needed for the decompose step)" in result.output
    assert "Traceback" not in result.output and project.store.eval.runs() == []
