"""The ``preference_match`` task kind: how much of a gold checklist item does a candidate preference
cover?

One task per preference pair (``prefkit tasks pairs import`` / ``from-instances``): the annotator sees
the checklist item and the candidate and answers ``not_covered``, ``partially`` or ``fully`` (an ordinal
field, the one agreement unit). A pair imported with a known answer (``gold`` in the pairs file) makes
its task a gold item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from prefkit.curation.annotation.task_kinds import FieldSpec, TaskKind
from prefkit.schemas.common import Contract
from pydantic import Field

if TYPE_CHECKING:
    from prefkit.curation.store import PreferencePair, ProjectStore

KIND = "preference_match"


class PreferenceMatchLabel(Contract):
    coverage: Literal["not_covered", "partially", "fully"] = Field(
        description="How much of the checklist item the candidate preference covers."
    )
    comment: str | None = Field(default=None, description="Optional note.")


def item_ref(pair_id: str) -> str:
    """The item a ``preference_match`` task is about: one preference pair."""
    return f"pair:{pair_id}"


def pair_payload(p: PreferencePair) -> dict[str, Any]:
    """What an annotator sees of one preference pair."""
    return {
        "pair_id": p.pair_id,
        "checklist_item": p.checklist_item,
        "candidate": p.candidate,
        "instance_id": p.instance_id,
        "origin": p.origin,
    }


class PreferenceMatch(TaskKind):
    name = KIND
    title = "Preference matching"
    app_form = "prefkit.annotate_app.forms.match"
    labelstudio_config = "prefkit.annotate_app.labelstudio.kinds.preference_match:CONFIG"
    suggestions = "prefkit.pipelines.suggestions.kinds:MATCH"
    menu_order = 20
    flag_reasons = (
        "checklist item or candidate empty or truncated",
        "wrong language",
        "candidate is not a preference",
        "other",
    )
    label_model = PreferenceMatchLabel
    fields = (FieldSpec("coverage", "ordinal", ("not_covered", "partially", "fully")),)

    def build_tasks(self, store: ProjectStore, overlap, batch):
        return [
            self.make_task(item_ref(p.pair_id), pair_payload(p), overlap, batch)
            for p in store.content.preference_pairs()
        ]

    def units(self, values):
        return {("", "coverage"): values["coverage"]} if "coverage" in values else {}

    def assemble(self, units, labels):
        return {"coverage": units[("", "coverage")]}

    def known_answers(self, store: ProjectStore):
        """Pairs imported with a known answer make their matching task a gold item."""
        refs = {
            item_ref(p.pair_id): (p.meta or {}).get("gold_answer") for p in store.content.preference_pairs()
        }
        return {ref: answer for ref, answer in refs.items() if answer}

    def iter_tasks(self, store: ProjectStore, overlap, batch):
        """One read of the pairs, a page at a time: each task built with its gold answer (if any) as
        it is needed."""
        for p in store.content.iter_preference_pairs():
            task = self.make_task(item_ref(p.pair_id), pair_payload(p), overlap, batch)
            answer = (p.meta or {}).get("gold_answer")
            if answer:
                task.is_gold, task.gold_answer = True, self.validate(answer, task)
            yield task


#: The kind, as pyproject.toml's ``prefkit.task_kinds`` entry point names it.
TASK_KIND = PreferenceMatch()
