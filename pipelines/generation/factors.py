"""Stage 2, context factors and contextual preferences: N typed factors per persona, the last two a
contrastive pair (same type, distinct entities, mutually exclusive preferences).

Validation is code, so a broken answer is re-asked and, after the last attempt, the persona is dropped
with the reason recorded.
"""

from __future__ import annotations

import re

from prefkit.pipelines.generation.drafts import FactorDraft, FactorsDraft
from prefkit.pipelines.generation.prompting import build_request
from prefkit.pipelines.generation.taxonomy import Taxonomy, load_taxonomy
from prefkit.pipelines.llm.types import LLMRequest
from prefkit.schemas.common import content_hash
from prefkit.schemas.generation import ContextFactor, Persona

STOPWORDS = frozenset("a an the of and or for to in on at with my our your by from is are be".split())


def words(text: str) -> set[str]:
    """Lower-case content words of ``text`` (for overlap checks)."""
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in STOPWORDS}


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of the content words of two texts."""
    wa, wb = words(a), words(b)
    return len(wa & wb) / max(1, len(wa | wb))


def normalise(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def factors_request(persona: Persona, n_factors: int, taxonomy: Taxonomy | None = None) -> LLMRequest:
    tax = taxonomy or load_taxonomy()
    context = {
        "persona_id": persona.persona_id,
        "persona": persona.text,
        "occupation": persona.occupation,
        "n_factors": n_factors,
        "factor_types": list(tax.factor_types),
        "task_types": list(tax.task_types),
        "preference_types": {k: list(v) for k, v in tax.preference_types.items()},
    }
    return build_request(
        "factors", persona.persona_id, "writer", "factors", FactorsDraft, context, temperature=1.0
    )


def _check_factor(f: FactorDraft, tax: Taxonomy) -> None:
    if tax.factor_type(f.type) is None:
        raise ValueError(
            f"factor {f.name!r}: unknown type {f.type!r}; expected one of {', '.join(tax.factor_types)}"
        )
    unknown = [t for t in f.task_types if tax.task_type(t) is None]
    if unknown:
        raise ValueError(f"factor {f.name!r}: unknown task type(s) {unknown}")
    pref = f.preference
    if tax.family(pref.family) is None:
        raise ValueError(f"factor {f.name!r}: unknown preference family {pref.family!r}")
    if tax.preference_type(pref.family, pref.preference_type) is None:
        fam = tax.family(pref.family) or pref.family  # known: checked just above
        raise ValueError(
            f"factor {f.name!r}: preference_type {pref.preference_type!r} is not in family {fam} "
            f"({', '.join(tax.preference_types[fam])})"
        )
    if normalise(f.name) in normalise(f.preference.text):
        raise ValueError(
            f"factor {f.name!r}: its preference names the factor, so it is not understandable alone"
        )
    if len(words(f.preference.text)) < 4:
        raise ValueError(f"factor {f.name!r}: preference is too short to be a personal preference")


def check_contrastive_pair(a: FactorDraft, b: FactorDraft) -> None:
    """The last two factors: same type, distinct entities, preferences that cannot both hold."""
    if a.type.strip().lower() != b.type.strip().lower():
        raise ValueError(f"contrastive pair {a.name!r}/{b.name!r}: types differ ({a.type} vs {b.type})")
    if normalise(a.name) == normalise(b.name) or overlap(a.name, b.name) >= 0.5:
        raise ValueError(f"contrastive pair {a.name!r}/{b.name!r}: not distinct entities (names too alike)")
    if (
        normalise(a.preference.text) == normalise(b.preference.text)
        or overlap(a.preference.text, b.preference.text) >= 0.6
    ):
        raise ValueError(
            f"contrastive pair {a.name!r}/{b.name!r}: preferences are the same, not mutually exclusive"
        )
    if a.preference.family.casefold() != b.preference.family.casefold():
        raise ValueError(
            f"contrastive pair {a.name!r}/{b.name!r}: preferences must be in one family to conflict"
        )


def validate_factors(draft: FactorsDraft, n_factors: int, taxonomy: Taxonomy | None = None) -> None:
    """Raise ValueError naming the first problem of a persona's factors (types from ``taxonomy``,
    CUPID's by default)."""
    tax = taxonomy or load_taxonomy()
    if len(draft.factors) != n_factors:
        raise ValueError(f"expected {n_factors} context factors, got {len(draft.factors)}")
    names = [normalise(f.name) for f in draft.factors]
    if len(set(names)) != len(names):
        raise ValueError("context factor names are not distinct")
    texts = [normalise(f.preference.text) for f in draft.factors]
    if len(set(texts)) != len(texts):
        raise ValueError("two context factors share one preference")
    for f in draft.factors:
        _check_factor(f, tax)
    check_contrastive_pair(draft.factors[-2], draft.factors[-1])


def make_factors(
    persona_id: str, draft: FactorsDraft, taxonomy: Taxonomy | None = None
) -> list[ContextFactor]:
    """Stored factors of a validated draft, every type in the taxonomy's own spelling."""
    tax = taxonomy or load_taxonomy()
    out = []
    for i, f in enumerate(draft.factors, start=1):
        fam = tax.family(f.preference.family) or f.preference.family  # a validated draft's family is known
        pref = f.preference.model_copy(
            update={"family": fam, "preference_type": tax.preference_type(fam, f.preference.preference_type)}
        )
        out.append(
            ContextFactor(
                factor_id=f"{persona_id}-f{i:02d}-{content_hash(f.model_dump(mode='json'), 6)}",
                type=tax.factor_type(f.type),
                name=f.name.strip(),
                background=f.background.strip(),
                task_types=[tax.task_type(t) for t in f.task_types],
                preference=pref,
            )
        )
    return out
