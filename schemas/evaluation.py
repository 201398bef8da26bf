"""Evaluation contracts: what a model or a judge answers, and the lines of prediction and label files.

Model and judge answers are validated with these models (a schema-invalid answer gets the LLM layer's
repair retry). Prediction and judge-label files are validated line by line, so a bad file fails with
the file, the line and the field. Coverage uses the ``preference_match`` task kind's vocabulary
(``fully`` / ``partially`` / ``not_covered``), so a judge's label and a person's label compare directly.
This module must never import from the rest of prefkit.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from prefkit.schemas.common import Contract
from pydantic import Field, field_validator

Coverage = Literal["fully", "partially", "not_covered"]
#: Credit per coverage label (CUPID's matcher: fully 1, partially 0.5, not 0).
COVERAGE_CREDIT: dict[str, float] = {"fully": 1.0, "partially": 0.5, "not_covered": 0.0}
InstanceType = Literal["consistent", "contrastive", "changing"]
MAX_INFERENCE_WORDS = 30


# -- what the evaluated model answers ------------------------------------------------------------------
class InferredPreference(Contract):
    """The evaluated model's statement of the user's most likely preference for the current request."""

    preference: str = Field(
        description=f"The user's most likely preference for this request, at most {MAX_INFERENCE_WORDS} "
        "words; empty when the history shows none."
    )

    @field_validator("preference")
    @classmethod
    def _short(cls, value: str) -> str:
        words = len(value.split())
        if words > MAX_INFERENCE_WORDS:
            raise ValueError(f"{words} words; state the preference in at most {MAX_INFERENCE_WORDS} words")
        return value.strip()


# -- what the judge answers --------------------------------------------------------------------------------
class PairCoverage(Contract):
    """The judge's label of one (gold checklist item, inferred statement) pair."""

    reason: str = Field(description="One sentence on what the statement does or does not cover.")
    coverage: Coverage = Field(description="How much of the checklist item the statement covers.")


class CoveredItem(Contract):
    """One item of a decomposed inferred statement with its coverage by the gold preference."""

    item: str = Field(min_length=1, description="One distinct claim of the inferred statement.")
    coverage: Coverage = Field(description="How much of this item the gold preference covers.")


class InferredItems(Contract):
    """The judge's decomposition of an inferred statement, each item labelled against the gold."""

    items: list[CoveredItem] = Field(description="The statement's distinct claims, in order.")


class ScoredAnswer(Contract):
    """The judge's 1-10 score of an answer's alignment with the gold preference (or memory)."""

    reason: str = Field(description="One or two sentences justifying the score.")
    score: int = Field(ge=1, le=10, description="1 = ignores or contradicts it, 10 = fully aligned.")


# -- AlpsBench answers (the prediction contract of its public scorer) -----------------------------------------
class PredictedMemory(Contract):
    """One memory a model extracted (task 1) or keeps after an update (task 2)."""

    memory_id: str = Field(description="The model's id for the memory (task 2: keep the old id to retain).")
    type: Literal["direct", "indirect"] = Field(description="direct: stated; indirect: inferred.")
    label: str = Field(description="Taxonomy path, e.g. 'Preferences/Food'.")
    value: str = Field(min_length=1, description="The memory as one statement about the user.")
    confidence: float = Field(ge=0, le=1, description="How sure the model is (0-1).")
    evidence_text: str | None = Field(default=None, description="The user's words it rests on.")


class MemoryList(Contract):
    """Task 1 and task 2 answer: the memory items."""

    memory_items: list[PredictedMemory] = Field(
        description="Extracted (task 1) or updated (task 2) memories."
    )


class RetrievalAnswer(Contract):
    """Task 3 answer: the memory the model used to answer the query."""

    answer: str = Field(description="The answer to the query.")
    reason: str = Field(description="Why that memory was used.")
    selected_memory_id: str = Field(description="memory_id of the candidate used.")


class GroundedAnswer(Contract):
    """Task 4 answer: a personalised answer and the remembered fact it rests on."""

    answer: str = Field(description="The user-facing answer.")
    used_memory_fact: str = Field(description="The remembered fact or constraint the answer is grounded on.")


# -- files -------------------------------------------------------------------------------------------------------
class ItemLabel(Contract):
    """A coverage label of one item, as embedded in a prediction line."""

    item: str = Field(
        min_length=1, description="The gold checklist item, or an item of the inferred statement."
    )
    coverage: Coverage = Field(description="fully / partially / not_covered.")


class CupidLabels(Contract):
    """The judge's labels of one instance: both matching directions."""

    gold: list[ItemLabel] = Field(
        default_factory=list, description="Each gold checklist item's coverage by the inferred statement."
    )
    inferred: list[ItemLabel] = Field(
        default_factory=list, description="Each inferred item's coverage by the gold preference."
    )


class CupidPrediction(Contract):
    """One line of a CUPID predictions file, keyed by (persona_id, instance_type)."""

    persona_id: str = Field(min_length=1, description="Persona of the instance.")
    instance_type: InstanceType = Field(description="consistent / contrastive / changing.")
    inferred: str | None = Field(
        default=None, description="Inferred preference (inference task); empty or null = nothing inferred."
    )
    checklist: list[str] | None = Field(
        default=None,
        description="cupid-official: the decomposer's questions (at most 4) made of the inferred preference; "
        "the items the inferred-side labels are about.",
    )
    response: str | None = Field(default=None, description="The model's answer (generation task).")
    labels: CupidLabels | None = Field(default=None, description="Judge labels, when already known.")
    score: int | None = Field(default=None, ge=1, le=10, description="Judge score (generation), when known.")
    rubric_label: str | None = Field(
        default=None, description="cupid-official: the judge's rubric label (Exceptional .. Unacceptable)."
    )
    error: str | None = Field(
        default=None,
        description="Why the call failed: 'judge: ...' for the judge (matcher), text containing "
        "'context_length_exceeded' for a context-length failure, anything else for the model.",
    )
    protocol: str | None = Field(
        default=None,
        description="The protocol of the run that made this prediction (`eval export` writes it); "
        "scoring the line under another protocol is refused.",
    )


class CupidLabelLine(Contract):
    """One line of a judge-labels file: one labelled item, or a generation score."""

    persona_id: str = Field(min_length=1, description="Persona of the instance.")
    instance_type: InstanceType = Field(description="consistent / contrastive / changing.")
    direction: Literal["gold", "inferred"] | None = Field(
        default=None, description="gold: a checklist item's coverage; inferred: an inferred item's coverage."
    )
    item: str | None = Field(default=None, description="The item labelled (with direction).")
    coverage: Coverage | None = Field(default=None, description="The label (with direction).")
    score: int | None = Field(
        default=None, ge=1, le=10, description="A generation score (without direction)."
    )


class PredictionMemory(Contract):
    """A memory in a task 1 / 2 predictions line: AlpsBench's MemoryItem fields, the scored ones typed
    (a model may echo the optional ones or leave them out)."""

    memory_id: str | None = Field(default=None, description="The model's id for the memory.")
    type: Literal["direct", "indirect"] = Field(description="direct: stated; indirect: inferred.")
    label: str = Field(min_length=1, description="Taxonomy path, e.g. 'Preferences/Food'.")
    value: str = Field(min_length=1, description="The memory as one statement about the user.")
    confidence: float | None = Field(default=None, ge=0, le=1, description="How sure the model is (0-1).")
    evidence_text: str | None = Field(default=None, description="The user's words it rests on.")
    evidence: Any = Field(default=None, description="Grounding in the dialogue (AlpsBench's shape).")
    label_suggestion: str | None = Field(default=None, description="Proposed label when UNMAPPED.")
    reasoning: str | None = Field(default=None, description="Why the memory follows.")
    time_scope: str | None = Field(default=None, description="long_term | short_term | ...")
    emotion: str | None = Field(default=None, description="Emotion attached to the memory.")
    preference_attitude: str | None = Field(default=None, description="like / dislike / ...")
    updated_at: str | None = Field(default=None, description="Time of the last update.")


class AlpsPrediction(Contract):
    """One line of an AlpsBench predictions.jsonl (its public prediction contract, any task)."""

    benchmark_id: str = Field(min_length=1, description="The benchmark row answered.")
    track: str | None = Field(
        default=None, description="The track (e.g. task3_d300), needed only when the id is in several."
    )
    memory_items: list[PredictionMemory] | None = Field(default=None, description="Task 1 / 2 memories.")
    answer: str | None = Field(default=None, description="Task 3 / 4 answer.")
    reason: str | None = Field(default=None, description="Task 3: why the memory was used.")
    selected_memory_id: str | None = Field(default=None, description="Task 3: the memory used.")
    used_memory_fact: str | None = Field(default=None, description="Task 4: the fact the answer rests on.")
    score: int | None = Field(default=None, ge=1, le=10, description="Task 4: a judge score, when known.")
    protocol: str | None = Field(
        default=None,
        description="The protocol of the run that made this prediction (`eval export` writes it); "
        "scoring the line under another protocol is refused.",
    )

    #: The field each task's line must carry (the answer it is scored on).
    REQUIRED: ClassVar[dict[str, str]] = {
        "task1": "memory_items",
        "task2": "memory_items",
        "task3": "selected_memory_id",
        "task4": "answer",
    }
