"""The ``preference_expressed`` task kind: does a simulated CUPID session express its checklist?

One task per session with a checklist and an assistant reply: the annotator sees the dialogue, the
preference in force and its checklist, and decides for each checklist item whether the user's messages
express it, marking the user turns that do (evidence). Each checklist item is an agreement unit.

A rewritten user turn starts a new verification round: the session as it now stands gets the next
round's task (``session:<id>@r<n>``), and only the latest round counts (the earlier ones are
superseded). What the final labels mean for a session and a release is
:mod:`prefkit.curation.quality.verification`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from prefkit.curation.annotation.evidence_spans import EvidenceSpan, check_spans, merge_spans
from prefkit.curation.annotation.task_kinds import (
    Contradiction,
    FieldSpec,
    LabelError,
    TaskKind,
)
from prefkit.schemas.common import Contract
from prefkit.schemas.curation import AnnotationTask
from pydantic import Field

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore, StoredSession

KIND = "preference_expressed"


class ExpressedItem(Contract):
    item: int = Field(ge=0, description="0-based checklist item index.")
    expressed: bool = Field(description="Whether the user's messages express the item.")
    evidence: list[int] = Field(default_factory=list, description="Indexes of user turns that express it.")
    spans: list[EvidenceSpan] | None = Field(
        default=None, description="The words that express it, each in one of the evidence turns."
    )


class PreferenceExpressedLabel(Contract):
    items: list[ExpressedItem] = Field(description="One decision per checklist item.")
    comment: str | None = Field(default=None, description="Optional note.")


def session_ref(session_id: str, round_: int = 0) -> str:
    """The item a ``preference_expressed`` task verifies: a session as it stands after ``round_``
    turn revisions (``session:<id>`` before any, ``session:<id>@r<n>`` after the n-th)."""
    return f"session:{session_id}" if round_ == 0 else f"session:{session_id}@r{round_}"


_SESSION_REF = re.compile(r"^session:(?P<sid>.+?)(?:@r(?P<round>[1-9]\d*))?$")


def parse_session_ref(item_ref: str) -> tuple[str, int] | None:
    """``(session_id, round)`` of a ``preference_expressed`` item ref, ``None`` for anything else."""
    m = _SESSION_REF.match(item_ref)
    return None if m is None else (m["sid"], int(m["round"] or 0))


def session_payload(s: StoredSession) -> dict[str, Any] | None:
    """What an annotator sees to verify one session (its current turns), or ``None`` when there is
    nothing to verify: no checklist, or the current request (the opening message alone)."""
    if not s.questions or not any(t.role == "assistant" for t in s.turns):
        return None
    return {
        "dialogue_id": s.session_id,
        "persona_id": s.persona_id,
        "session_index": s.index,
        "context_factor": s.factor_name,
        "preference": s.preference_text,
        "checklist": s.questions,
        "turns": [{"index": t.index, "role": t.role, "content": t.content} for t in s.turns],
    }


def not_expressed(values: dict[str, Any]) -> list[int]:
    """The checklist items a (final) label says the session does not express."""
    return [it["item"] for it in values.get("items", []) if not it["expressed"]]


def session_tasks(store: ProjectStore) -> dict[str, list[tuple[int, AnnotationTask]]]:
    """``{session_id: [(round, task), ...]}`` oldest round first, for every ``preference_expressed`` task."""
    out: dict[str, list[tuple[int, AnnotationTask]]] = {}
    for task in store.labels.tasks(kind=KIND):
        parsed = parse_session_ref(task.item_ref)
        if parsed and not task.is_gold:
            out.setdefault(parsed[0], []).append((parsed[1], task))
    return {sid: sorted(rounds, key=lambda rt: rt[0]) for sid, rounds in out.items()}


def ensure_reverification_task(store: ProjectStore, session_id: str) -> AnnotationTask | None:
    """After a rewrite: add the verification task of the session as it now stands (same batch and
    overlap as its latest round), when the session already had one. Returns the new task, if any."""
    mine = session_tasks(store).get(session_id, [])
    if not mine:
        return None
    n_rev = store.content.revision_counts().get(session_id, 0)
    last_round, last = mine[-1]
    if n_rev <= last_round:
        return None
    persona = store.content.dialogue(session_id).persona_id
    session = next((s for s in store.content.sessions(persona) if s.session_id == session_id), None)
    payload = session_payload(session) if session else None
    if payload is None:
        return None
    task = TASK_KIND.make_task(session_ref(session_id, n_rev), payload, last.overlap, last.batch)
    if last.overlap_max is not None:  # adaptive: the new round starts from the bounds, not the old target
        task.overlap_min, task.overlap_max, task.audit = last.overlap_min, last.overlap_max, last.audit
        task.overlap = last.overlap_max if last.audit else (last.overlap_min or last.overlap)
    return task if store.labels.add_tasks([task]) else None


class PreferenceExpressed(TaskKind):
    name = KIND
    title = "Preference expressed"
    app_form = "prefkit.annotate_app.forms.expressed"
    labelstudio_config = "prefkit.annotate_app.labelstudio.kinds.preference_expressed:CONFIG"
    suggestions = "prefkit.pipelines.suggestions.kinds:EXPRESSED"
    menu_order = 10
    release = {"cupid": ""}  # its final labels verify the sessions the CUPID rows are rebuilt from
    flag_reasons = (
        "empty or truncated dialogue",
        "wrong language",
        "preference or checklist missing",
        "checklist does not fit the preference",
        "other",
    )
    label_model = PreferenceExpressedLabel
    fields = (FieldSpec("expressed", "nominal", ("not_expressed", "expressed")),)

    def build_tasks(self, store: ProjectStore, overlap, batch):
        rounds = store.content.revision_counts()
        return [
            self.make_task(session_ref(s.session_id, rounds.get(s.session_id, 0)), payload, overlap, batch)
            for s in store.content.sessions()
            if (payload := session_payload(s)) is not None
        ]

    def check_against_task(self, model, task):
        n = len(task.payload["checklist"])
        if sorted(i.item for i in model.items) != list(range(n)):
            raise LabelError(f"items: expected one decision for each of the {n} checklist items")
        user_turns = {t["index"] for t in task.payload["turns"] if t["role"] == "user"}
        for it in model.items:
            bad = [i for i in it.evidence if i not in user_turns]
            if bad:
                raise LabelError(
                    f"items.{it.item}.evidence: turn(s) {bad} are not user turns of this dialogue"
                )
            check_spans(it.spans or [], task.payload["turns"], f"items.{it.item}", roles=("user",))
            outside = sorted({s.turn for s in it.spans or []} - set(it.evidence))
            if outside:
                raise LabelError(
                    f"items.{it.item}.spans: turn(s) {outside} are not among the item's evidence turns"
                )

    def contradictions(self, values, task):
        """*Not expressed* with evidence: evidence marks where the user expresses the item."""
        out = []
        for it in values.get("items", []):
            turns = sorted({*it.get("evidence", []), *(s.get("turn") for s in it.get("spans") or [])})
            if not it["expressed"] and turns:
                where = ", ".join(f"turn {t}" for t in turns)
                out.append(
                    Contradiction(
                        f"item{it['item']}",
                        (
                            f"Item {it['item'] + 1} is Not expressed but has evidence ({where}); evidence marks "
                            "where the user expresses it: choose Expressed, or remove the evidence."
                        ),
                    )
                )
        return out

    def units(self, values):
        return {
            (f"item{it['item']}", "expressed"): "expressed" if it["expressed"] else "not_expressed"
            for it in values.get("items", [])
        }

    def assemble(self, units, labels):
        items = []
        for (sub, _field), value in sorted(units.items(), key=lambda kv: int(kv[0][0].removeprefix("item"))):
            idx = int(sub.removeprefix("item"))
            agreeing = self.agreeing(labels, (sub, "expressed"), value)
            evidence = sorted(
                {
                    e
                    for v in agreeing
                    for it in v["items"]
                    if it["item"] == idx
                    for e in it.get("evidence", [])
                }
            )
            item: dict[str, Any] = {
                "item": idx,
                "expressed": value == "expressed",
                "evidence": evidence if value == "expressed" else [],
            }
            spans = merge_spans(it.get("spans") for v in agreeing for it in v["items"] if it["item"] == idx)
            if spans and value == "expressed":
                item["spans"] = spans
            items.append(item)
        return {"items": items}

    def superseded(self, store: ProjectStore):
        """Verification rounds a later round replaced (a turn was rewritten since)."""
        return {task.task_id for rounds in session_tasks(store).values() for _r, task in rounds[:-1]}

    def after_turn_rewrite(self, store: ProjectStore, task):
        """The session as it now stands gets the next round's verification task."""
        ensure_reverification_task(store, task.payload["dialogue_id"])


#: The kind, as pyproject.toml's ``prefkit.task_kinds`` entry point names it.
TASK_KIND = PreferenceExpressed()
