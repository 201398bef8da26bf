"""The ``memory_verify`` task kind: people accept, edit or reject the memories LLMs extracted from a
real (WildChat/AlpsBench) dialogue, and add the ones they missed.

One task per dialogue with candidate memories (``prefkit memories extract``): the payload carries the
dialogue's turns and every candidate (its model, the memory as written, validity problems, evidence
flags, and a similarity group so near-duplicates sit together). Each candidate is two agreement units:
``accepted`` (keep / reject) and ``decision`` (accept / edit / reject). The final label's accepted, edited
and added memories are the verified gold (:func:`prefkit.curation.quality.verification.verified_gold`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Literal

from prefkit.curation.annotation.evidence_spans import EvidenceSpan, check_spans, merge_spans
from prefkit.curation.annotation.task_kinds import (
    Contradiction,
    FieldSpec,
    LabelError,
    TaskKind,
)
from prefkit.schemas.alpsbench import TaxonomyLabel
from prefkit.schemas.common import Contract, canonical_json
from pydantic import Field, model_validator

if TYPE_CHECKING:
    from prefkit.curation.store import Dialogue, ProjectStore, StoredMemory

KIND = "memory_verify"
DECISIONS = ("accept", "edit", "reject")
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
    spans: list[EvidenceSpan] | None = Field(
        default=None, description="An added memory's evidence: the words selected in the dialogue."
    )


class MemoryDecision(Contract):
    key: str = Field(description="Candidate key '<model>:<position>'.")
    decision: Literal["accept", "edit", "reject"] = Field(description="What to do with the candidate.")
    edited: MemoryEdit | None = Field(default=None, description="Corrected fields when decision is edit.")
    reason: str | None = Field(
        default=None, description=f"Reject reason: one of {', '.join(REJECT_REASONS)}."
    )
    spans: list[EvidenceSpan] | None = Field(
        default=None, description="The words in the dialogue that show the memory (accept or edit)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> MemoryDecision:
        if self.decision == "edit" and self.edited is None:
            raise ValueError("an edit needs the edited fields")
        if self.decision != "edit" and self.edited is not None:
            raise ValueError("edited fields are only allowed with decision 'edit'")
        if self.decision == "reject" and self.reason not in REJECT_REASONS:
            raise ValueError(f"a reject needs a reason, one of {', '.join(REJECT_REASONS)}")
        if self.decision == "reject" and self.spans:
            raise ValueError("evidence spans belong to a memory that is kept (accept or edit)")
        return self


class MemoryVerifyLabel(Contract):
    decisions: list[MemoryDecision] = Field(description="One decision per candidate memory.")
    added: list[MemoryEdit] = Field(default_factory=list, description="Memories the models missed.")
    comment: str | None = Field(default=None, description="Optional note.")


_WORD = re.compile(r"\w+", re.UNICODE)


def _same_words(value: Any) -> str:
    """A memory's words, lower-cased, punctuation and spacing dropped: what makes two say the same."""
    return " ".join(_WORD.findall(str(value or "").lower()))


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


def dialogue_payload(dialogue: Dialogue, cands: list[StoredMemory]) -> dict[str, Any]:
    """What an annotator sees to verify one dialogue's candidate memories."""
    texts = [str(c.raw.get("value", "")) if isinstance(c.raw, dict) else "" for c in cands]
    groups = group_by_similarity(texts)
    return {
        "dialogue_id": dialogue.dialogue_id,
        "turns": [{"index": t.index, "role": t.role, "content": t.content} for t in dialogue.turns],
        "candidates": [
            {
                "key": f"{c.source_model}:{c.position}",
                "model": c.source_model,
                "memory": c.raw,
                "valid": c.valid,
                "problems": c.problems,
                "evidence_flags": (c.record or {}).get("evidence_flags", []),
                "group": g,
            }
            for c, g in zip(cands, groups, strict=True)
        ],
    }


class MemoryVerify(TaskKind):
    name = KIND
    title = "Memory verification"
    app_form = "prefkit.annotate_app.forms.memory"
    labelstudio_config = "prefkit.annotate_app.labelstudio.kinds.memory_verify:CONFIG"
    suggestions = "prefkit.pipelines.suggestions.kinds:MEMORY"
    menu_order = 30
    release = {"alpsbench_*": ""}  # its final labels verify the packets' gold (with the verified reference)
    flag_reasons = (
        "empty or truncated dialogue",
        "wrong language",
        "no candidate memories",
        "candidates are about another dialogue",
        "other",
    )
    label_model = MemoryVerifyLabel
    fields = (
        FieldSpec("accepted", "nominal", ("reject", "keep")),
        FieldSpec("decision", "nominal", DECISIONS),
    )

    def build_tasks(self, store: ProjectStore, overlap, batch):
        by_dialogue: dict[str, list[StoredMemory]] = {}
        for m in store.content.memories(origin="candidate"):
            by_dialogue.setdefault(m.dialogue_id, []).append(m)
        return [
            self.make_task(
                f"dialogue:{dialogue_id}",
                dialogue_payload(store.content.dialogue(dialogue_id), cands),
                overlap,
                batch,
            )
            for dialogue_id, cands in sorted(by_dialogue.items())
        ]

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
            check_spans(d.spans or [], task.payload["turns"], f"decisions.{i}")
        for i, m in enumerate(model.added):
            check_spans(m.spans or [], task.payload["turns"], f"added.{i}")

    def contradictions(self, values, task):
        """A missing memory that a candidate already says (accept or edit that one instead), or that
        another added row repeats: the same words, case and spacing aside."""
        said: dict[str, str] = {}
        for c in task.payload["candidates"]:
            value = c["memory"].get("value") if isinstance(c["memory"], dict) else c["memory"]
            if _same_words(value):
                said.setdefault(_same_words(value), f"candidate “{value}” ({c['model']})")
        out = []
        for i, mem in enumerate(values.get("added", [])):
            words = _same_words(mem["value"])
            if not words:
                continue
            if words in said:
                fix = "accept or edit that candidate instead, and " if said[words].startswith("cand") else ""
                out.append(
                    Contradiction(
                        f"added{i}", (f"Missing memory {i + 1} repeats {said[words]}: {fix}remove this row.")
                    )
                )
            else:
                said[words] = f"missing memory {i + 1}"
        return out

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
            spans = merge_spans(d.get("spans") for d in mine) if decision != "reject" else []
            if spans:
                out["spans"] = spans
            if decision == "reject":
                reasons = Counter(d.get("reason") for d in mine)
                out["reason"] = sorted(reasons.items(), key=lambda kv: (-kv[1], str(kv[0])))[0][0]
            decisions.append(out)
        added = Counter(canonical_json(m) for v in labels.values() for m in v.get("added", []))
        majority = [json.loads(m) for m, n in sorted(added.items()) if n * 2 > len(labels)]
        return {"decisions": decisions, "added": majority}


#: The kind, as pyproject.toml's ``prefkit.task_kinds`` entry point names it.
TASK_KIND = MemoryVerify()
