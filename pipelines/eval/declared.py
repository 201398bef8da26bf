"""A model on a declared kind's benchmark: what its ``[evaluation]`` table says to ask, and the answers.

The release's config ``KIND`` holds the decided items (``data/KIND/<split>.jsonl``: id, the fields,
``answers``); the reference of an item is the decided answer of the table's ``target``. The model is
asked the table's ``input`` (a Jinja template over the item's fields, after the ``messages`` chat
field's turns when given) for structured output shaped by the target's type; an answer the target
does not accept is a failure, counted, never dropped. This module names no kind and writes no SQL.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import jinja2
from prefkit.curation.annotation.declared import EVAL_METRICS, DeclaredKind, LabelError
from prefkit.pipelines.eval.alpsbench import private_dir_for
from prefkit.pipelines.eval.offline import overlap
from prefkit.pipelines.eval.prompting import PACKAGE
from prefkit.pipelines.eval.release import (
    EvalInputError,
    ReleaseRef,
    check_line_protocol,
    config_files,
    jsonl_lines,
    release_ref,
)
from prefkit.pipelines.llm import LLMRequest, register_offline
from prefkit.pipelines.llm.templates import render_messages, rendered_request
from prefkit.schemas.common import canonical_json, content_hash
from pydantic import BaseModel, ConfigDict, Field, create_model

STAGE = "eval.declared"
TEMPLATE = "declared_answer"
JUDGE = "declared_judge"
PROTOCOL = "prefkit-declared-v1"
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
_template = cache(_ENV.from_string)  # compiled once per declaration's input, not once per item


@dataclass
class DeclaredItem:
    id: str
    payload: dict[str, Any]  # the fields (and meta) the template sees
    gold: Any  # the decided answer of the target


def evaluated(kind: Any) -> DeclaredKind:
    """``kind`` when it is a declared kind with an ``[evaluation]`` table, else one clear error."""
    if isinstance(kind, DeclaredKind) and kind.declaration.evaluation is not None:
        return kind
    where = kind.where if isinstance(kind, DeclaredKind) else f"task kind {kind.name!r}"
    raise EvalInputError(f"{where}: no [evaluation] table: say what the model answers (docs/eval.md)")


def declaration_hash(kind: DeclaredKind) -> str:
    """The hash of what a score depends on: the fields, the questions' names, types and choices, and
    the ``[evaluation]`` table; not titles or guidelines."""
    decl = kind.declaration
    shape = {
        "fields": [(f.name, f.type) for f in decl.fields],
        "questions": [
            (q.name, q.type, q.choices(), q.values_from, q.field, q.ordinal) for q in decl.questions
        ],
        "evaluation": decl.evaluation.model_dump(mode="json") if decl.evaluation else None,
    }
    return content_hash(shape, 12)


def target(kind: DeclaredKind) -> dict[str, Any]:
    """What the run stores of its target: name, type, choices and metrics (so reports need no kind)."""
    ev = kind.declaration.evaluation
    assert ev is not None
    q = kind.questions[ev.target]
    metrics = ev.metrics or EVAL_METRICS[q.type]
    return {"name": q.name, "type": q.type, "choices": ev.scale or q.choices(), "metrics": metrics}


def load_declared(
    release: Path, kind: DeclaredKind, split: str | None, private: Path | None = None
) -> tuple[ReleaseRef, dict[str, DeclaredItem], str]:
    """``(release ref, items with a reference by id, split)``; ``split`` defaults to the config's only
    split, else ``validation``. A ``test`` split cut with ``[release] splits`` has its answers in the
    private ``KIND_test_answers`` config: read from ``private`` (default ``releases-private/VERSION``)."""
    files = config_files(release, kind.name)
    splits = sorted(f.stem for f in files)
    split = split or (splits[0] if len(splits) == 1 else "validation")
    path = Path(release) / "data" / kind.name / f"{split}.jsonl"
    if split not in splits:
        raise EvalInputError(f"{release}: config {kind.name} has no split {split!r} ({', '.join(splits)})")
    name = target(kind)["name"]
    secret = Path(private or private_dir_for(Path(release))) / f"{kind.name}_test_answers" / "test.jsonl"
    hidden: dict[str, Any] = {}
    if split == "test" and (private is not None or secret.is_file()):
        if not secret.is_file():
            raise EvalInputError(f"{secret}: no private test answers of {kind.name} in --private")
        hidden = {str(row["id"]): row.get("answers") for _lineno, row in jsonl_lines(secret)}
    items: dict[str, DeclaredItem] = {}
    for _lineno, row in jsonl_lines(path):
        gold = _offsets(kind, name, (hidden.get(str(row["id"])) or row.get("answers") or {}).get(name))
        if gold is not None:
            payload = {f.name: row.get(f.name) for f in kind.declaration.fields}
            items[str(row["id"])] = DeclaredItem(str(row["id"]), {**payload, "meta": row.get("meta")}, gold)
    if not items:
        raise EvalInputError(f"{path}: no item with a decided {name!r} to evaluate on")
    return release_ref(release, f"{kind.name}:{split}", [path] + ([secret] if hidden else [])), items, split


def _offsets(kind: DeclaredKind, name: str, value: Any) -> Any:
    """A span answer as the release types it (each span with the ``text`` it marks) as offsets only;
    a text question's as the texts people gave (None: none)."""
    if kind.questions[name].type == "text" and isinstance(value, dict):
        return (
            sorted({g["text"] for g in value.get("given") or []} | {value.get("adjudicated")} - {None})
            or None
        )
    if kind.questions[name].type != "span" or not isinstance(value, list):
        return value
    return [{k: v for k, v in s.items() if k != "text"} if isinstance(s, dict) else s for s in value]


@cache
def _answer_model(question: str, chat: bool, choices: str) -> type[BaseModel]:
    q = json.loads(question)
    choice: Any = Literal[tuple(json.loads(choices) or [""])]
    shape: Any = choice if q["type"] in ("label", "rating") else str if q["type"] == "text" else list[choice]
    if q["type"] == "span":
        at = {"turn": (int, Field(ge=0, description="The message's number, from 0."))} if chat else {}
        at |= {"start": (int, ...), "end": (int, ...), "label": (choice, ...)}
        span = create_model("span", __config__=ConfigDict(extra="forbid"), **at)  # type: ignore[call-overload]
        shape = list[span]
    answer = (shape, Field(description=q["title"] or q["name"]))
    return create_model("answer", __config__=ConfigDict(extra="forbid"), answer=answer)


def _prompt(kind: DeclaredKind, item: DeclaredItem) -> str:
    ev = kind.declaration.evaluation
    assert ev is not None
    try:
        return _template(ev.input).render(id=item.id, **item.payload)
    except jinja2.TemplateError as exc:
        raise EvalInputError(f"{kind.where}: key evaluation.input: item {item.id}: {exc}") from None


def model_request(kind: DeclaredKind, item: DeclaredItem) -> LLMRequest:
    ev = kind.declaration.evaluation
    assert ev is not None
    q = kind.questions[ev.target]
    fields = {f.name: f.type for f in kind.declaration.fields}
    chat = q.type == "span" and fields.get(q.field or "") == "chat"
    prompt = _prompt(kind, item)
    ctx = {
        "type": q.type,
        "choices": q.choices(item.payload),
        "field": q.field,
        "chat": chat,
        "input": prompt,
    }
    (system, *user), digest = render_messages(PACKAGE, TEMPLATE, ctx)
    turns = tuple((t["role"], t["content"]) for t in item.payload.get(ev.messages or "") or ())
    return rendered_request(
        (system, *turns, *user),
        content_hash([digest, declaration_hash(kind)], 12),
        stage=STAGE,
        item=item.id,
        role="assistant",
        response_model=_answer_model(
            canonical_json(q.model_dump(mode="json")), chat, json.dumps(ctx["choices"])
        ),
        context=ctx,
        temperature=0.0,
        offline_answers=__name__,
    )


@register_offline(STAGE)
def offline_answer(request: LLMRequest, rng: random.Random) -> BaseModel:
    """A stand-in: the choices by the share of their words in the prompt (a rating the middle one,
    no span)."""
    ctx, choices = request.offline_context, request.offline_context["choices"]
    best = sorted(choices, key=lambda c: -overlap(str(c), ctx["input"]))
    shapes = {"label": best[:1], "multi_label": [best[:1]], "rating": choices[len(choices) // 2 :][:1]}
    answer = {**shapes, "ranking": [best], "text": ["(an offline stand-in)"]}.get(ctx["type"], [[]])
    assert request.response_model is not None
    return request.response_model.model_validate({"answer": answer[0]})


def _grade_model(scale: str) -> type[BaseModel]:
    grade: Any = Literal[tuple(json.loads(scale))]
    return create_model("grade", __config__=ConfigDict(extra="forbid"), reason=(str, ...), grade=(grade, ...))


def judge_request(kind: DeclaredKind, item: DeclaredItem, answer: str) -> LLMRequest:
    """The judge's call: the answer graded on the rubric's scale against every answer people gave."""
    ev = kind.declaration.evaluation
    assert ev is not None and ev.scale is not None
    ctx = {"rubric": kind.rubric(), "scale": ev.scale, "input": _prompt(kind, item), "references": item.gold}
    messages, digest = render_messages(PACKAGE, JUDGE, {**ctx, "answer": answer})
    return rendered_request(
        messages,
        content_hash([digest, declaration_hash(kind), ctx["rubric"]], 12),
        stage=f"{STAGE}.judge",
        item=item.id,
        role="judge",
        response_model=_grade_model(json.dumps(ev.scale)),
        context={**ctx, "answer": answer},
        temperature=0.0,
        offline_answers=__name__,
    )


@register_offline(f"{STAGE}.judge")
def offline_grade(request: LLMRequest, rng: random.Random) -> BaseModel:
    """A stand-in: the grade along the scale by the answer's best word overlap with people's."""
    ctx = request.offline_context
    share = max([overlap(ctx["answer"], r) for r in ctx["references"]] + [0.0])
    assert request.response_model is not None
    grade = ctx["scale"][round(share * (len(ctx["scale"]) - 1))]
    return request.response_model.model_validate({"reason": "word overlap (offline)", "grade": grade})


def unchecked(model: str) -> dict[str, Any]:
    """The status of a declared run's judge: nothing yet measures it against people's grades."""
    reason = "no check of this judge against people's grades on the run's rubric"
    return {"judge": model, "validated": False, "status": "not validated", "reason": reason}


def judge(
    layer, kind: DeclaredKind, items: dict[str, DeclaredItem], answers: dict
) -> dict[str, tuple[Any, str | None]]:
    """``{id: (grade, error)}`` of every answered item (a failed judge call is a failure too)."""
    ids = sorted(i for i, (a, _e) in answers.items() if a is not None)
    calls = layer.run([judge_request(kind, items[i], answers[i][0]) for i in ids], desc=f"{STAGE}.judge")
    return {
        i: (r.parsed.grade, None) if r.ok and r.parsed else (None, f"judge: {r.error}")
        for i, r in zip(ids, calls, strict=True)
    }


def run_model(layer, kind: DeclaredKind, items: dict[str, DeclaredItem]) -> dict[str, tuple[Any, str | None]]:
    """``{id: (answer, error)}``: a failed call or an answer the target refuses is ``(None, why)``."""
    ids = sorted(items)
    out: dict[str, tuple[Any, str | None]] = {}
    for i, r in zip(ids, layer.run([model_request(kind, items[i]) for i in ids], desc=STAGE), strict=True):
        if not r.ok or r.parsed is None:
            out[i] = (None, r.error or "no answer")
            continue
        try:
            out[i] = (checked(kind, items[i], r.parsed.model_dump()["answer"]), None)
        except LabelError as exc:
            out[i] = (None, f"outside the target: {exc}")
    return out


def checked(kind: DeclaredKind, item: DeclaredItem, value: Any) -> Any:
    """An answer to the target as stored, or one :class:`LabelError` naming what is wrong."""
    return kind.check_answer(target(kind)["name"], _offsets(kind, target(kind)["name"], value), item.payload)


def read_predictions(
    path: Path, kind: DeclaredKind, items: dict[str, DeclaredItem]
) -> dict[str, tuple[Any, str | None]]:
    """A predictions file (``{"id": ITEM_ID, "answer": VALUE}`` lines) checked whole: an unknown or
    repeated id, or an answer outside the target's type, is one error naming file, line and key. A
    ``null`` answer is a failure ("no answer"); an item with no line is one too, in the report."""
    name, seen = target(kind)["name"], dict[str, int]()
    out: dict[str, tuple[Any, str | None]] = {}
    for lineno, raw in jsonl_lines(path):
        where = f"{path}:{lineno}"
        for key in sorted(set(raw) - {"id", "answer", "protocol"}):
            raise EvalInputError(f'{where}: key {key}: not a prediction key (a line is {{"id", "answer"}})')
        pid = raw.get("id")
        if not isinstance(pid, str) or pid not in items:
            raise EvalInputError(f"{where}: key id: {pid!r} is not an evaluated item of {kind.name}")
        if pid in seen:
            raise EvalInputError(f"{where}: key id: {pid!r} repeats line {seen[pid]}")
        seen[pid] = lineno
        check_line_protocol(where, raw.get("protocol"), PROTOCOL)
        try:
            if raw.get("answer") is None:
                out[pid] = (None, "no answer")
                continue
            out[pid] = (checked(kind, items[pid], raw["answer"]), None)
        except LabelError as exc:
            head, _, why = str(exc).partition(": ")
            raise EvalInputError(f"{where}: key answer{head[len(name) :]}: {why}") from None
    return out


def item_record(
    kind: DeclaredKind, item: DeclaredItem, answer: Any, error: str | None, grade=(None, None)
) -> dict[str, Any]:
    """What a run stores of an item: the reference, the prediction (or why there is none), the judge's
    grade of a text answer and, for a span target, the words marked by both, by the answer only and
    by the reference only."""
    rec: dict[str, Any] = {"gold": item.gold, "prediction": None, "error": error or grade[1]}
    rec |= {"grade": grade[0]} if kind.questions[target(kind)["name"]].type == "text" else {}
    if error is None:
        rec["prediction"] = {"id": item.id, "answer": answer}
        name = target(kind)["name"]
        if kind.questions[name].type == "span":
            task = SimpleNamespace(payload=item.payload)
            gold, mine = (
                {u for u, v in kind.item_units({name: value}, task).items() if v == "yes"}
                for value in (item.gold, answer)
            )
            rec["counts"] = [len(gold & mine), len(mine - gold), len(gold - mine)]
    return rec
