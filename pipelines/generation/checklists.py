"""Stage 4, checklists: each distinct preference of a persona becomes at most 4 yes/no questions a
reply must satisfy (asked at temperature 0, so a rerun gives the same decomposition)."""

from __future__ import annotations

from prefkit.pipelines.generation.drafts import ChecklistDraft
from prefkit.pipelines.generation.factors import normalise
from prefkit.pipelines.generation.prompting import build_request
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.common import content_hash
from prefkit.schemas.generation import SessionPlan

MAX_ITEMS = 4


def preference_key(preference: str) -> str:
    """Stable key of a preference text (whitespace and case do not matter)."""
    return "pref_" + content_hash(normalise(preference), 12)


def distinct_preferences(plan: SessionPlan) -> list[str]:
    """The plan's preferences in order of first appearance, each once."""
    seen: dict[str, str] = {}
    for slot in plan.slots:
        seen.setdefault(preference_key(slot.preference_text), slot.preference_text)
    return list(seen.values())


def checklist_request(persona_id: str, preference: str) -> LLMRequest:
    context = {"persona_id": persona_id, "preference": preference, "max_items": MAX_ITEMS}
    item = f"{persona_id}:{preference_key(preference)}"
    return build_request("checklists", item, "writer", "checklists", ChecklistDraft, context, temperature=0.0)


def validate_checklist(draft: ChecklistDraft) -> list[str]:
    """The checklist's questions, or ValueError when it has too many items or repeats one."""
    if len(draft.items) > MAX_ITEMS:
        raise ValueError(f"checklist has {len(draft.items)} items; at most {MAX_ITEMS} allowed")
    questions = [item.question.strip() for item in draft.items]
    if len({normalise(q) for q in questions}) != len(questions):
        raise ValueError("checklist repeats an item")
    return questions
