"""Stage 5, dialogue simulation: an assistant model answers, a user-simulator model (who knows the
persona, the preference and its checklist) scores each reply on every checklist item (1-10) and
answers back.

A dialogue ends when every item is met (score >= ``met_score``) *and* every item has been raised at
least once, or after ``max_turns`` assistant replies. Until then the simulator gives indirect, concise
feedback on at most one unmet item; its last message (the one before the final reply) alludes to
every item it has not touched yet. When every item is met before all were raised, the simulator's
closing message alludes to the rest (as CUPID's simulator does), so the user's preference always
shows in the session. A session in which no item was raised at all (request, reply, end: a *silent*
session) is rejected and simulated again. Every dialogue advances turn by turn on its own, each
call as soon as the previous answer is in, so a slow answer holds up only its own dialogue. The last
planned session (the current request) is the opening request alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from prefkit.pipelines.generation.drafts import SimulatorVerdict
from prefkit.pipelines.generation.factors import normalise
from prefkit.pipelines.generation.prompting import build_request, validated
from prefkit.pipelines.llm.layer import every
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.generation import ContextFactor, Persona, SessionSlot

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore


@dataclass
class DialogueJob:
    """One session to simulate: who, which factor, which preference and checklist."""

    session_id: str
    persona: Persona
    slot: SessionSlot
    factor: ContextFactor
    checklist: list[str]
    current: bool = False  # the last planned session: the current request, never simulated


@dataclass
class DialogueState:
    """A dialogue in progress; ``scores[k]`` are the item scores of the k-th assistant reply."""

    job: DialogueJob
    messages: list[tuple[str, str]]
    attempt: int = 0  # > 0: simulated again because an earlier attempt was silent
    scores: list[list[int]] = field(default_factory=list)
    feedback: list[list[int]] = field(default_factory=list)
    touched: set[int] = field(default_factory=set)
    satisfied: bool = False
    done: bool = False
    failed: str | None = None
    transient: bool = False  # failed because a call failed, not because the answers were invalid
    responses: list = field(default_factory=list)

    @property
    def replies(self) -> int:
        return len(self.scores)


@dataclass(frozen=True)
class DialogueRules:
    max_turns: int = 16
    met_score: int = 8
    attempts: int = 3


def start(job: DialogueJob, attempt: int = 0) -> DialogueState:
    return DialogueState(job=job, messages=[("user", job.slot.opening_request)], attempt=attempt)


def _item(state: DialogueState, turn: int, who: str) -> str:
    """The request's item; a repeat attempt gets its own (so its own cache key and offline draw)."""
    again = f"#attempt{state.attempt}" if state.attempt else ""
    return f"{state.job.session_id}{again}:turn{turn}:{who}"


def _fresh(request: LLMRequest, state: DialogueState) -> LLMRequest:
    """A repeat attempt's request: the system message says which take it is, so the request (and its
    cache key, and the offline backend's draw) differs from every earlier take's."""
    if not state.attempt:
        return request
    (role, content), *rest = request.messages
    note = f"\n\n(Take {state.attempt + 1} of this conversation: write it afresh.)"
    return replace(request, messages=((role, content + note), *rest))


def is_silent(feedback: list[list[int]]) -> bool:
    """Whether a simulated session raised no checklist item at all (request, reply, end)."""
    return not any(feedback)


def assistant_request(state: DialogueState) -> LLMRequest:
    job = state.job
    context = {
        "session_id": job.session_id,
        "request": job.slot.opening_request,
        "turn": len(state.scores) + 1,
        "factor": job.factor.name,
        "preference": job.slot.preference_text,
        "checklist": job.checklist,
        "touched": sorted(state.touched),
        "conversation": [list(m) for m in state.messages],
    }
    return _fresh(
        build_request(
            "dialogues",
            _item(state, len(state.scores) + 1, "assistant"),
            "assistant",
            "assistant",
            None,
            context,
            extra_messages=tuple(state.messages),
        ),
        state,
    )


def simulator_request(state: DialogueState, rules: DialogueRules) -> LLMRequest:
    job, turn = state.job, len(state.scores) + 1
    untouched = [i for i in range(1, len(job.checklist) + 1) if i not in state.touched]
    context = {
        "session_id": job.session_id,
        "persona": job.persona.text,
        "factor": job.factor.name,
        "preference": job.slot.preference_text,
        "checklist": job.checklist,
        "turn": turn,
        "met_score": rules.met_score,
        "final": turn == rules.max_turns - 1,
        "untouched": untouched,
        "touched": sorted(state.touched),
        "conversation": [list(m) for m in state.messages],
    }
    return _fresh(
        build_request(
            "dialogues",
            _item(state, turn, "user"),
            "user_simulator",
            "user_simulator",
            SimulatorVerdict,
            context,
            temperature=0.3,
        ),
        state,
    )


def check_verdict(state: DialogueState, verdict: SimulatorVerdict, rules: DialogueRules) -> SimulatorVerdict:
    """Raise ValueError when the simulator broke a rule of the dialogue."""
    k = len(state.job.checklist)
    if sorted(s.item for s in verdict.scores) != list(range(1, k + 1)):
        raise ValueError(f"scores must rate each of the {k} checklist items exactly once")
    scores = {s.item: s.score for s in verdict.scores}
    all_met = all(v >= rules.met_score for v in scores.values())
    untouched = [i for i in range(1, k + 1) if i not in state.touched]
    if len(state.scores) + 1 >= rules.max_turns or (all_met and not untouched):
        return verdict
    if all_met:  # met, but not every item raised yet: the closing message must raise the rest
        missing = [i for i in untouched if i not in verdict.feedback_items]
        if missing or not verdict.message.strip():
            raise ValueError(
                f"every item is met but item(s) {untouched} were never raised: the closing message "
                f"must allude to each of them (missing {missing or untouched})"
            )
        if any(normalise(q) in normalise(verdict.message) for q in state.job.checklist):
            raise ValueError("feedback must be indirect, not the checklist item word for word")
        return verdict
    if not verdict.message.strip():
        raise ValueError("an unmet checklist needs a next message")
    if any(i not in scores for i in verdict.feedback_items):
        raise ValueError("feedback names an item that is not on the checklist")
    if len(state.scores) + 1 == rules.max_turns - 1:
        missing = [i for i in range(1, k + 1) if i not in state.touched and i not in verdict.feedback_items]
        if missing:
            raise ValueError(f"the last message must cover every item not yet touched (missing {missing})")
    elif sum(1 for i in verdict.feedback_items if scores[i] < rules.met_score) > 1:
        raise ValueError("feedback may address at most one unmet item per message")
    if any(normalise(q) in normalise(verdict.message) for q in state.job.checklist):
        raise ValueError("feedback must be indirect, not the checklist item word for word")
    return verdict


def apply_verdict(state: DialogueState, verdict: SimulatorVerdict, rules: DialogueRules) -> None:
    scores = [s.score for s in sorted(verdict.scores, key=lambda s: s.item)]
    state.scores.append(scores)
    if all(v >= rules.met_score for v in scores):
        state.satisfied = state.done = True
        if len(state.touched) < len(scores) and len(state.scores) < rules.max_turns:
            # The closing message raises the items never raised (check_verdict made sure it does).
            state.feedback.append(sorted(set(verdict.feedback_items)))
            state.touched.update(verdict.feedback_items)
            state.messages.append(("user", verdict.message.strip()))
        return
    if len(state.scores) >= rules.max_turns:
        state.done = True
        return
    state.feedback.append(sorted(set(verdict.feedback_items)))
    state.touched.update(verdict.feedback_items)
    state.messages.append(("user", verdict.message.strip()))


async def simulate(
    layer,
    store: ProjectStore,
    jobs: list[DialogueJob],
    rules: DialogueRules,
    first_attempt: int = 0,
    progress=None,
) -> list[DialogueState]:
    """Run every job's dialogue to its end, all at once; a job whose model kept failing ends with
    ``failed`` set. ``first_attempt`` > 0 makes every request new (a repair asks for a new dialogue,
    not the cached one); ``progress``: the layer's bar the calls count on."""
    return await every(_simulate(layer, store, job, rules, first_attempt, progress) for job in jobs)


async def _simulate(layer, store, job: DialogueJob, rules: DialogueRules, first_attempt: int, progress):
    """One dialogue; a finished one that raised no checklist item is rejected (a failure row says so)
    and simulated again, up to ``rules.attempts`` in all; one still silent then fails."""
    for attempt in range(rules.attempts):
        state = start(job, first_attempt + attempt)
        await _converse(layer, store, state, rules, progress)
        if state.failed or not is_silent(state.feedback):
            return state
        if attempt + 1 < rules.attempts:
            store.content.record_failure(
                "dialogues",
                job.session_id,
                f"silent session (attempt {attempt + 1}): no checklist item raised",
            )
    _fail(state, f"silent after {rules.attempts} attempts: the user never raised a checklist item", False)
    return state


def _fail(state: DialogueState, reason: str, transient: bool) -> None:
    state.failed, state.done, state.transient = reason, True, transient


def _reply(text: str | None) -> str:
    if not (text or "").strip():
        raise ValueError("the assistant's reply is empty")
    return (text or "").strip()


async def _converse(layer, store, state: DialogueState, rules: DialogueRules, progress) -> None:
    for turn in range(1, rules.max_turns + 1):
        reply = await validated(layer, store, assistant_request(state), _reply, rules.attempts, progress)
        if not reply.ok:
            return _fail(
                state, f"assistant gave no usable reply at turn {turn}: {reply.reason}", reply.transient
            )
        state.responses.append(reply.response)
        state.messages.append(("assistant", reply.value))
        verdict = await validated(
            layer,
            store,
            simulator_request(state, rules),
            lambda answer: check_verdict(state, answer, rules),
            rules.attempts,
            progress,
        )
        if not verdict.ok:
            reason = f"user simulator gave no valid verdict at turn {turn}: {verdict.reason}"
            return _fail(state, reason, verdict.transient)
        state.responses.append(verdict.response)
        apply_verdict(state, verdict.value, rules)
        if state.done:
            return None
    return None
