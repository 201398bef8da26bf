"""What a suggestion is for each task kind: the requests it needs and how their answers (and the
programmatic checks) become label-shaped values, and the offline backend's stand-in answers; the
table in docs/assist.md (*Suggestions per task kind*) says what each built-in kind's suggestion is. A
declared kind (``kinds/<name>.toml``) gets one call per item, the prompt and the answer's schema made
from the kind's title, fields and questions (:data:`DECLARED`).

A kind names its :class:`Suggester` by import reference (``TaskKind.suggestions``, found as its app
form is); a kind naming none is refused by ``prefkit suggest`` with one line. This module names no
kind and imports none; nothing here writes to the store.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from prefkit.curation.annotation.evidence_spans import grapheme_bounds
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.quality.evidence import Normalized, check_memory, memory_evidence
from prefkit.curation.store import DialogueTurn
from prefkit.pipelines.eval.offline import overlap, words
from prefkit.pipelines.llm import LLMRequest, LLMResponse, load_template, register_offline
from prefkit.pipelines.llm.templates import PromptTemplate, rendered_request
from prefkit.pipelines.memories.tasks import leakage
from prefkit.schemas.assist import (
    CoverageSuggestion,
    ExpressedDecision,
    ExpressedSuggestion,
    MemorySupport,
    TaskQcJudgement,
)
from prefkit.schemas.common import canonical_json, content_hash
from prefkit.schemas.curation import AnnotationTask
from pydantic import BaseModel, ConfigDict, Field, create_model

if TYPE_CHECKING:
    from prefkit.curation.annotation.declared import DeclaredKind

STAGE = "assist"


@dataclass(frozen=True)
class Suggester:
    """One kind's suggestion: ``requests(task, judge)`` → the calls it needs (maybe none);
    ``values(task, answers, judge)`` → ``(values, detail)`` from the answers in request order."""

    prompt: PromptTemplate
    requests: Callable[[AnnotationTask, bool], list[LLMRequest]]
    values: Callable[[AnnotationTask, Sequence[LLMResponse], bool], tuple[dict[str, Any], dict[str, Any]]]
    uses_llm: Callable[[bool], bool] = field(default=lambda judge: True)

    def prompt_hash(self, kind: str, judge: bool) -> str:
        """The hash of the prompt the kind's suggestions use ('-' when they use none)."""
        return self.prompt.hash if self.uses_llm(judge) else "-"


def _request(
    prompt, task: AnnotationTask, key: str, model, ctx: dict[str, Any], digest: str = ""
) -> LLMRequest:
    return rendered_request(
        (("user", prompt.render(**ctx)),),
        digest or prompt.hash,
        stage=STAGE,
        item=f"{task.task_id}{key}",
        role="judge",
        response_model=model,
        context=ctx,
        temperature=0.0,
        max_tokens=400,
    )


# -- preference matching ---------------------------------------------------------------------------------
MATCH_PROMPT = load_template(__name__, "suggest_match")


def _match_requests(task: AnnotationTask, judge: bool) -> list[LLMRequest]:
    p = task.payload
    ctx = {"checklist_item": p["checklist_item"], "candidate": p["candidate"]}
    return [_request(MATCH_PROMPT, task, "", CoverageSuggestion, ctx)]


def _match_values(task, answers, judge):
    answer: CoverageSuggestion = answers[0].parsed
    return {"coverage": answer.coverage}, {"reason": answer.reason}


@register_offline(CoverageSuggestion)
def offline_coverage(request: LLMRequest, rng: random.Random) -> CoverageSuggestion:
    ctx = request.offline_context
    share = overlap(ctx["checklist_item"], ctx["candidate"])
    coverage = "fully" if share >= 0.5 else "partially" if share >= 0.2 else "not_covered"
    return CoverageSuggestion(reason=f"word overlap {share:.2f} (offline)", coverage=coverage)


MATCH = Suggester(MATCH_PROMPT, _match_requests, _match_values)


# -- preference expressed -------------------------------------------------------------------------------
EXPRESSED_PROMPT = load_template(__name__, "suggest_expressed")


def _user_turns(task: AnnotationTask) -> list[dict[str, Any]]:
    return [
        {"index": t["index"], "content": t["content"]} for t in task.payload["turns"] if t["role"] == "user"
    ]


def _expressed_requests(task: AnnotationTask, judge: bool) -> list[LLMRequest]:
    p = task.payload
    ctx = {"preference": p.get("preference") or "", "checklist": p["checklist"], "turns": _user_turns(task)}
    return [_request(EXPRESSED_PROMPT, task, "", ExpressedSuggestion, ctx)]


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


@register_offline(ExpressedSuggestion)
def offline_expressed(request: LLMRequest, rng: random.Random) -> ExpressedSuggestion:
    ctx = request.offline_context
    items = []
    for i, question in enumerate(ctx["checklist"]):
        turns = [t["index"] for t in ctx["turns"] if overlap(question, t["content"]) >= 0.25]
        items.append(ExpressedDecision(item=i, expressed=bool(turns), evidence=turns))
    return ExpressedSuggestion(items=items)


EXPRESSED = Suggester(EXPRESSED_PROMPT, _expressed_requests, _expressed_values)


# -- memory verification --------------------------------------------------------------------------------
MEMORY_PROMPT = load_template(__name__, "suggest_memory")


def _memory_requests(task: AnnotationTask, judge: bool) -> list[LLMRequest]:
    if not judge:
        return []
    turns = _user_turns(task)
    out = []
    for c in task.payload["candidates"]:
        memory = c["memory"] if isinstance(c["memory"], dict) else {}
        quote, _ = memory_evidence(memory)
        ctx = {"memory": str(memory.get("value", "")), "quote": quote or "", "turns": turns}
        out.append(_request(MEMORY_PROMPT, task, f":{c['key']}", MemorySupport, ctx))
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


@register_offline(MemorySupport)
def offline_memory(request: LLMRequest, rng: random.Random) -> MemorySupport:
    ctx = request.offline_context
    share = overlap(ctx["memory"], " ".join(t["content"] for t in ctx["turns"]))
    return MemorySupport(reason=f"word overlap {share:.2f} (offline)", supported=share >= 0.3)


MEMORY = Suggester(MEMORY_PROMPT, _memory_requests, _memory_values, uses_llm=lambda judge: judge)


# -- task QC --------------------------------------------------------------------------------------------
QC_PROMPT = load_template(__name__, "suggest_task_qc")


def _memory_value(task: AnnotationTask) -> str:
    text = task.payload.get("memory") or ""
    return text.split(": ", 1)[1] if ": " in text else text


def _qc_requests(task: AnnotationTask, judge: bool) -> list[LLMRequest]:
    p = task.payload
    ctx = {k: p[k] for k in ("question", "generated", "memory", "gold_answer")}
    return [_request(QC_PROMPT, task, "", TaskQcJudgement, ctx)]


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


@register_offline(TaskQcJudgement)
def offline_task_qc(request: LLMRequest, rng: random.Random) -> TaskQcJudgement:
    ctx = request.offline_context
    memory = words(ctx["memory"])
    share = len(memory & words(ctx["generated"])) / len(memory) if memory else 0.0
    return TaskQcJudgement(
        leak_reason=f"{share:.2f} of the memory's words in the text (offline)",
        leaks=share >= 0.6,
        answer_reason="not checked offline",
        answer_correct=True,
    )


TASK_QC = Suggester(QC_PROMPT, _qc_requests, _qc_values)


# -- declared kinds -------------------------------------------------------------------------------------
DECLARED_PROMPT = load_template(__name__, "suggest_declared")


@cache
def _answer_model(declaration: str) -> type[BaseModel]:
    """The answer's schema of a declared kind (by its canonical declaration): a reason, then one key
    per question, its choices as literals; an optional question may be null."""
    decl = json.loads(declaration)
    fields: dict[str, Any] = {"reason": (str, Field(description="One sentence: why these answers."))}
    chat = {f["name"] for f in decl["fields"] if f["type"] == "chat"}
    for q in decl["questions"]:
        choice: Any = Literal[tuple(q["labels"] or q["values"] or [""])]
        shape = {"label": choice, "rating": choice, "text": str}.get(q["type"], list[choice])
        if q["type"] == "span":  # words, not offsets: the words are found in the field (_declared_values)
            turn = {"turn": (int, Field(ge=0, description="The turn's number, from 0."))}
            words = (str, Field(min_length=1, description=f"Words copied exactly from {q['field']}."))
            config = ConfigDict(extra="forbid")
            at = turn if q["field"] in chat else {}
            span = create_model(  # type: ignore[call-overload]
                f"{q['name']}_span", __config__=config, **at, words=words, label=(choice, ...)
            )
            shape = list[span]
        desc = q["title"] or q["name"]
        default = ... if q["required"] else None
        fields[q["name"]] = (shape if q["required"] else shape | None, Field(default, description=desc))
    return create_model(f"{decl['name']}_suggestion", __config__=ConfigDict(extra="forbid"), **fields)


def _declared(name: str) -> tuple[DeclaredKind, str, str]:
    """A declared kind, its canonical declaration and its prompt's hash: the template's joined with
    the declaration's, so a changed question is another prompt (and another run)."""
    kind: DeclaredKind = get_kind(name)  # type: ignore[assignment]
    declaration = canonical_json(kind.declaration.model_dump(mode="json"))
    return kind, declaration, content_hash(DECLARED_PROMPT.hash + declaration, 12)


def _declared_requests(task: AnnotationTask, judge: bool) -> list[LLMRequest]:
    kind, declaration, digest = _declared(task.kind)
    decl = kind.declaration
    fields = [
        {**f.model_dump(), "title": f.title or f.name, "value": task.payload.get(f.name)} for f in decl.fields
    ]
    questions = [{**q.model_dump(), "title": q.text(), "choices": q.choices()} for q in decl.questions]
    marked, chat = (
        [q.field for q in decl.questions if q.type == "span"],
        [f.name for f in decl.fields if f.type == "chat"],
    )
    ctx = {"title": kind.title, "fields": fields, "questions": questions, "marked": marked, "chat": chat}
    return [_request(DECLARED_PROMPT, task, "", _answer_model(declaration), ctx, digest)]


def _declared_values(task, answers, judge):
    answer = answers[0].parsed.model_dump()
    reason = answer.pop("reason")
    kind = get_kind(task.kind)
    for q in kind.declaration.questions:  # type: ignore[attr-defined]
        if q.type == "span" and answer.get(q.name):
            answer[q.name] = _offsets(answer[q.name], task.payload.get(q.field))
    return {k: v for k, v in answer.items() if v not in (None, [], "")}, {"reason": reason}


def _offsets(spans: list[dict[str, Any]], shown: Any) -> list[dict[str, Any]]:
    """Suggested words as spans: each at its next place in the field (the turn named, on a chat: the
    same words given twice are their first two places), on whole characters; words not there are left out."""
    out, after = [], dict[tuple[Any, str], int]()
    for s in spans:
        turn = s.pop("turn", None)
        text = shown if turn is None else (shown[turn]["content"] if turn < len(shown or []) else "")
        at = (text or "").find(s["words"], after.get((turn, s["words"]), 0))
        after[(turn, s["words"])] = at + 1
        span = {"start": at, "end": at + len(s["words"]), "label": s["label"]}
        if at >= 0 and {span["start"], span["end"]} <= grapheme_bounds(text):
            out.append(span if turn is None else {"turn": turn, **span})
    return out


class _DeclaredSuggester(Suggester):
    def prompt_hash(self, kind: str, judge: bool) -> str:
        return _declared(kind)[2]


@register_offline(STAGE)
def offline_declared(request: LLMRequest, rng: random.Random) -> BaseModel:
    """A declared kind's stand-in: each choice scored by the share of its words in the item's text
    (label: the best, multi_label: those above a quarter, rating: the share along the scale,
    ranking: best first), a text answer left open unless required."""
    ctx = request.offline_context
    seen = " ".join(json.dumps(f["value"], ensure_ascii=False) for f in ctx["fields"])
    out: dict[str, Any] = {"reason": "word overlap with the item (offline)"}
    for q in ctx["questions"]:
        score = {c: overlap(str(c), seen) for c in q["choices"]}
        best = sorted(q["choices"], key=lambda c: -score[c])
        if q["type"] == "label":
            out[q["name"]] = best[0]
        elif q["type"] == "multi_label":
            out[q["name"]] = [c for c in q["choices"] if score[c] >= 0.25] or None
        elif q["type"] == "rating":
            share = overlap(q["title"], seen)
            out[q["name"]] = q["choices"][round(share * (len(q["choices"]) - 1))]
        elif q["type"] == "ranking":
            out[q["name"]] = best
        elif q["type"] == "span":
            out[q["name"]] = _offline_spans(q, next(f for f in ctx["fields"] if f["name"] == q["field"]))
        elif q["required"]:
            out[q["name"]] = "(offline stand-in)"
    assert request.response_model is not None
    return request.response_model.model_validate(out)


def _offline_spans(q: dict[str, Any], field: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Each word of the field that shares a word with a label, marked with it (a required question with
    none: the first word, with the first label)."""
    chat = field["type"] == "chat"
    texts = [t["content"] for t in field["value"] or []] if chat else [field["value"] or ""]
    where = (lambda n: {"turn": n}) if chat else (lambda n: {})
    spans = [
        {**where(n), "words": w, "label": label}
        for n, text in enumerate(texts)
        for w in text.split()
        for label in q["choices"]
        if words(w) & words(label)
    ]
    first = next(((n, text.split()[0]) for n, text in enumerate(texts) if text.split()), None)
    if not spans and q["required"] and first:
        spans = [{**where(first[0]), "words": first[1], "label": q["choices"][0]}]
    return spans or None


DECLARED = _DeclaredSuggester(DECLARED_PROMPT, _declared_requests, _declared_values)
