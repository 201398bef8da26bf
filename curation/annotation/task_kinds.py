"""The task-kind interface, the registry, and the built-in kinds.

The Streamlit app, the Label Studio bridge, label import, consensus and the agreement code all work
through :class:`TaskKind`, found by name in :data:`TASK_KIND_REGISTRY`: how tasks are built from
project content, what a label's values look like (a strict pydantic model), how a label splits into
agreement units, how decided units are assembled back into a final label, how it is scored against a
gold answer, which answers are known up front, and the default guidelines. A new kind is one module
that subclasses :class:`TaskKind` and calls :func:`register`; its app form and Label Studio config
register against its name (``annotate_app.forms.register_form``, ``annotate_app.labelstudio.config
.register_ls``). See docs/ARCHITECTURE.md, "How to add a task kind".
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from schemas.alpsbench import TaxonomyLabel
from schemas.common import Contract, PrefkitError, canonical_json, content_hash, utcnow, validation_line
from schemas.curation import AnnotationTask

if TYPE_CHECKING:
    from curation.project import ProjectStore


class LabelError(PrefkitError, ValueError):
    """A label's values do not fit its task kind. The message names the field."""


@dataclass(frozen=True)
class FieldSpec:
    """One agreement field of a task kind."""

    name: str
    level: Literal["nominal", "ordinal", "interval", "ratio"]
    choices: tuple[str, ...] | None = None  # for ordinal fields: lowest rank first


# -- label value models -----------------------------------------------------------------------------
class ExpressedItem(Contract):
    item: int = Field(ge=0, description="0-based checklist item index.")
    expressed: bool = Field(description="Whether the user's messages express the item.")
    evidence: list[int] = Field(default_factory=list, description="Indexes of user turns that express it.")


class PreferenceExpressedLabel(Contract):
    items: list[ExpressedItem] = Field(description="One decision per checklist item.")
    comment: str | None = Field(default=None, description="Optional note.")


class PreferenceMatchLabel(Contract):
    coverage: Literal["not_covered", "partially", "fully"] = Field(
        description="How much of the checklist item the candidate preference covers."
    )
    comment: str | None = Field(default=None, description="Optional note.")


REJECT_REASONS = ("not_grounded", "not_about_user", "too_generic", "duplicate", "harmful", "other")


class MemoryEdit(Contract):
    value: str = Field(min_length=1, description="Corrected memory statement.")
    label: TaxonomyLabel = Field(description="Taxonomy path.")
    type: Literal["direct", "indirect"] = Field(description="direct or indirect.")
    time_scope: str = Field(description="long_term, short_term, unknown (or another observed value).")
    evidence_turn: int | None = Field(default=None, ge=0, description="Index of the evidence utterance.")
    evidence_text: str | None = Field(
        default=None, description="The quoted evidence, as it appears in that utterance."
    )
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, description="Confidence in [0, 1].")


class MemoryDecision(Contract):
    key: str = Field(description="Candidate key '<model>:<position>'.")
    decision: Literal["accept", "edit", "reject"] = Field(description="What to do with the candidate.")
    edited: MemoryEdit | None = Field(default=None, description="Corrected fields when decision is edit.")
    reason: str | None = Field(
        default=None, description=f"Reject reason: one of {', '.join(REJECT_REASONS)}."
    )

    @model_validator(mode="after")
    def _consistent(self) -> MemoryDecision:
        if self.decision == "edit" and self.edited is None:
            raise ValueError("an edit needs the edited fields")
        if self.decision != "edit" and self.edited is not None:
            raise ValueError("edited fields are only allowed with decision 'edit'")
        if self.decision == "reject" and self.reason not in REJECT_REASONS:
            raise ValueError(f"a reject needs a reason, one of {', '.join(REJECT_REASONS)}")
        return self


class MemoryVerifyLabel(Contract):
    decisions: list[MemoryDecision] = Field(description="One decision per candidate memory.")
    added: list[MemoryEdit] = Field(default_factory=list, description="Memories the models missed.")
    comment: str | None = Field(default=None, description="Optional note.")


# -- the interface --------------------------------------------------------------------------------
class TaskKind(ABC):
    name: str
    title: str
    label_model: type[BaseModel]
    fields: tuple[FieldSpec, ...]

    def task_id(self, item_ref: str) -> str:
        return f"{self.name}_{content_hash(item_ref, 20)}"

    def make_task(self, item_ref: str, payload: dict[str, Any], overlap: int, batch: str) -> AnnotationTask:
        return AnnotationTask(
            task_id=self.task_id(item_ref),
            kind=self.name,
            item_ref=item_ref,
            payload=payload,
            batch=batch,
            overlap=overlap,
            created_at=utcnow(),
        )

    @abstractmethod
    def build_tasks(self, store: ProjectStore, overlap: int, batch: str) -> list[AnnotationTask]:
        """Tasks for every item of the project this kind applies to."""

    def validate(self, values: dict[str, Any], task: AnnotationTask) -> dict[str, Any]:
        """Normalized values, or :class:`LabelError` naming the field that is wrong."""
        try:
            model = self.label_model.model_validate(values)
        except ValidationError as exc:
            raise LabelError(validation_line(exc, root="<values>")) from exc
        self.check_against_task(model, task)
        return model.model_dump(mode="json", exclude_none=True)

    def check_against_task(self, model: Any, task: AnnotationTask) -> None:  # noqa: B027 - optional hook
        """Checks that need the task's payload (item counts, turn indexes)."""

    @abstractmethod
    def units(self, values: dict[str, Any]) -> dict[tuple[str, str], Any]:
        """Split a label into agreement units: ``{(sub_unit, field): value}``."""

    @abstractmethod
    def assemble(
        self, units: dict[tuple[str, str], Any], labels: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        """The final values from the decided units (``{unit: value}``) and the labels they came from."""

    def agreeing(self, labels: dict[str, dict[str, Any]], unit: tuple[str, str], value: Any) -> list[dict]:
        """The labels (in annotator order) whose value for ``unit`` is the decided ``value``."""
        return [labels[a] for a in sorted(labels) if self.units(labels[a]).get(unit) == value]

    def known_answers(self, store: ProjectStore) -> dict[str, dict[str, Any]]:
        """Answers known when tasks are built (``{item_ref: values}``): those tasks become gold items."""
        return {}

    def default_guidelines(self) -> str:
        """The guidelines a new project starts with (``guidelines/<kind>.md``)."""
        path = resources.files("curation").joinpath(f"templates/guidelines/{self.name}.md")
        return path.read_text(encoding="utf-8") if path.is_file() else f"# {self.title}\n"

    def gold_score(self, values: dict[str, Any], gold: dict[str, Any]) -> float:
        """Share of the gold answer's units this label gets right (0..1)."""
        want, got = self.units(gold), self.units(values)
        if not want:
            return 1.0
        return sum(got.get(k) == v for k, v in want.items()) / len(want)


def session_ref(session_id: str, round_: int = 0) -> str:
    """The item a ``preference_expressed`` task verifies: a session as it stands after ``round_``
    turn revisions (``session:<id>`` before any, ``session:<id>@r<n>`` after the n-th)."""
    return f"session:{session_id}" if round_ == 0 else f"session:{session_id}@r{round_}"


_SESSION_REF = re.compile(r"^session:(?P<sid>.+?)(?:@r(?P<round>[1-9]\d*))?$")


def parse_session_ref(item_ref: str) -> tuple[str, int] | None:
    """``(session_id, round)`` of a ``preference_expressed`` item ref, ``None`` for anything else."""
    m = _SESSION_REF.match(item_ref)
    return None if m is None else (m["sid"], int(m["round"] or 0))


def session_payload(s: dict[str, Any]) -> dict[str, Any] | None:
    """What an annotator sees to verify one session (its current turns), or ``None`` when there is
    nothing to verify: no checklist, or the current request (the opening message alone)."""
    if not s.get("checklist") or not any(t["role"] == "assistant" for t in s.get("turns", [])):
        return None
    return {
        "dialogue_id": s["session_id"],
        "persona_id": s["persona_id"],
        "session_index": s["index"],
        "context_factor": s["context_factor"]["name"],
        "preference": s["preference"]["text"],
        "checklist": [c["question"] for c in s["checklist"]],
        "turns": [{"index": t["index"], "role": t["role"], "content": t["content"]} for t in s["turns"]],
    }


class PreferenceExpressed(TaskKind):
    name = "preference_expressed"
    title = "Preference expressed"
    label_model = PreferenceExpressedLabel
    fields = (FieldSpec("expressed", "nominal", ("not_expressed", "expressed")),)

    def build_tasks(self, store, overlap, batch):
        rounds = store.revision_counts()
        return [
            self.make_task(
                session_ref(s["session_id"], rounds.get(s["session_id"], 0)), payload, overlap, batch
            )
            for s in store.sessions()
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
            items.append(
                {
                    "item": idx,
                    "expressed": value == "expressed",
                    "evidence": evidence if value == "expressed" else [],
                }
            )
        return {"items": items}


class PreferenceMatch(TaskKind):
    name = "preference_match"
    title = "Preference matching"
    label_model = PreferenceMatchLabel
    fields = (FieldSpec("coverage", "ordinal", ("not_covered", "partially", "fully")),)

    def build_tasks(self, store, overlap, batch):
        return [
            self.make_task(
                f"pair:{p['pair_id']}",
                {
                    "pair_id": p["pair_id"],
                    "checklist_item": p["checklist_item"],
                    "candidate": p["candidate"],
                    "instance_id": p["instance_id"],
                    "origin": p["origin"],
                },
                overlap,
                batch,
            )
            for p in store.preference_pairs()
        ]

    def units(self, values):
        return {("", "coverage"): values["coverage"]} if "coverage" in values else {}

    def assemble(self, units, labels):
        return {"coverage": units[("", "coverage")]}

    def known_answers(self, store):
        """Pairs imported with a known answer make their matching task a gold item."""
        refs = {
            f"pair:{p['pair_id']}": (p["meta"] or {}).get("gold_answer") for p in store.preference_pairs()
        }
        return {ref: answer for ref, answer in refs.items() if answer}


_WORD = re.compile(r"\w+", re.UNICODE)


def group_by_similarity(texts: list[str], threshold: float = 0.45) -> list[int]:
    """Greedy single-pass grouping by word-set Jaccard similarity; returns a group number per text."""
    sets = [set(_WORD.findall(t.lower())) for t in texts]
    groups: list[int] = []
    heads: list[int] = []
    for i, s in enumerate(sets):
        best, best_sim = -1, threshold
        for g, h in enumerate(heads):
            union = s | sets[h]
            sim = len(s & sets[h]) / len(union) if union else 0.0
            if sim >= best_sim:
                best, best_sim = g, sim
        if best < 0:
            heads.append(i)
            best = len(heads) - 1
        groups.append(best)
    return groups


class MemoryVerify(TaskKind):
    name = "memory_verify"
    title = "Memory verification"
    label_model = MemoryVerifyLabel
    fields = (
        FieldSpec("accepted", "nominal", ("reject", "keep")),
        FieldSpec("decision", "nominal", ("accept", "edit", "reject")),
    )

    def build_tasks(self, store, overlap, batch):
        by_dialogue: dict[str, list[dict[str, Any]]] = {}
        for m in store.memories(origin="candidate"):
            by_dialogue.setdefault(m["dialogue_id"], []).append(m)
        tasks = []
        for dialogue_id, cands in sorted(by_dialogue.items()):
            dialogue = store.dialogue(dialogue_id)
            texts = [str(c["raw"].get("value", "")) if isinstance(c["raw"], dict) else "" for c in cands]
            groups = group_by_similarity(texts)
            payload = {
                "dialogue_id": dialogue_id,
                "turns": [
                    {"index": t["index"], "role": t["role"], "content": t["content"]}
                    for t in dialogue["turns"]
                ],
                "candidates": [
                    {
                        "key": f"{c['source_model']}:{c['position']}",
                        "model": c["source_model"],
                        "memory": c["raw"],
                        "valid": c["valid"],
                        "problems": c["problems"],
                        "evidence_flags": (c["record"] or {}).get("evidence_flags", []),
                        "group": g,
                    }
                    for c, g in zip(cands, groups, strict=True)
                ],
            }
            tasks.append(self.make_task(f"dialogue:{dialogue_id}", payload, overlap, batch))
        return tasks

    def check_against_task(self, model, task):
        keys = [c["key"] for c in task.payload["candidates"]]
        got = [d.key for d in model.decisions]
        if sorted(got) != sorted(keys):
            missing = sorted(set(keys) - set(got))
            extra = sorted(set(got) - set(keys))
            raise LabelError(
                f"decisions: need exactly one per candidate (missing {missing}, unknown {extra})"
            )
        n_turns = len(task.payload["turns"])
        for i, d in enumerate(model.decisions):
            if d.edited and d.edited.evidence_turn is not None and d.edited.evidence_turn >= n_turns:
                raise LabelError(f"decisions.{i}.edited.evidence_turn: the dialogue has {n_turns} turns")

    def units(self, values):
        out: dict[tuple[str, str], Any] = {}
        for d in values.get("decisions", []):
            out[(d["key"], "decision")] = d["decision"]
            out[(d["key"], "accepted")] = "reject" if d["decision"] == "reject" else "keep"
        return out

    def assemble(self, units, labels):
        decisions = []
        for key in sorted({sub for sub, _ in units}):
            decision = units[(key, "decision")]
            mine = [
                d
                for v in self.agreeing(labels, (key, "decision"), decision)
                for d in v["decisions"]
                if d["key"] == key
            ]
            out: dict[str, Any] = {"key": key, "decision": decision}
            if decision == "edit":
                out["edited"] = mine[0]["edited"]
            if decision == "reject":
                reasons = Counter(d.get("reason") for d in mine)
                out["reason"] = sorted(reasons.items(), key=lambda kv: (-kv[1], str(kv[0])))[0][0]
            decisions.append(out)
        added = Counter(canonical_json(m) for v in labels.values() for m in v.get("added", []))
        majority = [json.loads(m) for m, n in sorted(added.items()) if n * 2 > len(labels)]
        return {"decisions": decisions, "added": majority}


#: Every task kind by name, in registration order (the CLI's choices, the app's menus).
TASK_KIND_REGISTRY: dict[str, TaskKind] = {}


def register(kind: TaskKind) -> TaskKind:
    """Make ``kind`` known by its name to every part of prefkit; a name is registered once."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", kind.name or ""):
        raise LabelError(f"task kind name {kind.name!r}: use lower-case letters, digits and _")
    if kind.name in TASK_KIND_REGISTRY and type(TASK_KIND_REGISTRY[kind.name]) is not type(kind):
        raise LabelError(f"task kind {kind.name!r} is already registered")
    TASK_KIND_REGISTRY[kind.name] = kind
    return kind


def kind_names() -> tuple[str, ...]:
    return tuple(TASK_KIND_REGISTRY)


for _kind in (PreferenceExpressed(), PreferenceMatch(), MemoryVerify()):
    register(_kind)

# A kind in its own module registers itself (imported last: it builds on the interface above).
import curation.annotation.task_qc  # noqa: E402, F401


def get_kind(name: str) -> TaskKind:
    try:
        return TASK_KIND_REGISTRY[name]
    except KeyError:
        raise LabelError(
            f"unknown task kind {name!r}; expected one of {', '.join(TASK_KIND_REGISTRY)}"
        ) from None
