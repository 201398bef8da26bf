"""`prefkit memories extract`: two LLM stages over HTTP (loopback server), selection, tasks, resume."""

from __future__ import annotations

import json
import re

import pytest
import wildchat_fixture as fx
from click.testing import CliRunner
from fakeopenai import openai_projects
from prefkit.cli import cli
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.memories.extract import ExtractionConfig, run_extraction


def _user_turns(user_msg: str) -> list[tuple[int, str]]:
    return [(int(i), text) for i, text in re.findall(r"^\[(\d+)\] user: (.+)$", user_msg, re.M)]


def candidates(user_msg: str) -> dict:
    turns = _user_turns(user_msg)
    (i0, t0), (_i1, t1) = turns[0], turns[1]
    return {
        "memories": [
            {
                "type": "direct",
                "label": "Plans/Schedule",
                "value": "Is planning a trip",
                "reasoning": "They ask how to plan a trip.",
                "evidence": {"utterance_index": i0, "text": t0.split(":")[1].strip()},
                "confidence": 0.9,
                "time_scope": "short_term",
            },
            {
                "type": "indirect",
                "label": "Preferences/Travel_Mode",
                "value": "Likes to organise travel in advance",
                "reasoning": "Repeated planning questions.",
                # quoted from another turn than cited: prefkit corrects the index
                "evidence": {"utterance_index": i0, "text": t1},
                "confidence": 0.6,
                "time_scope": "long_term",
            },
            {
                "type": "direct",
                "label": "Personal_Background/Occupation",
                "value": "Works as a pilot",
                "reasoning": "A guess.",
                "evidence": {"utterance_index": i0, "text": "I fly planes for a living"},
                "confidence": 0.3,
                "time_scope": "long_term",
            },
        ]
    }


class Responder:
    def __init__(self, drop_first_judgement: bool = False):
        self.drop = drop_first_judgement
        self.validations = 0

    def __call__(self, body: dict) -> dict:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if system.startswith("You read a conversation"):
            return candidates(user)
        assert system.startswith("You check candidate memories")
        self.validations += 1
        ids = re.findall(r"^- (m\d+) \(", user, re.M)
        out = [
            {"memory_id": "m1", "verdict": "keep", "confidence": 0.95, "reason": "Stated plainly."},
            {"memory_id": "m2", "verdict": "keep", "confidence": 0.65, "reason": "A reasonable reading."},
            {"memory_id": "m3", "verdict": "reject", "confidence": 0.10, "reason": "Nothing supports it."},
        ]
        assert ids == ["m1", "m2", "m3"]
        if self.drop and self.validations == 1:
            out = out[:2]  # breaks "may not remove": the answer is asked again
        return {"judgements": out}


@pytest.fixture
def wildchat_project(tmp_path, monkeypatch):
    """``make(responder) -> (server, project)``: a project on a loopback server, the fixture ingested."""
    with openai_projects(tmp_path, monkeypatch, lambda n: f"proj{n}") as make:

        def with_wildchat(responder):
            server, project = make(responder)
            fx.ingest_clean(project.store, tmp_path)
            return server, project

        yield with_wildchat


def extract(project, **kw):
    with LLMLayer(project.store, llm_config=project.config.llm, backend="openai", progress=False) as layer:
        return run_extraction(project.store, layer, ExtractionConfig(**kw))


def test_two_stages_over_http_keep_reject_and_recalibrate(wildchat_project):
    server, project = wildchat_project(Responder())
    report = extract(project, limit=4)
    assert (report.dialogues, report.candidates, report.kept, report.rejected) == (4, 12, 8, 4)
    assert server.count() == 8  # one stage-1 and one stage-2 call per dialogue
    kept = [
        m for m in project.store.content.memories(origin="candidate") if m.source_model.startswith("extract:")
    ]
    assert sorted({m.record["confidence"] for m in kept}) == [0.65, 0.95]
    m2 = next(m for m in kept if m.memory_id == "m2")
    turns = project.store.content.dialogue(m2.dialogue_id).turns
    assert m2.record["evidence"]["text"] in turns[m2.record["evidence"]["utterance_index"]].content
    assert m2.raw["evidence_flags"] and m2.raw["evidence_flags"][0].startswith("index_corrected_from_")
    rejected = project.store.content.memories(origin="candidate_rejected")
    assert {m.record["confidence"] for m in rejected} == {0.10}
    assert all(m.raw["validation"]["reason"] == "Nothing supports it." for m in rejected)
    assert all(m.raw["evidence_flags"] == ["evidence_not_found"] for m in rejected)


def test_validation_may_not_drop_a_candidate(wildchat_project):
    responder = Responder(drop_first_judgement=True)
    server, project = wildchat_project(responder)
    report = extract(project, limit=1)
    assert report.kept == 2 and responder.validations == 2  # asked again after the missing m3
    failure = project.store.content.failures(stage="memories.validate")[0]
    assert "missing ['m3']" in failure.error


def test_cap_per_label_and_implicit_rule(wildchat_project):
    server, project = wildchat_project(Responder())
    report = extract(project, limit=3, cap_per_label=2)
    # m1 (Plans/Schedule) and m2 (Travel_Mode) are kept in the first two dialogues, capped in the third.
    assert (report.kept, report.capped) == (4, 2)
    assert len(project.store.content.memories(origin="candidate_capped")) == 2


def test_rerun_resumes_without_calls_and_tasks_are_created(wildchat_project):
    server, project = wildchat_project(Responder())
    runner = CliRunner()
    args = ["memories", "extract", "--backend", "openai", "--limit", "2", "--json", "-p", str(project.root)]
    first = runner.invoke(cli, args)
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    assert data["kept"] == 4 and data["tasks_created"] == 2
    tasks = project.store.labels.tasks(kind="memory_verify")
    assert len(tasks[0].payload["candidates"]) == 2
    server.reset_log()
    again = json.loads(runner.invoke(cli, args).output)
    # The two extracted dialogues are skipped; the next two are extracted (two calls each).
    assert again["skipped"] == 2 and again["dialogues"] == 2 and server.count() == 4


def test_offline_backend_is_marked_offline(tmp_path):
    project, report = fx.extracted_project(tmp_path, limit=5)
    assert report.kept > 0
    refs = project.store.releases.offline_references()
    assert any(r.table == "memories" for r in refs)
    project.close()
