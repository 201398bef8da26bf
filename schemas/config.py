"""``prefkit.toml`` as one typed model: every section a strict contract, loaded once per project.

:class:`ProjectConfig` is what ``Project.config`` returns. An unknown key anywhere is an error naming
the key (``release.alpha_mn: Extra inputs are not permitted``), so a typo never silently falls back to
a default. The defaults here are the ones the template (``curation/templates/prefkit.toml``) documents;
a test keeps the two equal. :class:`ReleasePolicy` is the one release policy the gates, the agreement
command, the dashboard and the dataset card share. This module must never import the rest of prefkit
outside ``schemas``.
"""

from __future__ import annotations

import ipaddress
import math
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import annotated_types
from prefkit.schemas.common import Contract, PrefkitError, validation_line
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

#: α_min of a final release (Krippendorff's reliable-data threshold); ``policy = "tentative"`` allows down
#: to :data:`TENTATIVE_ALPHA_MIN` (tentative conclusions).
FINAL_ALPHA_MIN = 0.800
TENTATIVE_ALPHA_MIN = 0.667


#: The configs a release can hold, in the order they are built and listed (the one list: the release
#: builders, the gates and ``[release] configs`` all read it). A name ending in ``_*`` is a family:
#: ``alpsbench_*`` is every AlpsBench track (``alpsbench_task1``, ``alpsbench_task1_gold``, ...,
#: ``alpsbench_unverified``, ``alpsbench_packets``), named by the data.
RELEASE_CONFIGS = tuple(
    "cupid cupid_unverified cupid_raw alpsbench_* labels final_labels matching adjudications".split()
)
#: Configs that publish the labels themselves: every task kind of the project decides them.
LABEL_CONFIGS = ("labels", "final_labels", "adjudications")
#: The configs of a declared kind NAME: NAME + each suffix (its items, verified and not; its labels).
KIND_CONFIGS = ("", "_unverified", *(f"_{c}" for c in LABEL_CONFIGS))
#: The release database's own tables and views, beside its configs' (exports/duckdb_export.py).
RELEASE_TABLES = tuple(
    "gates agreement metadata label_summary decided_by labels_vs_final matching_coverage cupid_by_type".split()
)
#: The keys of a release's rows beside a declared kind's fields (and its DuckDB tables' ``split``).
ROW_KEYS = ("id", "answers", "meta", "n_labels", "decided_by", "split")

Backend = Literal["offline", "openai"]
SplitName = Literal["validation", "test"]
#: How a structured answer is asked for, in the order ``auto`` tries them (docs/llm.md).
Structured = Literal["auto", "json_schema", "json_object_schema", "json_mode"]
Policy = Literal["final", "tentative"]
Adjudicate = Literal["ties", "all"]
AlpsReference = Literal["verified", "imported"]
Consensus = Literal["majority", "dawid_skene", "mace"]


def config_selected(name: str, only: list[str] | tuple[str, ...] | None) -> bool:
    """Whether ``[release] configs`` (``only``; ``None``: all) selects the config ``name``: an entry is a
    config's name or a prefix pattern ending in ``*`` (``alpsbench_*``, ``cupid*``)."""
    if only is None:
        return True
    return any(name == o or (o.endswith("*") and name.startswith(o[:-1])) for o in only)


def known_config(entry: str, declared: tuple[str, ...] = ()) -> bool:
    """Whether a ``[release] configs`` entry can name a config: a fixed name, a member of a family
    (``alpsbench_task1``), a project's declared kind's (``NAME``, ``NAME_unverified``, ``NAME_labels``, ...), or a pattern
    matching one of these (``cupid*``, ``alpsbench_*``)."""
    families = [c[:-1] for c in RELEASE_CONFIGS if c.endswith("*")]
    fixed = [c for c in RELEASE_CONFIGS if not c.endswith("*")]
    fixed += [name + suffix for name in declared for suffix in KIND_CONFIGS]
    if entry in fixed or any(entry.startswith(f) and len(entry) > len(f) for f in families):
        return True
    if entry.endswith("*"):
        prefix = entry[:-1]
        return any(c.startswith(prefix) for c in fixed) or any(
            f.startswith(prefix) or prefix.startswith(f) for f in families
        )
    return False


class ConfigError(PrefkitError):
    """``prefkit.toml`` (or a section handed to the library) is not a valid configuration."""


#: The most annotators one item can get: a fixed overlap, an adaptive ``max``, ``--overlap``.
MAX_OVERLAP = 100
HOURS_PER_YEAR = 24 * 365
SECONDS_PER_DAY = 86_400


class Section(Contract):
    """A table of ``prefkit.toml``: every number in it has a finite range (its field's bounds), and a
    float is never ``inf`` or ``nan`` (:func:`numeric_keys` lists them; the errors name key, value and
    range)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False, strict=True)


class ProjectSection(Section):
    name: str = Field(default="prefkit-project", description="The project's (and its releases') name.")
    description: str = Field(
        default="A human-verified personalization benchmark built with prefkit.",
        description="One sentence for the dataset card.",
    )
    licence: str = Field(default="CC-BY-4.0", description="SPDX id of the released data's licence.")
    database: str = Field(
        default="project.db",
        description="SQLite file (relative to the project) or a postgresql:// URL without a password.",
    )


#: The roles a request names; each has a model in ``[llm.models]``.
LLM_ROLES = ("writer", "user_simulator", "assistant", "judge")
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_COMPLETION_TOKENS = 500


class LLMConfigError(ConfigError):
    """The LLM configuration cannot work (no key, no endpoint, unknown role, bad value)."""


class LLMSection(Section):
    """The ``[llm]`` table: the LLM layer's settings (the key itself is never here: ``api_key_env``
    names the variable holding it)."""

    backend: Backend = Field(
        default="offline", description="'offline' (deterministic, built in) or 'openai'."
    )
    base_url: str = Field(default="", description="OpenAI-compatible endpoint; default $OPENAI_BASE_URL.")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Variable holding the API key.")
    concurrency: int = Field(default=8, ge=1, le=1024, description="Calls open at once.")
    requests_per_minute: float = Field(
        default=0, ge=0, le=1e7, description="Client-side request limit (0 = none)."
    )
    tokens_per_minute: float = Field(
        default=0, ge=0, le=1e10, description="Client-side token limit (0 = none)."
    )
    timeout_s: float = Field(default=60, gt=0, le=SECONDS_PER_DAY, description="Per HTTP attempt, in all.")
    max_retries: int = Field(default=4, ge=0, le=100, description="The SDK's retries.")
    structured: Structured = Field(
        default="auto",
        description="'auto' (try each form, remember the one the endpoint takes), 'json_schema', "
        "'json_object_schema' or 'json_mode'.",
    )
    repair_attempts: int = Field(default=1, ge=0, le=10, description="Re-asks with the validation error.")
    max_tokens: int = Field(
        default=0,
        ge=0,
        le=10_000_000,
        description="Most completion tokens any call may ask for (0 = each stage's own, or the server's).",
    )
    models: dict[str, str] = Field(
        default_factory=lambda: dict.fromkeys(LLM_ROLES, DEFAULT_MODEL),
        description="Model per role (a role left out keeps the default model).",
    )
    costs: dict[str, dict[str, Annotated[float, Field(ge=0, le=1e6)]]] = Field(
        default_factory=dict, description="US$ per 1M tokens per model; extends the built-in table."
    )
    completion_tokens: dict[str, Annotated[int, Field(ge=1, le=10_000_000)]] = Field(
        default_factory=dict, description="Per-stage completion estimate when a request has no max_tokens."
    )
    batch_poll_s: float = Field(
        default=30.0, gt=0, le=SECONDS_PER_DAY, description="Seconds between Batch API polls."
    )
    batch_wait_s: float = Field(
        default=86_400.0, gt=0, le=30 * SECONDS_PER_DAY, description="Give up waiting for a batch after this."
    )

    @field_validator("models")
    @classmethod
    def _every_role(cls, models: dict[str, str]) -> dict[str, str]:
        return {**dict.fromkeys(LLM_ROLES, DEFAULT_MODEL), **models}

    @field_validator("api_key_env")
    @classmethod
    def _key_variable(cls, name: str) -> str:
        return name or "OPENAI_API_KEY"

    @classmethod
    def of(cls, llm_config: LLMSection | dict[str, Any] | None) -> LLMSection:
        """``[llm]`` as given: the section itself, or a dict checked like ``prefkit.toml`` (an unknown or
        mistyped key is an :class:`LLMConfigError` naming it)."""
        if isinstance(llm_config, LLMSection):
            return llm_config
        try:
            return cls.model_validate(llm_config or {})
        except ValidationError as exc:
            raise LLMConfigError(f"[llm] {out_of_range_line(cls, exc) or validation_line(exc)}") from None

    def model_for(self, role: str) -> str:
        try:
            return self.models[role]
        except KeyError:
            raise LLMConfigError(
                f'no model configured for role {role!r}; set [llm.models] {role} = "..."'
            ) from None

    def completion_budget(self, stage: str, max_tokens: int | None) -> int:
        """Completion tokens to reserve/estimate for a request with no known answer yet."""
        if max_tokens:
            return max_tokens
        return self.completion_tokens.get(stage, DEFAULT_COMPLETION_TOKENS)


class GenerationSection(Section):
    """The ``[generation]`` table: the settings of a generation run (CLI flags override them through
    ``prefkit.pipelines.generation.run.generation_settings``, which also checks them)."""

    personas: int = Field(default=4, ge=1, le=1_000_000, description="Personas in a batch.")
    factors_per_persona: int = Field(default=8, ge=3, le=1000, description="Context factors per persona.")
    sessions: int = Field(default=13, ge=1, le=10_000, description="Sessions per persona.")
    a_prior: int = Field(default=4, ge=0, le=10_000, description="Sessions before the A/A' contrast.")
    b_count: int = Field(default=2, ge=0, le=10_000, description="Sessions of the B factor.")
    decision_styles: Literal["prefkit", "cupid"] = Field(
        default="prefkit",
        description="Personas' decision styles: Scott & Bruce's four (rational, intuitive, dependent, avoidant) "
        "or 'cupid': the four CUPID's sampler uses (analytical, directive, conceptual, behavioral).",
    )
    consistent_prior: Literal["equal", "cupid"] = Field(
        default="equal",
        description="'equal': the consistent instance gets the held-out fillers back (as many prior sessions "
        "as the other two, as CUPID's released rows have); 'cupid': CUPID's create_instances rule (held out).",
    )
    max_turns: int = Field(default=16, ge=2, le=64, description="Turns per simulated dialogue.")
    met_score: int = Field(default=8, ge=2, le=10, description="Checklist score that counts as met.")
    attempts: int = Field(default=3, ge=1, le=100, description="Tries per request before it fails.")
    seed: int = Field(default=0, ge=0, le=2**63 - 1, description="Seed of every random choice.")
    taxonomy: Path | None = Field(
        default=None, strict=False, description="Taxonomy file (relative to the project)."
    )
    seed_personas: Path | None = Field(default=None, strict=False, description="JSONL of seed personas.")
    seed_licence: str | None = Field(default=None, description="Licence of the seed personas.")


class SignInSection(Section):
    free_failures: int = Field(default=3, ge=0, le=1000, description="Failed sign-ins that cost nothing.")
    backoff_s: float = Field(default=2.0, ge=0, le=3600, description="First wait after the free failures.")
    max_backoff_s: float = Field(default=300.0, ge=0, le=SECONDS_PER_DAY, description="Longest wait.")
    lockout_after: int = Field(default=10, ge=1, le=10_000, description="Failures that lock the name.")
    lockout_minutes: float = Field(
        default=15.0, ge=0, le=60 * HOURS_PER_YEAR, description="Length of a lockout."
    )
    client_factor: int = Field(
        default=3, ge=1, le=1000, description="A client address gets this many times the allowance."
    )
    session_hours: float = Field(
        default=12.0,
        gt=0,
        le=HOURS_PER_YEAR,
        description="A sign-in lasts this long (a reload keeps it; sign-out ends it).",
    )
    one_time_password_hours: float = Field(
        default=72.0,
        gt=0,
        le=HOURS_PER_YEAR,
        description="A one-time password works this long after it was made (the account's creation or reset).",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Addresses or networks (CIDR) of reverse proxies whose X-Forwarded-For is believed.",
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network (CIDR)") from None
        return [entry.strip() for entry in value]


class OverlapRange(Section):
    """Adaptive overlap: an item goes to ``min`` annotators, then one more at a time while its labels
    are uncertain, up to ``max``; a stable random ``audit_share`` of items always gets ``max``."""

    min: int = Field(
        ge=1,
        le=MAX_OVERLAP,
        description="Annotators every item gets (1: only for annotators reliable on gold).",
    )
    max: int = Field(ge=1, le=MAX_OVERLAP, description="Most annotators an item can get.")
    audit_share: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Share of items that always get max (agreement is measured there).",
    )
    confidence: float = Field(
        default=0.9, gt=0.5, lt=1, description="An item stops when every unit's posterior reaches this."
    )
    gold_items: int = Field(
        default=5,
        ge=1,
        le=10_000,
        description="Gold labels an annotator needs before one label of theirs may stand alone.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> OverlapRange:
        if self.max < self.min:
            raise ValueError(f"overlap max {self.max} is below min {self.min}")
        return self

    @classmethod
    def parse(cls, text: str) -> int | OverlapRange:
        """``"3"`` (fixed) or ``"2..4"`` (adaptive), as ``tasks create --overlap`` takes it."""
        m = re.fullmatch(r"\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?", text)
        if not m:
            raise ConfigError(f"overlap {text!r}: give a number (3) or a range min..max (2..4)")
        if max(len(m[1]), len(m[2] or "")) > 3 or max(int(m[1]), int(m[2] or 0)) > MAX_OVERLAP:
            raise ConfigError(f"overlap {text!r}: at most {MAX_OVERLAP} annotators per item")
        if m[2] is None:
            if int(m[1]) < 1:
                raise ConfigError(f"overlap {text!r}: at least 1 annotator per item")
            return int(m[1])
        try:
            return cls(min=int(m[1]), max=int(m[2]))
        except ValidationError as exc:
            raise ConfigError(f"overlap {text!r}: {validation_line(exc, root='overlap')}") from None


def _overlap_tag(value: Any) -> str:
    return "range" if isinstance(value, dict | OverlapRange) else "number"


#: ``overlap``: a number (fixed), or a table (adaptive); an error names the one that was given.
Overlap = Annotated[
    Annotated[Annotated[int, Field(ge=1, le=MAX_OVERLAP)], Tag("number")]
    | Annotated[OverlapRange, Tag("range")],
    Discriminator(_overlap_tag),
]


class AnnotationSection(Section):
    overlap: Overlap = Field(
        default=3,
        description="Annotators per task: a number (fixed), or {min = 2, max = 4} (adaptive overlap).",
    )
    gold_rate: float = Field(default=0.1, ge=0, lt=1, description="Share of gold items in a queue chunk.")
    queue_chunk: int = Field(default=10, ge=1, le=1000, description="Items assigned at a time.")
    undo_depth: int = Field(default=10, ge=1, le=1000, description="Own items per page of My items.")
    fast_item_s: float = Field(
        default=2.0,
        ge=0,
        le=3600,
        description="Dashboard: an annotator whose mean seconds per item is below this is an outlier.",
    )
    stale_after_hours: float = Field(
        default=24,
        ge=0,
        le=HOURS_PER_YEAR,
        description="Open items go back to the pool after this (0 = never).",
    )
    time_cap_s: float = Field(
        default=600,
        gt=0,
        le=SECONDS_PER_DAY,
        description="Cost: seconds on one item counted at most (a tab left open).",
    )
    pace_days: float = Field(
        default=7, gt=0, le=3650, description="Cost: the forecast's pace is of this many days."
    )
    assist_control_share: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description="Share of items with a suggestion shown without it (the control arm), per annotator and kind.",
    )
    repeat_share: float = Field(
        default=0.05, ge=0, le=0.5, description="Share of labelled items shown again (agreement --within)."
    )
    sign_in: SignInSection = Field(default_factory=SignInSection, description="Sign-in throttling.")


#: Krippendorff's α lies in [-1, 1].
Alpha = Annotated[float, Field(ge=-1, le=1)]


def _alpha_tag(value: Any) -> str:
    return "table" if isinstance(value, dict) else "number"


#: ``alpha_min``: one threshold, or a table of them; an error names the one that was given.
AlphaMin = Annotated[
    Annotated[Alpha, Tag("number")] | Annotated[dict[str, Alpha], Tag("table")], Discriminator(_alpha_tag)
]


class ReleasePolicy(Section):
    """The ``[release]`` table: the gates' thresholds, which configs ship, and the card's answers."""

    policy: Policy = Field(default="final", description="'final' (α ≥ 0.800) or 'tentative' (α ≥ 0.667).")
    alpha_min: AlphaMin = Field(
        default=FINAL_ALPHA_MIN,
        description='One α threshold, or a table {default = 0.8, "kind.field" = 0.7}.',
    )
    min_labels_per_item: int | None = Field(
        default=None,
        ge=1,
        le=MAX_OVERLAP,
        description="Live labels every released task needs (default: the overlap each task was created with).",
    )
    gold_accuracy_min: float = Field(
        default=0.8, ge=0, le=1, description="Every annotator's gold accuracy floor."
    )
    allow_offline: bool = Field(default=False, description="Release content of the offline backend.")
    adjudicate: Adjudicate = Field(
        default="ties", description="'ties' or 'all' disagreements need a decision."
    )
    consensus: Consensus = Field(
        default="majority",
        description="How a unit is decided: majority vote, or by posterior under Dawid-Skene or MACE reliabilities.",
    )
    consensus_confidence: float = Field(
        default=0.9,
        gt=0.5,
        lt=1,
        description="dawid_skene / mace: a unit below this posterior waits for adjudication.",
    )
    judge_alpha_min: float = Field(
        default=TENTATIVE_ALPHA_MIN,
        ge=-1,
        le=1,
        description="An LLM judge below this α with humans is not validated.",
    )
    self_alpha_min: float = Field(
        default=TENTATIVE_ALPHA_MIN, ge=-1, le=1, description="Flag annotators below it with their repeats."
    )
    require_gold: bool = Field(default=True, description="Label gates need labelled gold items.")
    assisted: Literal["allow", "control_only", "forbid"] = Field(
        default="allow",
        description="Labels made with a suggestion on screen: 'allow' (gated on anchoring), "
        "'control_only' (left out of the release) or 'forbid' (a release with any fails).",
    )
    configs: list[str] | None = Field(default=None, description="Configs to release (default: all).")
    splits: dict[SplitName, Annotated[float, Field(gt=0, lt=1)]] | None = Field(
        default=None,
        description="A declared kind's shares of items per split by item-id hash, the rest 'train' "
        "(test answers private); default: one public split.",
    )
    alpsbench_reference: AlpsReference = Field(
        default="verified",
        description="'verified': only people-verified AlpsBench packets in the tracks; 'imported': all of them.",
    )
    signing_key: str = Field(
        default="", description="OpenSSH private key that signs X.Y.Z.sha256 at the cut ('' = no signature)."
    )
    allowed_signers: str = Field(
        default="", description="OpenSSH allowed_signers file: verify then requires a valid signature."
    )
    signer: str = Field(default="", description="Principal the signature must be by ('' = any in the file).")
    canary: str = Field(
        default="",
        pattern=r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?$",
        description="The project's canary GUID, in every release (made at init; '' = made on first use).",
    )
    task_categories: list[str] = Field(default_factory=lambda: ["text-generation"], description="Card.")
    annotations_creators: list[str] = Field(default_factory=lambda: ["expert-generated"], description="Card.")
    tags: list[str] = Field(
        default_factory=lambda: ["personalization", "benchmark", "human-verified"], description="Card."
    )
    motivation: str = Field(
        default="Created to evaluate how well LLMs infer and follow individual users' preferences, with every label checked by people.",
        description="Card: why the dataset exists.",
    )
    uses: str = Field(
        default="Evaluating personalization of LLM assistants. Not for profiling real people: dialogues may contain personal details of their original authors.",
        description="Card: intended and out-of-scope uses.",
    )
    maintenance: str = Field(
        default="Maintained by the project's maintainers; errata become a new release (patch for metadata, minor for added records, major for changed records).",
        description="Card: who maintains it and how.",
    )

    @field_validator("configs")
    @classmethod
    def _known_configs(cls, configs: list[str] | None, info: ValidationInfo) -> list[str] | None:
        declared = tuple((info.context or {}).get("declared_kinds", ()))
        for entry in configs or []:
            if not known_config(entry, declared):
                raise ValueError(
                    f"unknown config {entry!r}; the configs are {', '.join(RELEASE_CONFIGS + declared)} "
                    "(a name ending in * selects every config it starts)"
                )
        return configs

    @field_validator("splits")
    @classmethod
    def _shares(cls, splits: dict[str, float] | None) -> dict[str, float] | None:
        if splits and sum(splits.values()) > 1:
            raise ValueError(f"the split shares sum to {sum(splits.values()):g}; they may sum to 1 at most")
        return splits

    def alpha_for(self, kind: str, field_name: str) -> float:
        """The α threshold of one field: its ``"kind.field"`` entry, else ``default``, else 0.800."""
        return alpha_threshold(self.alpha_min, kind, field_name)

    @property
    def default_alpha(self) -> float:
        """The threshold of a field with no entry of its own (the dashboard's reference line)."""
        if isinstance(self.alpha_min, dict):
            return float(self.alpha_min.get("default", FINAL_ALPHA_MIN))
        return float(self.alpha_min)


def alpha_threshold(alpha_min: float | dict[str, float], kind: str, field_name: str) -> float:
    """α_min (a number, or a table keyed ``default`` / ``"kind.field"``) for one field."""
    if isinstance(alpha_min, dict):  # a declared multi_label question's entry covers each of its labels
        question = alpha_min.get(
            f"{kind}.{field_name.split(':')[0]}", alpha_min.get("default", FINAL_ALPHA_MIN)
        )
        return float(alpha_min.get(f"{kind}.{field_name}", question))
    return float(alpha_min)


class ProjectConfig(Section):
    """The whole ``prefkit.toml``."""

    project: ProjectSection = Field(default_factory=ProjectSection, description="[project]")
    llm: LLMSection = Field(default_factory=LLMSection, description="[llm]")
    generation: GenerationSection = Field(default_factory=GenerationSection, description="[generation]")
    annotation: AnnotationSection = Field(default_factory=AnnotationSection, description="[annotation]")
    release: ReleasePolicy = Field(default_factory=ReleasePolicy, description="[release]")

    @classmethod
    def parse(
        cls, data: dict, source: str = "prefkit.toml", declared_kinds: tuple[str, ...] = ()
    ) -> ProjectConfig:
        """Validate a parsed TOML document; a bad or unknown key is one :class:`ConfigError` naming it
        (a number outside its range: the key, the value and the range). ``declared_kinds``: the
        project's ``kinds/`` (their release configs are known configs)."""
        try:
            return cls.model_validate(data, context={"declared_kinds": declared_kinds})
        except ValidationError as exc:
            line = out_of_range_line(cls, exc) or validation_line(exc, root="<file>")
            raise ConfigError(f"{source}: {line}") from None


# -- every number of prefkit.toml and its range -----------------------------------------------------------
#: Union members' tags in an error's location (``annotation.overlap.number``), not keys of the file.
_TAGS = ("number", "range", "table")


@dataclass(frozen=True)
class NumericKey:
    """One number of ``prefkit.toml``: its key (``*`` for any key of a table), its type and bounds."""

    path: tuple[str, ...]
    kind: type
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    @property
    def key(self) -> str:
        return ".".join(self.path)

    def holds(self, value: float) -> bool:
        return (
            math.isfinite(value)
            and (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
            and (self.lt is None or value < self.lt)
        )

    @property
    def range(self) -> str:
        what = "an integer" if self.kind is int else "a finite number"
        sides = ((("≥", self.ge), (">", self.gt)), (("≤", self.le), ("<", self.lt)))
        bounds = [next((f"{sign} {_num(v)}" for sign, v in side if v is not None), "") for side in sides]
        return f"{what} {' and '.join(b for b in bounds if b)}".strip()

    def matches(self, loc: tuple[str, ...]) -> bool:
        return len(loc) == len(self.path) and all(
            p in ("*", part) for p, part in zip(self.path, loc, strict=True)
        )


def _num(value: float | None) -> str:
    return str(int(value)) if value is not None and float(value).is_integer() else repr(value)


def _bounds(metadata: Any) -> dict[str, float]:
    found: dict[str, float] = {}
    for m in metadata:
        if isinstance(m, annotated_types.GroupedMetadata) or hasattr(m, "metadata"):
            found.update(_bounds(getattr(m, "metadata", None) or list(m)))
        for name in ("ge", "gt", "le", "lt"):
            if isinstance(m, getattr(annotated_types, name.capitalize())):
                found[name] = getattr(m, name)
    return found


def _walk(tp: Any, path: tuple[str, ...], bounds: dict[str, float]) -> typing.Iterator[NumericKey]:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *meta = typing.get_args(tp)
        yield from _walk(base, path, {**bounds, **_bounds(meta)})
    elif origin in (Union, types.UnionType):
        seen: set[NumericKey] = set()
        for arg in typing.get_args(tp):
            for key in _walk(arg, path, bounds):
                if key not in seen:
                    seen.add(key)
                    yield key
    elif origin is dict:  # a table: its closed keys by name, any other key as ``*``
        keys, value = typing.get_args(tp)
        for name in typing.get_args(keys) if typing.get_origin(keys) is Literal else ("*",):
            yield from _walk(value, (*path, name), {})
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        for name, info in tp.model_fields.items():
            yield from _walk(info.annotation, (*path, name), _bounds(info.metadata))
    elif tp in (int, float):
        yield NumericKey(path, tp, **bounds)


def numeric_keys(model: type[BaseModel] = ProjectConfig) -> list[NumericKey]:
    """Every number of ``model`` (default: the whole ``prefkit.toml``), found from the models
    themselves, with its range: a new numeric key is listed (and fuzzed by the tests) as it is added."""
    return list(_walk(model, (), {}))


def out_of_range_line(model: type[BaseModel], exc: ValidationError) -> str | None:
    """``key = value: must be <range>`` for the first problem of ``exc`` that is a number of ``model``
    outside its range (or ``inf``/``nan``); None when it is another problem."""
    keys = numeric_keys(model)
    for e in exc.errors()[:1]:
        loc = tuple(str(p) for p in e.get("loc", ()) if str(p) not in _TAGS)
        value = e.get("input")
        key = next((k for k in keys if k.matches(loc)), None)
        if key is None or isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return f"{'.'.join(loc)} = {value!r}: must be {key.range}"
    return None
