"""Memory extraction for real dialogues (``prefkit memories extract``), AlpsBench's two stages.

Stage 1 (role ``writer``, high recall) proposes candidate memories per dialogue, numbered and checked
against the turns they cite; stage 2 (role ``judge``) judges every candidate by id and recalibrates its
confidence. Kept memories are written as ``candidate`` rows (the input of ``memory_verify`` tasks) and
the rest under their reasons, nothing lost; the stages, the selection and reruns are described in
docs/alpsbench.md (*Memory extraction*). This module never writes SQL (it goes through the store) nor
calls a model directly (it goes through the layer).
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from prefkit.curation.quality.evidence import check_quote
from prefkit.curation.store import Dialogue, NewMemory
from prefkit.pipelines.generation.prompting import Outcome, validated
from prefkit.pipelines.generation.run import PricingBackend
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.llm.layer import every
from prefkit.pipelines.llm.offline import generator_for
from prefkit.pipelines.llm.templates import prompt_request
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.alpsbench import TAXONOMY, MemoryItem
from prefkit.schemas.common import PrefkitError
from prefkit.schemas.config import LLMSection
from prefkit.schemas.extraction import CONFIDENCE_LEVELS, REJECTED_CONFIDENCE, CandidateList, JudgementList

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

PACKAGE = "prefkit.pipelines.memories"
SOURCE_PREFIX = "extract:"
KEPT, REJECTED, CAPPED, NO_IMPLICIT = (
    "candidate",
    "candidate_rejected",
    "candidate_capped",
    "candidate_no_implicit",
)


class ExtractionError(PrefkitError):
    """An extraction run cannot start (bad settings)."""


@dataclass(frozen=True)
class ExtractionConfig:
    """Settings of ``prefkit memories extract`` (``[memories]`` of prefkit.toml, then flags)."""

    origin: str | None = "wildchat"  # which dialogues; None = every dialogue in the project
    cap_per_label: int | None = None  # kept memories per taxonomy label across the project
    require_implicit: bool = True  # leave out dialogues without a kept indirect memory
    attempts: int = 2  # asks per stage and dialogue before giving up on it
    max_turn_chars: int = 4000  # longer turns are shortened in the prompt (quotes are checked in full)
    limit: int | None = None  # at most this many dialogues this run (in id order)

    def check(self) -> None:
        if self.cap_per_label is not None and self.cap_per_label < 1:
            raise ExtractionError("--cap-per-label must be at least 1")
        if self.attempts < 1 or self.max_turn_chars < 200:
            raise ExtractionError("attempts must be >= 1 and max_turn_chars >= 200")
        if self.limit is not None and self.limit < 1:
            raise ExtractionError(f"limit must be >= 1, not {self.limit}")


@dataclass
class ExtractionReport:
    source: str
    dialogues: int = 0
    skipped: int = 0  # already extracted with this source
    candidates: int = 0
    kept: int = 0
    rejected: int = 0
    capped: int = 0
    no_implicit: int = 0  # dialogues left out for lack of an indirect memory
    flagged_evidence: int = 0
    failed: list[str] = field(default_factory=list)  # dialogues left for a rerun
    tasks_created: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- prompts --------------------------------------------------------------------------------------------
_request = functools.partial(prompt_request, PACKAGE, temperature=0.2)


def prompt_turns(dialogue: Dialogue, max_chars: int) -> list[dict[str, Any]]:
    out = []
    for t in dialogue.turns:
        text = t.content
        if len(text) > max_chars:
            text = text[:max_chars] + f" [... {len(t.content) - max_chars} more characters]"
        out.append({"index": t.index, "role": t.role, "content": text})
    return out


def candidates_request(dialogue: Dialogue, cfg: ExtractionConfig) -> LLMRequest:
    ctx = {
        "dialogue_id": dialogue.dialogue_id,
        "turns": prompt_turns(dialogue, cfg.max_turn_chars),
        "taxonomy": [t for t in TAXONOMY if t != "UNMAPPED"],
    }
    return _request("memories.candidates", dialogue.dialogue_id, "writer", "candidates", CandidateList, ctx)


def validation_request(dialogue: Dialogue, cands: list[dict[str, Any]], cfg: ExtractionConfig) -> LLMRequest:
    ctx = {
        "dialogue_id": dialogue.dialogue_id,
        "turns": prompt_turns(dialogue, cfg.max_turn_chars),
        "candidates": cands,
    }
    return _request("memories.validate", dialogue.dialogue_id, "judge", "validate", JudgementList, ctx)


# -- checks -----------------------------------------------------------------------------------------------
def ground_candidates(dialogue: Dialogue, answer: CandidateList) -> list[dict[str, Any]]:
    """Stage-1 candidates numbered m1.. with their evidence checked: a quote found in another turn gets
    that turn's index, one found nowhere is flagged ``evidence_not_found``. Raises ValueError when an
    index is outside the dialogue (the model is asked again)."""
    n = len(dialogue.turns)
    out = []
    for k, c in enumerate(answer.memories):
        item = c.model_dump(mode="json")
        idx = c.evidence.utterance_index
        if idx >= n:
            raise ValueError(
                f"memories.{k}.evidence.utterance_index: {idx} is outside the dialogue ({n} turns)"
            )
        verdict = check_quote(c.evidence.text, idx, dialogue.turns)
        flags = []
        if verdict.status == "near_miss":
            item["evidence"]["utterance_index"] = verdict.found_in
            flags.append(f"index_corrected_from_{idx}")
        elif verdict.status == "fail":
            flags.append("evidence_not_found")
        out.append({"memory_id": f"m{k + 1}", **item, "evidence_flags": flags})
    return out


def check_judgements(cands: list[dict[str, Any]], answer: JudgementList) -> dict[str, Any]:
    """The judgements by id; ValueError when an id is added, missing or repeated, or a level is off."""
    want = [c["memory_id"] for c in cands]
    got = [j.memory_id for j in answer.judgements]
    if sorted(got) != sorted(want):
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        dup = sorted({g for g in got if got.count(g) > 1})
        raise ValueError(
            f"judgements: exactly one per candidate {want}; missing {missing}, unknown {extra}, repeated {dup}"
        )
    for j in answer.judgements:
        if j.verdict == "keep" and not any(abs(j.confidence - lv) < 1e-6 for lv in CONFIDENCE_LEVELS):
            raise ValueError(
                f"judgements.{j.memory_id}.confidence: a kept memory takes 0.95, 0.80, 0.65 or 0.50"
            )
        if j.verdict == "reject" and abs(j.confidence - REJECTED_CONFIDENCE) > 1e-6:
            raise ValueError(f"judgements.{j.memory_id}.confidence: a rejected memory takes 0.10")
    return {j.memory_id: j for j in answer.judgements}


# -- the run ----------------------------------------------------------------------------------------------
def source_name(layer) -> str:
    return SOURCE_PREFIX + layer.settings.model_for("writer")


def pending(store: ProjectStore, cfg: ExtractionConfig, source: str) -> tuple[list[str], int]:
    done = {m.dialogue_id for m in store.content.memories() if m.source_model == source}
    ids = [d for d in store.content.dialogue_ids(origin=cfg.origin) if d not in done]
    skipped = len(store.content.dialogue_ids(origin=cfg.origin)) - len(ids)
    return (ids[: cfg.limit] if cfg.limit else ids), skipped


def _memory_item(dialogue_id: str, cand: dict[str, Any], judgement) -> dict[str, Any]:
    item = {
        "memory_id": cand["memory_id"],
        "type": cand["type"],
        "label": cand["label"],
        "label_suggestion": cand.get("label_suggestion"),
        "value": cand["value"],
        "reasoning": cand["reasoning"],
        "evidence": {"session_id": dialogue_id, **cand["evidence"]},
        "confidence": judgement.confidence,
        "time_scope": cand["time_scope"],
    }
    return MemoryItem.model_validate(item).model_dump(mode="json")


def run_extraction(store: ProjectStore, layer, cfg: ExtractionConfig | None = None) -> ExtractionReport:
    """Extract, validate and select memories for every pending dialogue; returns what happened."""
    cfg = cfg or ExtractionConfig()
    cfg.check()
    source = source_name(layer)
    todo, skipped = pending(store, cfg, source)
    report = ExtractionReport(source=source, skipped=skipped)
    dialogues = [store.content.dialogue(d) for d in todo]
    report.dialogues = len(dialogues)
    per_label = Counter(
        m.record["label"]
        for m in store.content.memories(origin=KEPT)
        if m.source_model == source and m.record
    )
    first, second = layer.stage("memories: candidates"), layer.stage("memories: validation")

    async def extract(d: Dialogue) -> tuple[Dialogue, Outcome, Outcome | None]:
        """One dialogue's candidates, then (if any) their validation, as soon as they are in."""
        asked = candidates_request(d, cfg)
        o1 = await validated(
            layer, store, asked, functools.partial(ground_candidates, d), cfg.attempts, first
        )
        if not o1.ok or not o1.value:
            return d, o1, None
        asked = validation_request(d, o1.value, cfg)
        return (
            d,
            o1,
            await validated(
                layer, store, asked, functools.partial(check_judgements, o1.value), cfg.attempts, second
            ),
        )

    def keep(done: tuple[Dialogue, Outcome, Outcome | None]) -> None:
        """Store in the dialogues' order (the per-label cap counts them in that order)."""
        d, o1, o2 = done
        if not o1.ok or (o2 is not None and not o2.ok):
            report.failed.append(d.dialogue_id)
        elif o2 is not None:
            rows = _select(d.dialogue_id, o1.value, o2.value, cfg, per_label, report)
            store.content.add_memories(rows, o1.provenance.model_copy(update={"source": "extract.memories"}))

    try:
        layer.wait(every((extract(d) for d in dialogues), then=keep))
    finally:
        first.close()
        second.close()
    return report


def _select(
    dialogue_id, cands, judgements, cfg: ExtractionConfig, per_label: Counter, report
) -> list[NewMemory]:
    items = []
    for c in cands:
        j = judgements[c["memory_id"]]
        raw = {
            **_memory_item(dialogue_id, c, j),
            "validation": {"verdict": j.verdict, "reason": j.reason, "stage1_confidence": c["confidence"]},
            "evidence_flags": c["evidence_flags"],
        }
        items.append((c, j, raw))
    report.candidates += len(items)
    report.flagged_evidence += sum(bool(c["evidence_flags"]) for c, _j, _r in items)
    has_implicit = any(j.verdict == "keep" and c["type"] == "indirect" for c, j, _r in items)
    if cfg.require_implicit and not has_implicit:
        report.no_implicit += 1
    rows = []
    for pos, (c, j, raw) in enumerate(items):
        if j.verdict == "reject":
            origin = REJECTED
            report.rejected += 1
        elif cfg.require_implicit and not has_implicit:
            origin = NO_IMPLICIT
        elif cfg.cap_per_label is not None and per_label[c["label"]] >= cfg.cap_per_label:
            origin = CAPPED
            report.capped += 1
        else:
            origin = KEPT
            per_label[c["label"]] += 1
            report.kept += 1
        rows.append(
            NewMemory(
                dialogue_id=dialogue_id,
                origin=origin,
                position=pos,
                memory_id=c["memory_id"],
                record={k: v for k, v in raw.items() if k not in ("validation", "evidence_flags")},
                raw=raw,
                problems=c["evidence_flags"] or None,
            )
        )
    return rows


def estimate_extraction(
    store: ProjectStore, llm_config: LLMSection, cfg: ExtractionConfig, seed: int = 0
) -> dict[str, Any]:
    """Price a run with the configured models, making no call: stage-1 requests exactly, stage-2 requests
    built from the offline backend's candidates (real candidate lists can be longer or shorter)."""
    with LLMLayer(
        store, llm_config=llm_config, backend=PricingBackend(), seed=seed, progress=False
    ) as pricer:
        todo, _ = pending(store, cfg, source_name(pricer))
        dialogues = [store.content.dialogue(d) for d in todo]
        first = [candidates_request(d, cfg) for d in dialogues]
        second = []
        for d, req in zip(dialogues, first, strict=True):
            answer = generator_for(req)(req, random.Random(seed))
            if not isinstance(answer, CandidateList):
                raise TypeError(f"the offline extraction generator answered {type(answer).__name__}")
            cands = ground_candidates(d, answer)
            if cands:
                second.append(validation_request(d, cands, cfg))
        est = pricer.estimate(first + second).as_dict()
    return {"dialogues": len(dialogues), **est}
