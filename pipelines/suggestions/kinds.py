"""What a suggestion is for each task kind: the requests it needs and how their answers (and the
programmatic checks) become label-shaped values.

- ``preference_match``: fully / partially / not covered (one judge call per pair);
- ``preference_expressed``: per checklist item, expressed or not and the evidence turns (one call per
  session; evidence outside the session's user turns is dropped);
- ``memory_verify``: per candidate memory, supported or not: its quote found in the dialogue by the
  programmatic evidence check (:mod:`prefkit.curation.quality.evidence`), and with ``judge`` also a
  judge call per candidate (supported only when both agree);
- ``task_qc``: the checks that failed: the programmatic leakage check of the build
  (:func:`prefkit.pipelines.memories.tasks.leakage`, tasks 3 and 4) and a judge's leakage and
  answer checks.

A kind registers a :class:`Suggester` by name (:func:`register_suggester`); a kind without one is
refused by ``prefkit suggest`` with one line. Nothing here writes to the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prefkit.curation.annotation.kinds import memory_verify, preference_expressed, preference_match, task_qc
from prefkit.curation.quality.evidence import Normalized, check_memory, memory_evidence
from prefkit.curation.store import DialogueTurn
from prefkit.pipelines.llm import LLMRequest, LLMResponse, load_template
from prefkit.pipelines.llm.templates import rendered_request
from prefkit.pipelines.memories.tasks import leakage
from prefkit.pipelines.suggestions import offline as _offline  # noqa: F401 - registers the offline answers
from prefkit.schemas.assist import CoverageSuggestion, ExpressedSuggestion, MemorySupport, TaskQcJudgement
from prefkit.schemas.curation import AnnotationTask

STAGE = "assist"
PROMPTS = {
    preference_match.KIND: load_template(__name__, "suggest_match"),
    preference_expressed.KIND: load_template(__name__, "suggest_expressed"),
    memory_verify.KIND: load_template(__name__, "suggest_memory"),
    task_qc.KIND: load_template(__name__, "suggest_task_qc"),
}


@dataclass(frozen=True)
class Suggester:
    """One kind's suggestion: ``requests(task, judge)`` → the calls it needs (maybe none);
    ``values(task, answers, judge)`` → ``(values, detail)`` from the answers in request order."""

    requests: Callable[[AnnotationTask, bool], list[LLMRequest]]
    values: Callable[[AnnotationTask, Sequence[LLMResponse], bool], tuple[dict[str, Any], dict[str, Any]]]
    uses_llm: Callable[[bool], bool]


SUGGESTERS: dict[str, Suggester] = {}


def register_suggester(kind: str, suggester: Suggester) -> None:
    SUGGESTERS[kind] = suggester


def _request(kind: str, task: AnnotationTask, key: str, model, ctx: dict[str, Any]) -> LLMRequest:
    prompt = PROMPTS[kind]
    return rendered_request(
        (("user", prompt.render(**ctx)),),
        prompt.hash,
        stage=STAGE,
        item=f"{task.task_id}{key}",
        role="judge",
        response_model=model,
        context=ctx,
        temperature=0.0,
        max_tokens=400,
    )


def prompt_hash(kind: str, judge: bool) -> str:
    """The hash of the prompt a kind's suggestions use ('-' when they use none)."""
    if kind in SUGGESTERS and not SUGGESTERS[kind].uses_llm(judge):
        return "-"
    return PROMPTS[kind].hash


# -- preference matching ---------------------------------------------------------------------------------
def _match_requests(task: AnnotationTask, judge: bool) -> list[LLMRequest]:
    p = task.payload
    ctx = {"checklist_item": p["checklist_item"], "candidate": p["candidate"]}
    return [_request(preference_match.KIND, task, "", CoverageSuggestion, ctx)]


def _match_values(task, answers, judge):
    answer: CoverageSuggestion = answers[0].parsed
    return {"coverage": answer.coverage}, {"reason": answer.reason}


# -- preference expressed -------------------------------------------------------------------------------
def _user_turns(task: AnnotationTask) -> list[dict[str, Any]]:
    return [
        {"index": t["index"], "content": t["content"]} for t in task.payload["turns"] if t["role"] == "user"
    ]


def _expressed_requests(task: AnnotationTask, judge: bool) -> list[LLMRequest]:
    p = task.payload
    ctx = {"preference": p.get("preference") or "", "checklist": p["checklist"], "turns": _user_turns(task)}
    return [_request(preference_expressed.KIND, task, "", ExpressedSuggestion, ctx)]


def _expressed_values(task, answers, judge):
    answer: ExpressedSuggestion = answers[0].parsed
    users = {t["index"] for t in _user_turns(task)}
    by_item = {d.item: d for d in answer.items}
    items = []
    for i in range(len(task.payload["checklist"])):
        d = by_item.get(i)
        expressed = bool(d and d.expressed)
        evidence = sorted({e for e in d.evidence if e in users}) if d and expressed else []
        items.append({"item": i, "expressed": expressed, "evidence": evidence})
    missing = [i for i in range(len(task.payload["checklist"])) if i not in by_item]
    return {"items": items}, {"unanswered_items": missing}


# -- memory verification --------------------------------------------------------------------------------
def _memory_requests(task: AnnotationTask, judge: bool) -> list[LLMRequest]:
    if not judge:
        return []
    turns = _user_turns(task)
    out = []
    for c in task.payload["candidates"]:
        memory = c["memory"] if isinstance(c["memory"], dict) else {}
        quote, _ = memory_evidence(memory)
        ctx = {"memory": str(memory.get("value", "")), "quote": quote or "", "turns": turns}
        out.append(_request(memory_verify.KIND, task, f":{c['key']}", MemorySupport, ctx))
    return out


def _memory_values(task, answers, judge):
    turns = Normalized([DialogueTurn(t["index"], t["role"], t["content"]) for t in task.payload["turns"]])
    decisions, detail = [], {}
    for i, c in enumerate(task.payload["candidates"]):
        memory = c["memory"] if isinstance(c["memory"], dict) else {}
        verdict = check_memory(memory, turns, cite_required=False)
        found = verdict.status != "fail"
        why: dict[str, Any] = {
            "evidence": verdict.status,
            "reason": verdict.reason,
            "found_in": verdict.found_in,
            "quote": memory_evidence(memory)[0],
        }
        supported = found
        if judge:
            answer: MemorySupport = answers[i].parsed
            why["judge"] = {"supported": answer.supported, "reason": answer.reason}
            supported = found and answer.supported
        decision = {"key": c["key"], "decision": "accept" if supported else "reject"}
        if not supported:
            decision["reason"] = "not_grounded"
        decisions.append(decision)
        detail[c["key"]] = why
    return {"decisions": decisions}, {"memories": detail}


# -- task QC --------------------------------------------------------------------------------------------
def _memory_value(task: AnnotationTask) -> str:
    text = task.payload.get("memory") or ""
    return text.split(": ", 1)[1] if ": " in text else text


def _qc_requests(task: AnnotationTask, judge: bool) -> list[LLMRequest]:
    p = task.payload
    ctx = {k: p[k] for k in ("question", "generated", "memory", "gold_answer")}
    return [_request(task_qc.KIND, task, "", TaskQcJudgement, ctx)]


def _qc_values(task, answers, judge):
    p = task.payload
    checks = []
    if not p["track"].startswith("task2"):  # a task-2 dialogue is meant to carry its memories
        why = leakage(p["generated"], {"value": _memory_value(task)})
        checks.append({"check": "leakage", "by": "programmatic", "passed": why is None, "reason": why or ""})
    answer: TaskQcJudgement = answers[0].parsed
    checks.append(
        {"check": "leakage", "by": "judge", "passed": not answer.leaks, "reason": answer.leak_reason}
    )
    checks.append(
        {"check": "answer", "by": "judge", "passed": answer.answer_correct, "reason": answer.answer_reason}
    )
    failed = [c for c in checks if not c["passed"]]
    values = {
        "leakage": "leaks" if any(c["check"] == "leakage" for c in failed) else "none",
        "answer": "incorrect" if any(c["check"] == "answer" for c in failed) else "correct",
    }
    return values, {"checks": checks, "failed": [f"{c['check']} ({c['by']})" for c in failed]}


register_suggester(preference_match.KIND, Suggester(_match_requests, _match_values, lambda judge: True))
register_suggester(
    preference_expressed.KIND, Suggester(_expressed_requests, _expressed_values, lambda judge: True)
)
register_suggester(memory_verify.KIND, Suggester(_memory_requests, _memory_values, lambda judge: judge))
register_suggester(task_qc.KIND, Suggester(_qc_requests, _qc_values, lambda judge: True))
