"""Runs the CUPID-style generation stages into a project, end to end or one stage at a time.

Every persona goes through the stages on its own: it takes its next stage as soon as its own inputs
are in, its dialogues advance turn by turn, and all of its calls share the layer's one pool of
``concurrency`` calls, older personas first (so they finish and are stored first). Each stage
skips what the store already holds, so a rerun adds only what is missing (and the LLM cache makes
repeated calls free). A persona whose answers keep failing validation is dropped with the reason
recorded, and later stages skip it. What is stored does not depend on the order answers arrive in.
This module must never write SQL or call a model directly: it goes through the store and the layer.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.kinds.preference_expressed import ensure_reverification_task
from prefkit.curation.project import Project
from prefkit.curation.quality.verification import instance_verification, session_statuses
from prefkit.pipelines.generation import STAGES, checklists, dialogues, factors, instances, personas, plan
from prefkit.pipelines.generation.prompting import Outcome, validated
from prefkit.pipelines.generation.taxonomy import load_taxonomy
from prefkit.pipelines.ingest.cupid import instance_records
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.llm.layer import every
from prefkit.pipelines.llm.limits import PRIORITY
from prefkit.pipelines.llm.types import BaseBackend
from prefkit.schemas.common import PrefkitError, validation_line
from prefkit.schemas.config import GenerationSection, LLMSection, out_of_range_line
from prefkit.schemas.curation import Provenance
from prefkit.schemas.generation import Persona, Session, Turn
from pydantic import ValidationError

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

EPOCH = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


class GenerationError(PrefkitError):
    """A generation run cannot start (bad settings or inputs)."""


def generation_settings(
    section: GenerationSection, root: Path | None = None, **overrides: Any
) -> GenerationSection:
    """``[generation]`` (``project.config.generation``) overridden by CLI flags (``None``: not given),
    checked; a relative ``taxonomy`` path is relative to ``root`` (the project)."""
    given = {k: v for k, v in overrides.items() if v is not None and k in GenerationSection.model_fields}
    cfg = section.model_copy(update=given) if given else section
    try:  # the flags' types and ranges, checked like the file's
        cfg = GenerationSection.model_validate(cfg.model_dump())
    except ValidationError as exc:
        line = out_of_range_line(GenerationSection, exc) or validation_line(exc, root="generation")
        raise GenerationError(f"generation settings: {line}") from None
    if cfg.taxonomy is not None and not cfg.taxonomy.is_absolute() and root is not None:
        cfg = cfg.model_copy(update={"taxonomy": Path(root) / cfg.taxonomy})
    check_settings(cfg)
    return cfg


def check_settings(cfg: GenerationSection) -> None:
    """What a run needs of its settings beyond their types (named by the flag a user would change)."""
    if cfg.personas < 1:
        raise GenerationError("--personas must be at least 1")
    if cfg.factors_per_persona < 3:
        raise GenerationError("factors_per_persona must be at least 3 (one filler plus the contrastive pair)")
    if not 2 <= cfg.max_turns <= 64 or not 2 <= cfg.met_score <= 10:
        raise GenerationError("max_turns must be in 2..64 and met_score in 2..10")
    if cfg.seed_personas and not cfg.seed_licence:
        raise GenerationError(
            "--seed-licence is required with --seed-personas (e.g. 'CC BY-NC-SA 4.0' for PersonaHub)"
        )
    plan_shape(cfg)  # validates the plan counts
    load_taxonomy(cfg.taxonomy)  # a bad taxonomy file fails before any call


def plan_shape(cfg: GenerationSection) -> plan.PlanShape:
    return plan.PlanShape(cfg.sessions, cfg.a_prior, cfg.b_count)


def dialogue_rules(cfg: GenerationSection) -> dialogues.DialogueRules:
    return dialogues.DialogueRules(cfg.max_turns, cfg.met_score, cfg.attempts)


#: Per stage: what its ``written`` / ``skipped`` count (a stage works per persona, per preference or
#: per session), and the project's table of what it makes (``prefkit status`` counts the same rows).
COUNTED = {
    "personas": ("personas", "personas"),
    "factors": ("personas", "context_factors"),
    "sessions": ("personas", "sessions"),
    "checklists": ("preferences", "checklists"),
    "dialogues": ("sessions", "dialogues"),
    "instances": ("instances", "instances"),
}


@dataclass
class StageReport:
    stage: str
    written: int = 0
    skipped: int = 0
    dropped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # persona ids left for a rerun (a call failed)

    @property
    def counts(self) -> str:
        """What ``written`` and ``skipped`` count at this stage (:data:`COUNTED`)."""
        return COUNTED[self.stage][0]

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "counts": self.counts,
            "written": self.written,
            "skipped": self.skipped,
            "dropped": len(self.dropped),
            "failed": len(self.failed),
        }


def _active(store: ProjectStore) -> list[Persona]:
    dropped = store.generation.dropped_personas()
    return [p for p in store.generation.personas() if p.persona_id not in dropped]


def _drop(store: ProjectStore, report: StageReport, persona_id: str, reason: str) -> None:
    store.generation.drop_persona(persona_id, report.stage, reason)
    report.dropped.append(persona_id)


def _give_up(store: ProjectStore, report: StageReport, persona_id: str, reason: str, transient: bool) -> None:
    """Invalid answers drop the persona for good; a failed call leaves it for the next run."""
    if persona_id in report.dropped or persona_id in report.failed:
        return
    if transient:
        report.failed.append(persona_id)
    else:
        _drop(store, report, persona_id, reason)


@dataclass
class _Run:
    """One run: the stages it was asked for (their reports and progress bars) and what the store held
    when it started. Every persona goes through the stages on its own (:func:`_persona`)."""

    store: ProjectStore
    layer: Any
    cfg: GenerationSection
    reports: dict[str, StageReport]
    bars: dict[str, Any] = field(default_factory=dict)
    had: dict[str, set[str]] = field(default_factory=dict)  # stage -> personas it had made
    held: Counter = field(default_factory=Counter)  # persona -> instances

    async def ask(self, request, validate) -> Outcome:
        bar = self.bars[request.stage]
        return await validated(self.layer, self.store, request, validate, self.cfg.attempts, bar)

    def took(self, report: StageReport, persona_id: str, outcome: Outcome) -> bool:
        if not outcome.ok:
            _give_up(self.store, report, persona_id, outcome.reason, outcome.transient)
        return outcome.ok

    def done(self, stage: str, persona_id: str) -> bool | None:
        """Whether the store held ``stage``'s rows for the persona (counted as skipped), else None
        when this run makes them and False when it may not (the persona stops here)."""
        report = self.reports.get(stage)
        if persona_id in self.had[stage]:
            if report is not None:
                report.skipped += 1
            return True
        return None if report is not None else False


# -- stage 1 ----------------------------------------------------------------------------------------
def _new_personas(cfg: GenerationSection, store: ProjectStore, report: StageReport) -> list[tuple]:
    """The personas this run adds (id, attributes, seed persona); those held already are skipped."""
    seeds = personas.read_seed_personas(cfg.seed_personas) if cfg.seed_personas else None
    if seeds is not None and len(seeds) < cfg.personas:
        raise GenerationError(
            f"{cfg.seed_personas} has {len(seeds)} seed personas; --personas asks for {cfg.personas}"
        )
    have = {p.persona_id for p in store.generation.personas()} | set(store.generation.dropped_personas())
    todo = []
    for i, attrs in enumerate(personas.sample_attributes(cfg.personas, cfg.seed, cfg.decision_styles)):
        pid = personas.persona_id(cfg.seed, i)
        if pid in have:
            report.skipped += 1
        else:
            todo.append((pid, attrs, seeds[i] if seeds else None))
    return todo


def _valid_persona(draft: personas.PersonaDraft) -> personas.PersonaDraft:
    personas.validate_persona(draft)  # raises ValueError for an unusable persona
    return draft


async def _make_persona(run: _Run, pid: str, attrs, seed: str | None) -> Persona | None:
    report, cfg = run.reports["personas"], run.cfg
    outcome = await run.ask(personas.persona_request(pid, attrs, seed), _valid_persona)
    if not run.took(report, pid, outcome):
        return None
    prov = outcome.provenance.model_copy(update={"licence": cfg.seed_licence if seed else None})
    persona = personas.make_persona(pid, attrs, outcome.value, seed, cfg.seed_licence)
    report.written += run.store.generation.add_persona(persona, prov)
    return persona


# -- stage 2 ----------------------------------------------------------------------------------------
async def _factors(run: _Run, persona: Persona) -> bool:
    pid, n, taxonomy = persona.persona_id, run.cfg.factors_per_persona, load_taxonomy(run.cfg.taxonomy)
    done = run.done("factors", pid)
    if done is not None:
        return done

    def accept(draft):
        factors.validate_factors(draft, n, taxonomy)
        return draft

    report = run.reports["factors"]
    outcome = await run.ask(factors.factors_request(persona, n, taxonomy), accept)
    if not run.took(report, pid, outcome):
        return False
    made = factors.make_factors(pid, outcome.value, taxonomy)
    report.written += run.store.generation.add_factors(pid, made, outcome.provenance)
    return True


# -- stage 3 ----------------------------------------------------------------------------------------
async def _sessions(run: _Run, persona: Persona) -> bool:
    pid, shape = persona.persona_id, plan_shape(run.cfg)
    done = run.done("sessions", pid)
    if done is not None:
        return done
    persona_factors = run.store.generation.factors(pid)
    skeleton = plan.place_sessions(random.Random(f"plan:{run.cfg.seed}:{pid}"), shape, persona_factors, pid)

    def accept(draft):
        plan.validate_stories(draft, skeleton, persona_factors)
        full = plan.apply_stories(skeleton, draft)
        plan.validate_pattern(full, shape, persona_factors)
        return full

    report = run.reports["sessions"]
    outcome = await run.ask(plan.stories_request(persona, skeleton, persona_factors), accept)
    if not run.took(report, pid, outcome):
        return False
    report.written += run.store.generation.add_plan(outcome.value, outcome.provenance)
    return True


# -- stage 4 ----------------------------------------------------------------------------------------
async def _checklists(run: _Run, persona: Persona) -> bool:
    pid, report = persona.persona_id, run.reports.get("checklists")
    persona_plan = run.store.generation.plan(pid)
    have = run.store.generation.checklists(pid)
    prefs = checklists.distinct_preferences(persona_plan) if persona_plan else []
    todo = [pref for pref in prefs if checklists.preference_key(pref) not in have]
    if report is not None:
        report.skipped += len(prefs) - len(todo)
    if report is None or not todo:
        return not todo
    asks = (run.ask(checklists.checklist_request(pid, p), checklists.validate_checklist) for p in todo)
    outcomes = await every(asks)
    for pref, outcome in zip(todo, outcomes, strict=True):
        if run.took(report, pid, outcome):
            key = checklists.preference_key(pref)
            report.written += run.store.generation.add_checklist(
                pid, key, pref, outcome.value, outcome.provenance
            )
    return all(o.ok for o in outcomes)


# -- stage 5 ----------------------------------------------------------------------------------------
def session_id(persona_id: str, index: int) -> str:
    return f"{persona_id}-s{index:02d}"


def timestamps(seed: int, persona_id: str, n: int) -> list[str]:
    """Simulated, strictly increasing session times: a few days apart, during working hours."""
    rng, day, out = random.Random(f"time:{seed}:{persona_id}"), EPOCH, []
    for _ in range(n):
        day = day + timedelta(days=rng.randint(2, 9))
        out.append(
            (day + timedelta(hours=rng.randint(0, 8), minutes=rng.randint(0, 59))).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
        )
    return out


def _dialogue_jobs(
    store: ProjectStore, cfg: GenerationSection, persona: Persona
) -> list[dialogues.DialogueJob]:
    persona_plan = store.generation.plan(persona.persona_id)
    have = store.generation.checklists(persona.persona_id) if persona_plan else {}
    if persona_plan is None or any(
        checklists.preference_key(p) not in have for p in checklists.distinct_preferences(persona_plan)
    ):
        return []
    by_id = {f.factor_id: f for f in store.generation.factors(persona.persona_id)}
    stored = store.generation.session_ids(persona.persona_id)
    return [
        dialogues.DialogueJob(
            session_id(persona.persona_id, slot.index),
            persona,
            slot,
            by_id[slot.factor_id],
            have[checklists.preference_key(slot.preference_text)],
            current=slot.index == persona_plan.slots[-1].index,
        )
        for slot in persona_plan.slots
        if session_id(persona.persona_id, slot.index) not in stored
    ]


def _dialogue_provenance(state: dialogues.DialogueState, cfg: GenerationSection, offline: bool) -> Provenance:
    """One provenance for a session made by two models: both named, offline if either was."""
    provs = {r.request.role: r.provenance for r in state.responses}
    if not provs:
        return Provenance(source="generate.dialogues", seed=cfg.seed, offline=offline)
    first = next(iter(provs.values()))
    return first.model_copy(
        update={
            "source": "generate.dialogues",
            "model": "; ".join(f"{role}={p.model}" for role, p in sorted(provs.items())),
            "offline": any(p.offline for p in provs.values()),
            "prompt_template_hash": None,
        }
    )


def _turns(cfg, state: dialogues.DialogueState) -> tuple[list[Turn], list[dict | None]]:
    """The stored turns of a simulated dialogue, with the simulator's scores and feedback per turn."""
    turns: list[Turn] = []
    extras: list[dict | None] = []
    reply = 0
    for i, (role, content) in enumerate(state.messages):
        turns.append(Turn(index=i, role=role, content=content))
        if role == "assistant":
            scores = state.scores[reply]
            extras.append({"scores": scores, "met": all(s >= cfg.met_score for s in scores)})
            reply += 1
        else:
            extras.append({"feedback_items": state.feedback[reply - 1]} if i else None)
    return turns, extras


def _store_session(
    store: ProjectStore, cfg, state: dialogues.DialogueState, timestamp: str, offline: bool
) -> bool:
    job = state.job
    turns, extras = _turns(cfg, state)
    session = Session(
        session_id=job.session_id,
        persona_id=job.persona.persona_id,
        index=job.slot.index,
        timestamp=timestamp,
        context_factor=job.factor,
        preference=job.factor.preference.model_copy(update={"text": job.slot.preference_text}),
        checklist=[{"question": q} for q in job.checklist],
        turns=turns,
        satisfied=state.satisfied,
    )
    meta = {"role": job.slot.role, "story": job.slot.story, "turns_simulated": len(state.scores)}
    return store.generation.add_session(session, meta, extras, _dialogue_provenance(state, cfg, offline))


async def _dialogues(run: _Run, persona: Persona) -> bool:
    pid, report, store = persona.persona_id, run.reports.get("dialogues"), run.store
    jobs = _dialogue_jobs(store, run.cfg, persona)
    if report is not None:
        report.skipped += len(store.generation.session_ids(pid))
    if report is None or not jobs:
        return not jobs
    # The plan's last session is the current request: stored as the opening message alone.
    rules, bar = dialogue_rules(run.cfg), run.bars["dialogues"]
    states = await dialogues.simulate(
        run.layer, store, [j for j in jobs if not j.current], rules, progress=bar
    )
    states += [dialogues.start(job) for job in jobs if job.current]
    for state in states:
        if state.failed:
            _give_up(store, report, pid, f"session {state.job.slot.index}: {state.failed}", state.transient)
    for state in states if pid not in report.dropped else ():
        if not state.failed:
            when = timestamps(run.cfg.seed, pid, state.job.slot.index)[-1]
            report.written += _store_session(
                store, run.cfg, state, when, store.generation.persona_offline(pid)
            )
    return not any(state.failed for state in states)


# -- stage 6 ----------------------------------------------------------------------------------------
async def _instances(run: _Run, persona: Persona) -> bool | Callable[[], None]:
    """The persona's instances, built; returned is their write (the run writes them in the personas'
    order, as each persona and every older one is done: an instance's place in the project is
    where it was appended)."""
    pid, report, store, cfg = persona.persona_id, run.reports.get("instances"), run.store, run.cfg
    persona_plan = store.generation.plan(pid)
    if report is None:
        return False
    if pid in run.held:
        report.skipped += run.held[pid]  # instances, as ``written`` counts
        return True
    if persona_plan is None or len(store.generation.session_ids(pid)) < len(persona_plan.slots):
        return False
    draw = f"instances:{cfg.seed}:{pid}"
    try:
        made = instances.build_instances(
            persona_plan,
            store.content.sessions(pid),
            store.generation.checklists(pid),
            random.Random(draw),
            cfg.consistent_prior,
        )
    except instances.InstanceError as exc:
        _drop(store, report, pid, str(exc))
        return False
    # the same draw build_instances made
    sets = instances.prior_sets(persona_plan, random.Random(draw), cfg.consistent_prior)
    records = instance_records(made)
    links = {
        inst.instance_id: instances.instance_links(
            persona_plan,
            sets[inst.record.instance_type],
            inst.record.instance_type,
            partial(session_id, pid),
        )
        for inst in records
    }
    prov = Provenance(
        source="generate.instances", seed=cfg.seed, offline=store.generation.persona_offline(pid)
    )

    def write() -> None:
        report.written += store.generation.add_generated_instances(pid, records, prov, links)

    return write


#: The stages, each one persona's step (stage 1 makes the persona, the others take it on).
RUNNERS: dict[str, Callable[..., Awaitable[Any]]] = {
    "personas": _make_persona,
    "factors": _factors,
    "sessions": _sessions,
    "checklists": _checklists,
    "dialogues": _dialogues,
    "instances": _instances,
}


async def _persona(run: _Run, order: int, persona: Persona | None, new: tuple = ()) -> Any:
    """One persona through the stages, each as soon as the last is done (the instances' write, if
    any, is returned); its calls wait in the layer's pool behind older personas' (``order``)."""
    PRIORITY.set(order)
    persona = persona or await _make_persona(run, *new)
    step: Any = persona is not None
    for stage in STAGES[1:]:
        step = step and await RUNNERS[stage](run, persona)
    return step if callable(step) else None


async def _run_all(run: _Run) -> None:
    new = _new_personas(run.cfg, run.store, run.reports["personas"]) if "personas" in run.reports else []
    work = [(p, ()) for p in _active(run.store)] + [(None, t) for t in new]
    await every(
        (_persona(run, i, p, t) for i, (p, t) in enumerate(work)), then=lambda write: write and write()
    )


def run_generation(
    store: ProjectStore, layer, cfg: GenerationSection, stages: tuple[str, ...] = STAGES
) -> list[StageReport]:
    """Run ``stages`` (in pipeline order) for every persona the store holds or the run adds; each
    persona takes whatever the store has ready for it, and goes on as soon as its own step is done."""
    unknown = [s for s in stages if s not in RUNNERS]
    if unknown:
        raise GenerationError(f"unknown stage(s) {unknown}; choose from {', '.join(STAGES)}")
    reports = {s: StageReport(s) for s in STAGES if s in stages}
    g = store.generation
    had = {"factors": g.personas_with("context_factors"), "sessions": g.personas_with("session_plans")}
    held = Counter(i.record.persona_id for i in store.content.instances())
    run = _Run(
        store, layer, cfg, reports, {s: layer.stage(s) for s in reports if s != "instances"}, had, held
    )
    try:
        layer.wait(_run_all(run))
    finally:
        for bar in run.bars.values():
            bar.close()
    for report in reports.values():  # the personas' order, whichever finished first
        report.dropped.sort()
        report.failed.sort()
    return list(reports.values())


# -- repair -----------------------------------------------------------------------------------------
@dataclass
class RepairReport:
    """One repair round: which failed sessions got a new dialogue, what waits on them, and what the
    previous round recovered once its sessions were verified again."""

    round: int
    repaired: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # still no dialogue (the model kept failing)
    queued: int = 0  # re-verification tasks created
    waiting_instances: int = 0  # instances that depend on a repaired session
    verified_instances: int = 0  # verified instances now
    previous: dict[str, Any] | None = None  # the previous round, with ``recovered`` filled in

    def as_dict(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in "round repaired failed queued waiting_instances verified_instances previous".split()
        }


REPAIR_ROUNDS = "generation.repair_rounds"


def _verified_instances(store: ProjectStore, statuses) -> int:
    links = store.content.instance_links()
    return sum(
        instance_verification(links.get(i.instance_id, []), statuses)[0] for i in store.content.instances()
    )


def run_repair(store: ProjectStore, layer, cfg: GenerationSection) -> RepairReport:
    """Regenerate every failed generated session (same plan slot, factor, preference and checklist; a
    new dialogue), keep the old dialogue as a version, and queue the session for re-verification."""
    statuses = session_statuses(store)
    rounds = json.loads(store.get_meta(REPAIR_ROUNDS) or "[]")
    report = RepairReport(round=len(rounds) + 1, verified_instances=_verified_instances(store, statuses))
    if rounds:
        report.previous = {
            **rounds[-1],
            "recovered": report.verified_instances - rounds[-1]["verified_instances"],
        }
    failed = {sid for sid, st in statuses.items() if st.status == "failed"}
    jobs, reasons = [], {}
    for persona in _active(store):
        persona_plan = store.generation.plan(persona.persona_id)
        if persona_plan is None:
            continue
        by_id = {f.factor_id: f for f in store.generation.factors(persona.persona_id)}
        have = store.generation.checklists(persona.persona_id)
        for slot in persona_plan.slots:
            sid = session_id(persona.persona_id, slot.index)
            if sid in failed:
                jobs.append(
                    dialogues.DialogueJob(
                        sid,
                        persona,
                        slot,
                        by_id[slot.factor_id],
                        have[checklists.preference_key(slot.preference_text)],
                    )
                )
                reasons[sid] = statuses[sid].reason
    bar = layer.stage("dialogues")
    try:
        first = report.round * cfg.attempts
        states = layer.wait(dialogues.simulate(layer, store, jobs, dialogue_rules(cfg), first, bar))
    finally:
        bar.close()
    for state in states:
        sid = state.job.session_id
        if state.failed:
            report.failed.append(sid)
            continue
        turns, extras = _turns(cfg, state)
        store.content.replace_session_dialogue(
            sid,
            turns,
            extras,
            state.satisfied,
            f"repair round {report.round}: {reasons[sid]}",
        )
        report.repaired.append(sid)
        report.queued += ensure_reverification_task(store, sid) is not None
    links = store.content.instance_links()
    repaired = set(report.repaired)
    report.waiting_instances = sum(
        any(x.relevant and x.session_id in repaired for x in v) for v in links.values()
    )
    rounds.append(
        {
            "round": report.round,
            "repaired": len(report.repaired),
            "verified_instances": report.verified_instances,
        }
    )
    store.set_meta(REPAIR_ROUNDS, json.dumps(rounds))
    return report


# -- estimate ---------------------------------------------------------------------------------------
class RecordingLayer:
    """Wraps a layer and keeps every request a run hands it (for pricing a run before making it)."""

    def __init__(self, layer):
        self.layer = layer
        self.requests: list = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.layer, name)

    async def arun(self, requests, **options):
        self.requests += list(requests)
        return await self.layer.arun(requests, **options)


class PricingBackend(BaseBackend):
    """Stands in for the OpenAI-compatible backend when only pricing: same cache keys, no calls, no key."""

    name = "openai"
    offline = False

    async def complete(self, request, model, seed):
        raise GenerationError("the pricing backend makes no calls; run without --estimate")


def _scaled(value: Any, factor: float) -> Any:
    if isinstance(value, dict):
        return {k: _scaled(v, factor) for k, v in value.items()}
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return round(value * factor, 6) if isinstance(value, float) else round(value * factor)


def _layer(project: Project, cfg: GenerationSection, backend: str | None, batch: bool, progress: bool):
    return LLMLayer(
        project.store,
        llm_config=project.config.llm,
        backend=backend or project.config.llm.backend,
        seed=cfg.seed,
        progress=progress,
        batch=batch,
        env=project.env,
    )


def generate(
    project: Project,
    stages: tuple[str, ...] = STAGES,
    *,
    backend: str | None = None,
    batch: bool | None = False,
    progress: bool = False,
    **overrides: Any,
) -> list[StageReport]:
    """Run ``stages`` for a project: its ``[generation]`` settings overridden by ``overrides`` (the CLI
    flags), through an LLM layer on its ``[llm]`` settings (``backend`` defaults to ``[llm] backend``)."""
    cfg = generation_settings(project.config.generation, root=project.root, **overrides)
    with _layer(project, cfg, backend, bool(batch), progress) as layer:
        return run_generation(project.store, layer, cfg, stages)


def repair(
    project: Project,
    *,
    backend: str | None = None,
    batch: bool | None = False,
    progress: bool = False,
    **overrides: Any,
) -> RepairReport:
    """:func:`run_repair` for a project, wired like :func:`generate`."""
    cfg = generation_settings(project.config.generation, root=project.root, **overrides)
    with _layer(project, cfg, backend, bool(batch), progress) as layer:
        return run_repair(project.store, layer, cfg)


def estimate_run(
    store: ProjectStore, llm_config: LLMSection, cfg: GenerationSection, sample: int = 2
) -> dict[str, Any]:
    """Price a fresh run of ``cfg.personas`` personas with the configured models, making no call.

    The offline backend runs ``sample`` personas through every stage in a scratch project; their
    requests are priced by the layer (``[llm.models]``, ``[llm.costs]``) and scaled to the full run.
    Dialogue length follows the offline simulator, so a real run can cost more (up to max_turns).
    """
    k = min(sample, cfg.personas)
    with tempfile.TemporaryDirectory(prefix="prefkit-estimate-") as tmp:
        scratch = Project.init(Path(tmp) / "dry-run")
        try:
            with LLMLayer(
                scratch.store, llm_config=llm_config, backend="offline", seed=cfg.seed, progress=False
            ) as dry:
                recorder = RecordingLayer(dry)
                run_generation(scratch.store, recorder, cfg.model_copy(update={"personas": k}))
        finally:
            scratch.close()
    with LLMLayer(
        store, llm_config=llm_config, backend=PricingBackend(), seed=cfg.seed, progress=False
    ) as pricer:
        estimate = pricer.estimate(recorder.requests).as_dict()
    replies = [r for r in recorder.requests if r.stage == "dialogues" and r.role == "assistant"]
    sessions = {r.item.split(":")[0] for r in replies}
    return {
        "personas": cfg.personas,
        "sampled_personas": k,
        "replies_per_dialogue": round(len(replies) / max(1, len(sessions)), 2),
        "max_turns": cfg.max_turns,
        **_scaled(estimate, cfg.personas / k),
    }
