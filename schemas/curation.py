"""Curation-side contracts: tasks, label events, adjudications, provenance, release manifests."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from prefkit.schemas.common import Contract, Record
from pydantic import Field, StringConstraints

#: A task kind's name. Kinds are registered in ``curation`` (``prefkit.curation.annotation.task_kinds``), which
#: checks the name at its edge (tasks, labels and label files of an unknown kind are refused there).
TaskKindName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
#: A version of a kind's guidelines: the first 12 hex characters of the SHA-256 of the text as shown.
GuidelinesVersion = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{12}$")]


class AnnotationTask(Record):
    """One unit of annotation work: an item of the project shown to k annotators."""

    task_id: str = Field(description="Stable id: kind + item reference hash.")
    kind: TaskKindName = Field(description="Task kind identifier.")
    item_ref: str = Field(description="What is annotated, e.g. 'session:<id>' or 'dialogue:<id>'.")
    payload: dict[str, Any] = Field(description="Everything the annotator needs to see, frozen at creation.")
    batch: str = Field(default="default", description="Batch the task belongs to.")
    overlap: int = Field(
        default=3,
        ge=1,
        description="Distinct annotators the task goes to now (k; adaptive: its current target).",
    )
    overlap_min: int | None = Field(
        default=None, ge=1, description="Adaptive overlap: annotators every item gets (None: fixed overlap)."
    )
    overlap_max: int | None = Field(
        default=None, ge=1, description="Adaptive overlap: most annotators the item can get."
    )
    audit: bool = Field(
        default=False, description="Adaptive overlap: an audit item, always given to overlap_max annotators."
    )
    is_gold: bool = Field(default=False, description="Whether this is a gold item with a known answer.")
    gold_answer: dict[str, Any] | None = Field(default=None, description="The known answer of a gold item.")
    created_at: str = Field(description="ISO-8601 creation time.")


class LabelEvent(Record):
    """An append-only labelling event. An edit is a new event whose ``supersedes`` names the old one."""

    event_id: str = Field(description="Unique id; also the idempotency key of a submit.")
    task_id: str = Field(description="The task labelled.")
    kind: TaskKindName = Field(description="Task kind, repeated for filtering.")
    annotator: str = Field(description="The signed-in user who made the label (never a form field).")
    action: Literal["label", "skip", "flag", "withdraw", "recalibrate", "repeat"] = Field(
        default="label",
        description="label = values given; skip = passed with a reason; flag = item broken; "
        "withdraw = an earlier label was deleted at its source; recalibrate = the answer to a decided "
        "item queued again after a guidelines change (compared with the decision, never a vote); "
        "repeat = the annotator's second answer to an item they labelled, shown again unmarked (never a "
        "vote or an edit; kept apart, in the repeats table).",
    )
    values: dict[str, Any] = Field(default_factory=dict, description="Field values, validated per task kind.")
    comment: str | None = Field(default=None, description="Free-text note, reason for a skip or a flag.")
    time_spent_s: float | None = Field(default=None, ge=0, description="Seconds spent on the item.")
    supersedes: str | None = Field(default=None, description="event_id of the event this one replaces.")
    source: str = Field(default="app", description="Where the label was made: app, labelstudio, import.")
    created_at: str = Field(description="ISO-8601 time the event was recorded.")
    assist_arm: Literal["assisted", "control"] | None = Field(
        default=None,
        description="Judge-assisted labelling: 'assisted' = the item's suggestion was on screen, "
        "'control' = the item had one but it was withheld; None = no suggestion for the item.",
    )
    suggestion_id: str | None = Field(
        default=None, description="The suggestion shown (assisted) or withheld (control)."
    )
    guidelines_version: GuidelinesVersion | None = Field(
        default=None,
        description="The kind's guidelines version current when the item was drawn for the annotator "
        "(None: made before versions were recorded, or by an LLM judge).",
    )


class Adjudication(Record):
    """A maintainer's final decision for a task where annotators disagree."""

    adjudication_id: str = Field(description="Unique id.")
    task_id: str = Field(description="The task decided.")
    maintainer: str = Field(description="The signed-in maintainer who decided.")
    values: dict[str, Any] = Field(description="The final field values.")
    note: str = Field(default="", description="Why this decision.")
    supersedes: str | None = Field(default=None, description="An earlier adjudication this one replaces.")
    created_at: str = Field(description="ISO-8601 time of the decision.")


class Provenance(Record):
    """Where a generated or imported record came from."""

    source: str = Field(description="Pipeline stage or importer, e.g. 'generate.personas', 'import.cupid'.")
    model: str | None = Field(default=None, description="Model name, when an LLM made the record.")
    endpoint: str | None = Field(default=None, description="Endpoint host (never a key or full URL secret).")
    prompt_template_hash: str | None = Field(
        default=None, description="sha256 prefix of the prompt template."
    )
    seed: int | None = Field(default=None, description="Seed the record was generated with.")
    offline: bool = Field(default=False, description="True when made by the deterministic offline backend.")
    system_fingerprint: str | None = Field(default=None, description="Server's system_fingerprint, if any.")
    licence: str | None = Field(default=None, description="Licence of the source data, if any.")


class SourceSummary(Contract):
    """An imported file as a release's provenance names it."""

    kind: str = Field(description="Importer, e.g. 'cupid', 'alpsbench', 'wildchat'.")
    sha256: str = Field(description="Hex sha256 of the imported file.")
    rows: int = Field(ge=0, description="Rows the file held.")
    licence: str | None = Field(default=None, description="The source's licence, if known.")


class ProvenanceSummary(Contract):
    """Where a release's stored records came from: models, prompt template hashes, sources with their
    licences, and the share made by the offline backend."""

    records: int = Field(ge=0, description="Stored records of the released tables.")
    offline_records: int = Field(ge=0, description="Of those, records made by the offline backend.")
    offline_share: float = Field(ge=0, le=1, description="offline_records / records (0 when empty).")
    models: list[str] = Field(description="Models that made released records.")
    prompt_template_hashes: list[str] = Field(description="Prompt template hashes of released records.")
    stages: dict[str, int] = Field(description="Released records per pipeline stage or importer.")
    sources: list[SourceSummary] = Field(description="Imported files.")
    licences: list[str] = Field(description="Every licence named by a source or a record's provenance.")


class ReleaseFile(Contract):
    """One file of a release with its digest."""

    path: str = Field(description="Path relative to the release directory.")
    sha256: str = Field(description="Hex sha256 of the file's bytes.")
    size: int = Field(ge=0, description="Size in bytes.")


def canary_sentence(guid: str) -> str:
    """The line a release carries its canary GUID in (the card, croissant.json): a model that completes
    it with the GUID has seen the release."""
    return f"{CANARY_PREFIX}{guid}"


#: What comes before the GUID in :func:`canary_sentence`.
CANARY_PREFIX = "EVALUATION DATA, KEEP OUT OF TRAINING CORPORA. prefkit canary GUID "


class ReleaseManifest(Record):
    """What a release contains and why it was allowed out."""

    name: str = Field(description="Dataset name.")
    version: str = Field(description="Semantic version X.Y.Z.")
    created_at: str = Field(description="ISO-8601 time the release was cut.")
    files: list[ReleaseFile] = Field(description="Every file of the release with sha256 and size.")
    counts: dict[str, int] = Field(description="Rows per config.")
    schema_versions: dict[str, str] = Field(description="Schema version per record type.")
    gates: list[dict[str, Any]] = Field(description="Gate results at cut time.")
    agreement: list[dict[str, Any]] = Field(description="Agreement rows with confidence intervals.")
    provenance: dict[str, Any] = Field(description="Models, prompt hashes, sources, licences, offline share.")
    override_reason: str | None = Field(default=None, description="Why failing gates were overridden.")
    canary: str | None = Field(default=None, description="The project's canary GUID ([release] canary).")
