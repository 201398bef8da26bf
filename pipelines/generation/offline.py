"""Offline answers for every generation request, written from the built-in banks (``banks.py``).

Registered with the LLM layer's offline backend, so ``--backend offline`` runs the whole pipeline
with no endpoint, deterministically for a seed, and everything it makes is marked offline in
provenance. The answers pass the same validation as a real model's; they never read the network.
"""

from __future__ import annotations

import random
import re

from prefkit.pipelines.generation import banks
from prefkit.pipelines.generation.drafts import (
    ChecklistDraft,
    FactorDraft,
    FactorsDraft,
    ItemScore,
    PersonaDraft,
    SessionStoriesDraft,
    SessionStory,
    SimulatorVerdict,
)
from prefkit.pipelines.generation.taxonomy import load_taxonomy
from prefkit.pipelines.llm import register_offline
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.common import content_hash

CAREER_INDEX = {"entry": 0, "mid": 1, "senior": 2}


def first_name(persona_text: str) -> str:
    """The persona's first name: the text's first word (personas start with their name)."""
    match = re.match(r"[^\W\d_][\w'-]*", persona_text)
    return match.group(0) if match else "The user"


def verb_phrase(question: str) -> str:
    """'Does the reply open with X?' -> 'open with X'."""
    return re.sub(r"^does the reply\s+", "", question.strip().rstrip("?"), flags=re.IGNORECASE)


# -- personas -------------------------------------------------------------------------------------
@register_offline(PersonaDraft)
def offline_persona(request: LLMRequest, rng: random.Random) -> PersonaDraft:
    ctx = request.offline_context
    attrs = ctx["attributes"]
    name = f"{rng.choice(banks.FIRST_NAMES)} {rng.choice(banks.SURNAMES)}"
    occupation = rng.choice(banks.OCCUPATIONS)[CAREER_INDEX[attrs["career_level"]]]
    traits = [f"{t['trait']}:{t['level']}" for t in attrs["big_five"]]
    goals = [rng.choice(banks.VALUE_GOALS[v]) for v in attrs["values"]]
    seed = ctx.get("seed_persona")
    article = "an" if occupation[0].lower() in "aeiou" else "a"
    opening = f"{name} is {article} {occupation} {rng.choice(banks.CAREER_PHRASES[attrs['career_level']])}."
    if seed:
        opening = f"{name} is {article} {occupation}; in short: {seed.rstrip('.')}."
    text = (
        f"{opening} {name.split()[0]} {banks.TRAIT_PHRASES[traits[0]]} and {banks.TRAIT_PHRASES[traits[1]]}. "
        f"At work, {name.split()[0]} {goals[0]} and {goals[1]}. "
        f"A recurring frustration: {name.split()[0]} {banks.PAINS[traits[0]]}. "
        f"When choices come up, {name.split()[0]} {banks.DECISION_HABITS[attrs['decision_style']]}."
    )
    return PersonaDraft(text=text, occupation=occupation)


# -- context factors ------------------------------------------------------------------------------
def _fill(template: str, first: str, person: str) -> str:
    return template.replace("{first}", first).replace("{person}", person)


def _in(value: str, options: list[str], key: str) -> str:
    """``value`` when the taxonomy has it, else one of ``options`` picked by a stable hash of ``key``
    (a project's own taxonomy need not share the built-in bank's types)."""
    if any(o.casefold() == value.casefold() for o in options):
        return value
    return options[int(content_hash(key, 8), 16) % len(options)]


def _fit(entry: dict, family: str, ctx: dict) -> tuple[str, str, str, list[str]]:
    """The entry's factor type, family, preference type and task types, in the request's taxonomy."""
    default = load_taxonomy()
    prefs: dict[str, list[str]] = ctx.get("preference_types") or default.preference_types
    factor_types, task_types = (
        ctx.get("factor_types") or default.factor_types,
        ctx.get("task_types") or default.task_types,
    )
    fam = _in(family, list(prefs), entry["text"])
    ptype = _in(entry["ptype"], prefs[fam], entry["text"])
    ftype = _in(entry["type"], factor_types, entry["text"])
    tasks = [t for t in entry["tasks"] if any(t.casefold() == o.casefold() for o in task_types)]
    return ftype, fam, ptype, tasks or [task_types[0]]


def _factor(entry: dict, family: str, first: str, person: str, ctx: dict) -> FactorDraft:
    ftype, fam, ptype, tasks = _fit(entry, family, ctx)
    return FactorDraft(
        type=ftype,
        name=_fill(entry["name"], first, person),
        background=_fill(entry["background"], first, person),
        task_types=tasks,
        preference={"text": entry["text"], "family": fam, "preference_type": ptype},
    )


@register_offline(FactorsDraft)
def offline_factors(request: LLMRequest, rng: random.Random) -> FactorsDraft:
    ctx = request.offline_context
    first = first_name(ctx["persona"])
    people = rng.sample(banks.PEOPLE, 4)
    fillers = rng.sample(banks.FACTORS, ctx["n_factors"] - 2)
    pair = rng.choice(banks.PAIRS)
    out = [_factor(e, e["family"], first, people[i % 2], ctx) for i, e in enumerate(fillers)]
    # Both sides of the pair take the first side's fitted types: one type and one family.
    shared = {**pair["sides"][0], "type": pair["type"]}
    ftype, fam, ptype, _tasks = _fit(shared, pair["family"], ctx)
    out += [
        _factor({**side, "type": ftype, "ptype": ptype}, fam, first, people[2 + i], ctx)
        for i, side in enumerate(pair["sides"])
    ]
    return FactorsDraft(factors=out)


# -- session stories ------------------------------------------------------------------------------
def _changed_preference(text: str) -> str:
    for pair in banks.PAIRS:
        for side in pair["sides"]:
            if side["text"] == text:
                return side["changed"]
    return f"Replies should take the opposite approach to this one: {text[0].lower()}{text[1:]}"


@register_offline(SessionStoriesDraft)
def offline_stories(request: LLMRequest, rng: random.Random) -> SessionStoriesDraft:
    ctx = request.offline_context
    first = first_name(ctx["persona"])
    stories, used = [], set()
    for session in ctx["sessions"]:
        factor = session["factor"]
        known = [t.casefold() for t in factor["task_types"] if t.casefold() in banks.TASKS] or sorted(
            banks.TASKS
        )
        options = [(task, ask) for t in known for task, asks in [banks.TASKS[t]] for ask in asks]
        fresh = [o for o in options if o[1].format(factor=factor["name"]) not in used] or options
        task, ask = rng.choice(fresh)
        request = ask.format(factor=factor["name"])
        used.add(request)
        kind = "change" if session["index"] == ctx["first_change"] else session["role"]
        story = rng.choice(banks.STORIES[kind]).format(
            first=first, task=task, factor=factor["name"], reason=rng.choice(banks.SHIFT_REASONS)
        )
        stories.append(SessionStory(index=session["index"], story=story, opening_request=request))
    changed = _changed_preference(ctx["factor_a"]["preference"]["text"])
    return SessionStoriesDraft(changed_preference=changed, sessions=stories)


# -- checklists -----------------------------------------------------------------------------------
def bank_checklist(preference: str) -> list[str] | None:
    for entry in banks.FACTORS:
        if entry["text"] == preference:
            return list(entry["checklist"])
    for pair in banks.PAIRS:
        for side in pair["sides"]:
            if side["text"] == preference:
                return list(side["checklist"])
            if side["changed"] == preference:
                return list(side["changed_checklist"])
    return None


@register_offline(ChecklistDraft)
def offline_checklist(request: LLMRequest, rng: random.Random) -> ChecklistDraft:
    preference = request.offline_context["preference"]
    items = bank_checklist(preference)
    if items is None:  # a preference from elsewhere: one question per clause
        clauses = [c.strip() for c in re.split(r"[,;.]| and ", preference) if len(c.split()) >= 2]
        items = [f"Does the reply follow this: {c[0].lower()}{c[1:]}?" for c in clauses[:4]] or [
            f"Does the reply follow this preference: {preference.rstrip('.')}?"
        ]
    return ChecklistDraft(items=[{"question": q} for q in items])


# -- dialogues ------------------------------------------------------------------------------------
@register_offline("dialogues")
def offline_assistant(request: LLMRequest, rng: random.Random) -> str:
    ctx = request.offline_context
    opener = rng.choice(banks.REPLY_OPENERS if ctx["turn"] == 1 else banks.REPLY_REVISED)
    body = rng.sample(banks.REPLY_BODY, 3)
    fixes = [f"I've revised this to {verb_phrase(ctx['checklist'][i - 1])}." for i in ctx["touched"]]
    lines = [opener, *(f"- {line}" for line in body), *fixes]
    return "\n".join(lines)


@register_offline(SimulatorVerdict)
def offline_simulator(request: LLMRequest, rng: random.Random) -> SimulatorVerdict:
    ctx = request.offline_context
    met, touched = ctx["met_score"], set(ctx["touched"])
    scores = {}
    for i in range(1, len(ctx["checklist"]) + 1):
        lucky = ctx["turn"] == 1 and rng.random() < 0.3
        scores[i] = rng.randint(met, 10) if i in touched or lucky else rng.randint(2, met - 2)
    unmet = [i for i, s in scores.items() if s < met]
    if not unmet:
        never_raised = [i for i in scores if i not in touched]
        if not never_raised:
            return SimulatorVerdict(scores=_scores(scores), message=rng.choice(banks.CLOSINGS))
        # Met, but some items were never raised: the closing message alludes to each of them.
        lines = [
            rng.choice(banks.AFFIRMATIONS).format(
                factor=ctx["factor"], x=verb_phrase(ctx["checklist"][i - 1])
            )
            for i in never_raised
        ]
        return SimulatorVerdict(scores=_scores(scores), feedback_items=never_raised, message=" ".join(lines))
    chosen = (ctx["final"] and list(ctx["untouched"])) or [rng.choice(unmet)]
    hints = [
        rng.choice(banks.HINTS).format(factor=ctx["factor"], x=verb_phrase(ctx["checklist"][i - 1]))
        for i in chosen
    ]
    return SimulatorVerdict(scores=_scores(scores), feedback_items=chosen, message=" ".join(hints))


def _scores(scores: dict[int, int]) -> list[ItemScore]:
    return [ItemScore(item=i, score=s) for i, s in scores.items()]
