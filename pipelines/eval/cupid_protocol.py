"""The official CUPID pipeline's steps as LLM-layer requests (protocols ``cupid-official`` and
``cupid-prefmatcher``), read from kixlab/CUPID ``evaluation/`` and written here.

Inference: the evaluated model writes an analysis and then, under ``### Most Likely Preference``, one
sentence (its first line is the answer); a decomposer turns that sentence into at most 4 yes/no
questions; the matcher then labels a whole checklist in one call, twice per instance: the inferred
questions against the gold preference, and the gold checklist against the inferred preference. With
``cupid-prefmatcher`` the matcher is a PrefMatcher-style model in its own prompt format (criterion +
numbered checklist, a JSON list of labels back), and the decomposer is the ``writer`` role's model.
Generation: the model answers; the judge writes a per-question analysis, a rubric label and a 1-10 score.

Answers are parsed as CUPID parses them (fenced JSON, headers); a call whose answer cannot be parsed is a
failed call of its step. The evaluated model sees only the prior sessions' text and the request. This
module never writes SQL and never scores.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefkit.pipelines.eval.cupid import history
from prefkit.pipelines.eval.cupid_metrics import key_name, with_fields
from prefkit.pipelines.eval.cupid_official import CONTEXT_LENGTH, parse_score
from prefkit.pipelines.eval.cupid_prompts import PromptSet, bulleted, interaction_log, numbered
from prefkit.pipelines.eval.release import CupidKey
from prefkit.pipelines.llm.templates import rendered_request
from prefkit.pipelines.llm.types import LLMRequest, LLMResponse
from prefkit.schemas.cupid import BenchmarkInstance
from prefkit.schemas.evaluation import CupidLabels, CupidPrediction, ItemLabel

STAGE = "eval.cupid.official"
LABELS = {"fully covered": "fully", "partially covered": "partially", "not covered": "not_covered"}


class ParseError(ValueError):
    """An answer that does not have the shape its step needs."""


def steps(task: str, protocol: str) -> tuple[str, ...]:
    if task == "generation":
        return ("generate", "judge")
    return ("infer", "decompose", "prefmatch" if protocol == "cupid-prefmatcher" else "match")


@dataclass(frozen=True)
class Steps:
    """The prompt set and protocol of one run."""

    prompts: PromptSet
    protocol: str = "cupid-official"

    def request(self, step: str, item: str, role: str, context: dict[str, Any], temperature: float = 0.0):
        return rendered_request(
            self.prompts.messages(step, **context),
            self.prompts.template_hash(step),
            stage=f"{STAGE}.{step}",
            item=item,
            role=role,  # type: ignore[arg-type]
            response_model=None,
            context=context,
            temperature=temperature,
            offline_answers="prefkit.pipelines.eval.offline",
        )

    # -- what the evaluated model sees --------------------------------------------------------------------
    def infer(self, key: CupidKey, inst: BenchmarkInstance, oracle: str) -> LLMRequest:
        context = {
            "interaction_log": interaction_log(history(inst, oracle)),
            "curr_request": inst.current_request,
        }
        return self.request("infer", key_name(key), "assistant", context)

    def generate(self, key: CupidKey, inst: BenchmarkInstance, oracle: str) -> LLMRequest:
        context = {
            "interaction_log": interaction_log(history(inst, oracle)),
            "curr_request": inst.current_request,
        }
        return self.request("generate", key_name(key), "assistant", context)

    # -- the evaluator's steps ----------------------------------------------------------------------------
    def decompose(self, key: CupidKey, preference: str) -> LLMRequest:
        role = "writer" if self.protocol == "cupid-prefmatcher" else "judge"
        return self.request("decompose", key_name(key), role, {"preferences": preference})

    def match(self, key: CupidKey, direction: str, checklist: list[str], preference: str) -> LLMRequest:
        step = "prefmatch" if self.protocol == "cupid-prefmatcher" else "match"
        context = {
            "checklist": numbered(checklist),
            "preference": preference,
            "examples": self.prompts.examples,
        }
        if step == "prefmatch":
            context.pop("examples")
        return self.request(step, f"{key_name(key)}#{direction}", "judge", context)

    def judge(self, key: CupidKey, inst: BenchmarkInstance, response: str) -> LLMRequest:
        context = {
            "user_request": inst.current_request,
            "ai_response": response,
            "preference": inst.current_contextual_preference,
            "checklist": bulleted(list(inst.current_checklist)),
        }
        return self.request("judge", key_name(key), "judge", context)


# -- parsing answers as CUPID parses them ---------------------------------------------------------------------
def fenced_json(text: str) -> Any:
    """The JSON of a ```json fence (up to the last fence), else of the whole text."""
    body = text.split("```json", 1)[1].rsplit("```", 1)[0] if "```json" in text else text
    try:
        return json.loads(body.strip())
    except json.JSONDecodeError as exc:
        raise ParseError(f"not JSON ({exc.msg})") from None


def parse_inference(text: str) -> str:
    if "### Most Likely Preference" not in text:
        raise ParseError("no '### Most Likely Preference' section")
    return text.split("### Most Likely Preference", 1)[1].strip().split("\n")[0].strip()


def parse_checklist(text: str) -> list[str]:
    data = fenced_json(text)
    items = data.get("checklist") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ParseError('expected {"checklist": [questions]}')
    return items


def parse_matches(text: str, checklist: list[str], prefmatcher: bool) -> list[ItemLabel]:
    """One label per result the matcher returned (CUPID credits every returned result; a label it does
    not know counts as not covered, as CUPID's ``match_label_to_score`` does)."""
    data = fenced_json(text)
    results = data.get("results") if isinstance(data, dict) else data
    if not isinstance(results, list) or not all(isinstance(r, dict) and "label" in r for r in results):
        shape = "a JSON list of {label}" if prefmatcher else '{"results": [{index, entry, label}]}'
        raise ParseError(f"expected {shape}")
    out = []
    for i, r in enumerate(results):
        entry = str(r.get("entry") or (checklist[i] if i < len(checklist) else f"result {i + 1}"))
        out.append(ItemLabel(item=entry, coverage=LABELS.get(str(r["label"]).strip().lower(), "not_covered")))
    return out


def parse_judgement(text: str) -> tuple[int, str | None]:
    """(score, rubric label) from the judge's ``Evaluation Score`` / ``Evaluation Label`` sections."""
    header = next((h for h in ("### **Evaluation Score**", "### Evaluation Score") if h in text), None)
    if header is None:
        raise ParseError("no '### Evaluation Score' section")
    score = parse_score(text.split(header, 1)[1])
    if score is None or not 1 <= score <= 10 or score != int(score):
        raise ParseError("the score is not a whole number from 1 to 10")
    label = None
    m = re.search(r"### \**Evaluation Label\**\s*\n(.*?)(?:\n###|\Z)", text, re.S)
    if m:
        label = m.group(1).strip().strip("*").strip() or None
    return int(score), label


def _failure(response: LLMResponse) -> str:
    """The error of a failed model call; one the endpoint gave for an over-long prompt is marked with
    the code CUPID looks for, whatever words the server used."""
    error = response.error or "failed"
    if CONTEXT_LENGTH not in error and (
        "context length" in error.lower() or error.startswith("context_length:")
    ):
        return f"{CONTEXT_LENGTH}: {error}"
    return error


# -- running ----------------------------------------------------------------------------------------------------
def run_model(layer, steps_: Steps, instances: Mapping[CupidKey, BenchmarkInstance], task: str, oracle: str):
    """The evaluated model's answers, and for inference the decomposed checklist of each."""
    keys = sorted(instances)
    make = steps_.infer if task == "inference" else steps_.generate
    out: dict[CupidKey, CupidPrediction] = {}
    for key, r in zip(
        keys, layer.run([make(k, instances[k], oracle) for k in keys], desc=f"{STAGE}.{task}"), strict=True
    ):
        head = {"persona_id": key[0], "instance_type": key[1]}
        if not r.ok:
            out[key] = CupidPrediction(**head, error=_failure(r))
        elif task == "generation":
            out[key] = CupidPrediction(**head, response=r.text or "")
        else:
            try:
                out[key] = CupidPrediction(**head, inferred=parse_inference(r.text or ""))
            except ParseError as exc:
                out[key] = CupidPrediction(**head, error=f"inference answer: {exc}")
    if task == "inference":
        out = decompose(layer, steps_, out)
    return out


def decompose(
    layer, steps_: Steps, preds: dict[CupidKey, CupidPrediction]
) -> dict[CupidKey, CupidPrediction]:
    """The decomposer's checklist for every inferred preference that lacks one (an empty preference has
    an empty checklist and is not sent). A failed decomposition fails the instance, as in CUPID."""
    todo = [
        k
        for k, p in sorted(preds.items())
        if p.error is None and p.checklist is None and (p.inferred or "").strip()
    ]
    out = dict(preds)
    for key in [k for k, p in preds.items() if p.error is None and not (p.inferred or "").strip()]:
        out[key] = with_fields(out[key], {"checklist": []})
    answers = (
        layer.run([steps_.decompose(k, preds[k].inferred or "") for k in todo], desc=f"{STAGE}.decompose")
        if todo
        else []
    )
    for key, r in zip(todo, answers, strict=True):
        try:
            if not r.ok:
                raise ParseError(r.error or "failed")
            # The prompt asks for at most 4 questions; like CUPID's code, a longer list is kept whole.
            out[key] = with_fields(out[key], {"checklist": parse_checklist(r.text or "")})
        except ParseError as exc:
            out[key] = with_fields(out[key], {"error": f"decomposer: {exc}"})
    return out


def judge(layer, steps_: Steps, instances, preds, task: str) -> tuple[dict[CupidKey, CupidPrediction], int]:
    """Matcher labels (inference) or judge scores (generation) wherever they are missing; returns the
    predictions and how many instances' evaluator calls failed."""
    out, todo = dict(preds), []
    for key, p in sorted(preds.items()):
        inst = instances[key]
        if p.error is not None:
            continue
        if task == "inference" and p.labels is None and p.checklist:
            todo.append(
                (
                    key,
                    [
                        steps_.match(key, "inferred", list(p.checklist), inst.current_contextual_preference),
                        steps_.match(key, "gold", list(inst.current_checklist), p.inferred),
                    ],
                )
            )
        elif task == "generation" and p.score is None:
            todo.append((key, [steps_.judge(key, inst, p.response or "")]))
    flat = [r for _k, reqs in todo for r in reqs]
    answers = iter(layer.run(flat, desc=f"{STAGE}.judge") if flat else [])
    failed = 0
    prefmatcher = steps_.protocol == "cupid-prefmatcher"
    for key, reqs in todo:
        got = [next(answers) for _ in reqs]
        try:
            bad = next((a for a in got if not a.ok), None)
            if bad is not None:
                raise ParseError(bad.error or "failed")
            if task == "inference":
                p = out[key]
                labels = CupidLabels(
                    inferred=parse_matches(got[0].text or "", list(p.checklist), prefmatcher),
                    gold=parse_matches(
                        got[1].text or "", list(instances[key].current_checklist), prefmatcher
                    ),
                )
                out[key] = with_fields(p, {"labels": labels})
            else:
                score, label = parse_judgement(got[0].text or "")
                out[key] = with_fields(out[key], {"score": score, "rubric_label": label})
        except ParseError as exc:
            failed += 1
            out[key] = with_fields(out[key], {"error": f"judge: {exc}"})
    return out, failed


def estimate_requests(steps_: Steps, instances: Mapping[CupidKey, BenchmarkInstance], task: str, oracle: str):
    """The requests of a run, the gold preference standing in for answers not known yet."""
    out: list[LLMRequest] = []
    for k in sorted(instances):
        inst = instances[k]
        if task == "inference":
            gold = inst.current_contextual_preference
            out += [
                steps_.infer(k, inst, oracle),
                steps_.decompose(k, gold),
                steps_.match(k, "inferred", [gold], gold),
                steps_.match(k, "gold", list(inst.current_checklist), gold),
            ]
        else:
            out += [
                steps_.generate(k, inst, oracle),
                steps_.judge(k, inst, inst.current_contextual_preference),
            ]
    return out
