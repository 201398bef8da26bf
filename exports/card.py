"""The release's ``README.md``: a Hugging Face dataset card (YAML header with ``configs``/``data_files``,
licence, task categories, size category, annotation creators, source datasets) followed by the
Datasheets-for-Datasets sections (Gebru et al.) filled from the project: motivation, composition,
collection, labeling with agreement, uses, distribution, maintenance.

The card holds no timestamp, so re-cutting the same state gives the same card for the same version.
Every text that comes from the operator (``prefkit.toml``, ``--override``) or from the data (licences,
model names, annotator names) goes through :mod:`prefkit.schemas.safe_text`: a card rendered with HTML
on runs no script and loads no remote image.
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from importlib import resources
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from prefkit.curation.quality.agreement import NOT_MEASURED
from prefkit.exports.declared import declared_kinds, question_line
from prefkit.schemas.curation import ProvenanceSummary, canary_sentence
from prefkit.schemas.safe_text import md_code, md_text, shown_text

if TYPE_CHECKING:
    from prefkit.curation.quality.cost import CostReport

#: Hugging Face licence ids of the SPDX-style licence names prefkit.toml takes (the same names).
HF_LICENCES = {"cc-by-4.0", "cc-by-sa-4.0", "cc0-1.0", "mit", "apache-2.0", "odc-by", "cc-by-nc-4.0"}
SOURCE_DATASETS = {"alpsbench": "extended|AlpsBench", "cupid": "extended|CUPID"}
DEFAULT_CONFIG = "cupid"
#: The card's fixed text: CUPID differences, protocol notes, consensus rules, the official tools' use.
TEXT = tomllib.loads(resources.files(__package__).joinpath("card.toml").read_text(encoding="utf-8"))


def size_category(n: int) -> str:
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if n < limit:
            return name
    return "1M<n<10M"


def hf_licence(licence: str) -> str:
    name = licence.strip().lower()
    return name if name in HF_LICENCES else "other"


def _yaml_scalar(v: Any) -> str:
    """A JSON string is a valid YAML scalar; ``<``, ``>``, ``&``, ``[`` and ``]`` as ``\\u`` escapes."""
    text = json.dumps(shown_text(v) if isinstance(v, str) else v, ensure_ascii=False)
    for char in "<>&[]":  # the same text to a YAML reader; no markup or link to a page pasting it raw
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


def md_paragraphs(value: Any) -> str:
    """Operator prose as inert markdown, its blank-line paragraph breaks kept."""
    parts = [md_text(p) for p in str(value or "").replace("\r\n", "\n").split("\n\n")]
    return "\n\n".join(p for p in parts if p)


def default_config(configs) -> str | None:
    """The config ``load_dataset(<release>)`` reads without a name: ``cupid`` (CUPID's evaluator calls
    ``load_dataset(path, split="test")``), else the unverified CUPID instances, else AlpsBench's verified
    task 1 track, else its unverified packets, else the first config."""
    names = [c.name for c in configs if c.count]
    for name in (DEFAULT_CONFIG, "cupid_unverified", "alpsbench_task1", "alpsbench_unverified"):
        if name in names:
            return name
    return names[0] if names else None


def hf_feature(name: str, t: pa.DataType) -> list[str]:
    """One column's ``features`` entry of the card's ``dataset_info`` (Hugging Face's YAML form)."""
    head = f"- name: {_yaml_scalar(name)}"
    if pa.types.is_struct(t):
        return [head, "  struct:", *(f"  {x}" for f in t for x in hf_feature(f.name, f.type))]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = t.value_type
        if pa.types.is_struct(inner):
            return [head, "  list:", *(f"  {x}" for f in inner for x in hf_feature(f.name, f.type))]
        if pa.types.is_list(inner) or pa.types.is_large_list(inner):
            return [head, "  list:", *(f"  {x}" for x in hf_feature("item", inner)[1:])]
        return [head, "  list:", f"    dtype: {_dtype(inner)}"]
    return [head, f"  dtype: {_dtype(t)}"]


def _dtype(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_boolean(t):
        return "bool"
    for check, name in (
        (pa.types.is_int64, "int64"),
        (pa.types.is_int32, "int32"),
        (pa.types.is_float64, "float64"),
        (pa.types.is_float32, "float32"),
    ):
        if check(t):
            return name
    raise ValueError(f"no Hugging Face dtype for Arrow type {t}")


def yaml_header(meta: dict[str, Any], configs) -> str:
    """The card's YAML: metadata, every released config with its data files (one of them the
    default), and every config's features, so a column has one type whatever its rows hold."""
    lines = ["---", f"pretty_name: {_yaml_scalar(meta['name'])}", f"license: {meta['hf_licence']}"]
    for key in ("task_categories", "size_categories", "annotations_creators", "source_datasets", "tags"):
        lines.append(f"{key}:")
        lines += [f"- {_yaml_scalar(v)}" for v in meta[key]]
    released = [c for c in configs if c.count]
    default = default_config(released)
    lines.append("configs:")
    for cfg in released:
        lines += [f"- config_name: {_yaml_scalar(cfg.name)}"]
        if cfg.name == default:
            lines += ["  default: true"]
        lines += ["  data_files:"]
        for split in cfg.splits:
            path = _yaml_scalar(f"parquet/{cfg.name}/{split}.parquet")
            lines += [f"  - split: {_yaml_scalar(split)}", f"    path: {path}"]
    lines.append("dataset_info:")
    for cfg in released:
        lines += [f"- config_name: {_yaml_scalar(cfg.name)}", "  features:"]
        lines += [f"  {x}" for field in cfg.schema for x in hf_feature(field.name, field.type)]
    lines.append("---")
    return "\n".join(lines)


def _table(rows: list[list[Any]], head: list[str]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]


def _cell(c: Any) -> str:
    """A table cell: code spans and numbers as made here; any other text escaped."""
    if c is None:
        return ""
    if isinstance(c, _Safe):
        return str(c)
    return md_text(c)


class _Safe(str):
    """Markdown this module built from escaped parts (kept as is in a table cell)."""


def _fmt(x: Any) -> str:
    return "—" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _dropped(c) -> str:
    dropped = getattr(c, "dropped", {}) or {}
    if not dropped:
        return "0"
    return f"{sum(dropped.values())}: " + "; ".join(f"{n} {why}" for why, n in sorted(dropped.items()))


def _composition(configs) -> list[str]:
    released = [c for c in configs if c.count]
    total = sum(c.count for c in released)
    rows = [
        [
            _Safe(md_code(c.name)),
            ", ".join(f"{s} ({len(r)})" for s, r in c.splits.items()) or "none (every row dropped)",
            _dropped(c),
            c.description,
        ]
        for c in configs
    ]
    return [
        f"{total} rows in {len(released)} configs. Every config is Parquet under "
        "`parquet/<config>/<split>.parquet` (what `datasets.load_dataset` reads, every column typed); the "
        "same rows are JSON Lines in `data/<config>/<split>.jsonl` and in the DuckDB file for analysis. *Dropped* counts the "
        "items the project holds for a config that were left out of it, and why.",
        "",
        *_table(rows, ["config", "splits (rows)", "dropped", "what it holds"]),
        *_sources(configs),
    ]


def _sources(configs) -> list[str]:
    """AlpsBench's tracks by where their rows come from: the packets' published rows are the source;
    ``build-alpsbench`` fills the (track, session)s no packet carries."""
    with_sources = [c for c in configs if getattr(c, "sources", None) or c.name.startswith("alpsbench_task")]
    with_sources = [c for c in with_sources if not c.name.endswith("_gold")]
    if not with_sources:
        return []
    rows = [
        [
            _Safe(md_code(c.name)),
            (c.sources or {}).get("packet", 0),
            (c.sources or {}).get("built", 0),
            c.dropped.get("built, superseded by the packet's published row (the packets are the source)", 0),
        ]
        for c in with_sources
    ]
    return [
        "",
        "AlpsBench rows by source. A packet's own rows for a track are the source; `prefkit tasks "
        "build-alpsbench` builds only the (track, session)s no packet carries, and a built row whose "
        "(track, session) a packet carries is left out (*superseded*).",
        "",
        *_table(rows, ["track config", "from the packets", "built (passed task_qc)", "built, superseded"]),
    ]


def _collection(provenance: ProvenanceSummary) -> list[str]:
    sources = "; ".join(
        f"{md_text(s.kind)} ({s.rows} rows, licence: {md_text(s.licence or 'unknown')})"
        for s in provenance.sources
    )
    stages = ", ".join(f"{md_text(k)} ({v})" for k, v in provenance.stages.items())
    return [
        f"{provenance.records} stored records; {provenance.offline_records} "
        f"({provenance.offline_share:.1%}) were made by prefkit's offline backend.",
        "",
        f"- Sources: {sources or 'none imported'}",
        f"- Models: {', '.join(md_text(m) for m in provenance.models) or 'none'}",
        f"- Prompt template hashes: {', '.join(md_text(h) for h in provenance.prompt_template_hashes) or 'none'}",
        f"- Records per pipeline stage: {stages or 'none'}",
    ]


def _judges(agreement: list[dict], alpha_min: float) -> list[str]:
    """The matching set's LLM judges against the human consensus, validated or not."""
    rows = [
        [
            r["judge"],
            r["task_kind"],
            r.get("n_units"),
            _fmt(r.get("alpha")),
            f"[{_fmt(r.get('ci_low'))}, {_fmt(r.get('ci_high'))}]",
            "validated" if r.get("alpha") is not None and r["alpha"] >= alpha_min else "not validated",
        ]
        for r in agreement
        if r.get("comparison") == "judge-vs-human"
    ]
    if not rows:
        return []
    return [
        "",
        f"LLM judges against the human consensus (a judge below judge_alpha_min = {alpha_min:.3f} is not "
        "validated, and evaluation reports that use it say so):",
        "",
        *_table(rows, ["judge", "task kind", "units", "Krippendorff α", "95% CI", "status"]),
    ]


def _overlap(overlap: dict[str, Any] | None) -> list[str]:
    if not overlap:
        return []
    return [
        f"Adaptive overlap: {overlap['tasks']} items went to {overlap['min']} annotators, then one more at a "
        f"time while their labels were uncertain, up to {overlap['max']} ({overlap['mean_target']:.2f} per "
        f"item on average); {overlap['audit']} audit items (a stable random share) always went to "
        f"{overlap['max']}, and the agreement of those kinds is measured on them (*measured on*: audit share).",
        "",
    ]


def _labeling(
    agreement: list[dict],
    gates: list[dict],
    override: str | None,
    judge_alpha_min: float = 0.667,
    consensus: str = "majority",
    overlap: dict[str, Any] | None = None,
    guidelines: list | None = None,
) -> list[str]:
    out = [
        "Annotators label in prefkit's browser app (or Label Studio); each item goes to several annotators. "
        "The final label of a task is a maintainer's adjudication when there is one, else "
        f"{TEXT['consensus'][consensus]} (`final_labels` config). Annotator ids are keyed hashes "
        "with a per-project salt.",
        "",
        *_overlap(overlap),
    ]
    human = [r for r in agreement if r.get("comparison", "human-vs-human") == "human-vs-human"]
    rows = [
        [
            r["task_kind"],
            r["field"],
            r.get("level"),
            r.get("n_units"),
            _fmt(r.get("alpha")),
            f"[{_fmt(r.get('ci_low'))}, {_fmt(r.get('ci_high'))}]",
            _fmt(r.get("ac1")),
            "audit share" if r.get("share") == "audit" else "all items",
        ]
        for r in human
    ]
    head = ["task kind", "field", "level", "units", "Krippendorff α", "95% CI", "Gwet AC1", "measured on"]
    out += (
        _table(rows, head)
        if rows
        else ["No agreement was measured (no item has labels from two annotators)."]
    )
    unmeasured = [f"{r['task_kind']}.{r['field']}" for r in agreement if r.get("comparison") == NOT_MEASURED]
    if unmeasured:
        out += [
            "",
            f"Not measured (free-text answers, each kept in the `labels` config): {', '.join(unmeasured)}.",
        ]
    out += _judges(agreement, judge_alpha_min)
    out += _guidelines(guidelines or [])
    idle = [g["gate"] for g in gates if g["summary"].startswith("not applicable")]  # about configs not here
    gate_rows = [
        [g["gate"], "pass" if g["passed"] else "FAIL", _fmt(g["value"]), g["threshold"], g["summary"]]
        for g in gates
        if g["gate"] not in idle
    ]
    out += [
        "",
        "Release gates at cut time:",
        "",
        *_table(gate_rows, ["gate", "result", "value", "threshold", "summary"]),
        *(["", f"Not applicable to this release's configs: {', '.join(idle)}."] if idle else []),
    ]
    if override:
        out += ["", f"**Released with failing gates overridden:** {md_text(override)}"]
    return out


def _guidelines(versions: list) -> list[str]:
    """The guidelines versions the labels were made under, per kind (``prefkit guidelines list``)."""
    cells = [(v, _Safe(f"`{v.version}`") if v.version else "none recorded") for v in versions]
    rows = [[v.kind, shown, v.labels, v.first_used_at, v.last_used_at] for v, shown in cells]
    intro = (
        "Guidelines versions the labels were made under (the first 12 hex characters of the SHA-256 "
        "of the text annotators were shown; `prefkit guidelines diff` shows what changed):"
    )
    head = ["task kind", "guidelines version", "labels", "first label", "last label"]
    return ["", intro, "", *_table(rows, head)] if rows else []


def _kind_sections(configs, agreement: list[dict], cost: CostReport | None, guidelines: list) -> dict:
    """One section per declared kind with configs in the release: its fields, questions and rules,
    how its rows were decided, agreement per question, its annotators, time and guidelines."""
    by_name = {c.name: c for c in configs}
    out = {}
    for kind in declared_kinds():
        mine = by_name.get(kind.name)
        if mine is None:
            continue
        decl, rest = kind.declaration, by_name.get(f"{kind.name}_unverified")
        rows = [json.loads(line) for c in (mine, rest) if c for lines in c.splits.values() for line in lines]
        decided = Counter(r["decided_by"] for r in rows if "answers" in r)
        waiting = Counter(r["waiting_for"].split(" ")[0] for r in rows if "waiting_for" in r)
        labels = by_name.get(f"{kind.name}_labels")
        people = {json.loads(x)["annotator"] for s in (labels.splits.values() if labels else []) for x in s}
        time = next((t for t in (cost.times if cost else []) if t.kind == kind.name), None)
        shown = [f"- `{f.name}` ({f.type}){': ' + md_text(f.title) if f.title else ''}" for f in decl.fields]
        alpha = [
            [
                r["field"],
                r.get("n_units"),
                _fmt(r.get("alpha")),
                f"[{_fmt(r.get('ci_low'))}, {_fmt(r.get('ci_high'))}]",
                "audit share" if r.get("share") == "audit" else "all items",
            ]
            for r in agreement
            if r.get("task_kind") == kind.name and r.get("comparison", "human-vs-human") == "human-vs-human"
        ]
        versions = sorted({v.version for v in guidelines if v.kind == kind.name and v.version})
        out[f"Task: {md_text(decl.title)}"] = [
            f"Config `{kind.name}` (verified items) and `{kind.name}_unverified`; its labels, final labels and "
            f"adjudications with typed values in `{kind.name}_labels`, `{kind.name}_final_labels` and "
            f"`{kind.name}_adjudications`. Fields:",
            "",
            *shown,
            "",
            "Questions (answers are in `answers`, one entry per question):",
            "",
            *[f"- {md_text(question_line(q))}" for q in decl.questions],
            "",
            f"{mine.count} verified items"
            + (
                " (none yet)"
                if not mine.count
                else f" ({', '.join(f'{n} {how}' for how, n in sorted(decided.items()))})"
            )
            + f"; {sum(waiting.values())} unverified"
            + (
                f" (waiting for {', '.join(f'{what}: {n}' for what, n in sorted(waiting.items()))})"
                if waiting
                else ""
            )
            + ". An item is verified when a maintainer adjudicated it, or when its labels decided it and it "
            "has the labels it needed (its overlap, the target adaptive overlap settled on, or "
            "`[release] min_labels_per_item`), whatever a gate override says; `single`: one person's label "
            "decided it (adaptive overlap accepted a proven annotator's label, or the overlap was 1).",
            "",
            f"{len(people)} annotators; median seconds per item: {_fmt(time.median_s) if time else '—'}; "
            f"guidelines versions: {', '.join(f'`{v}`' for v in versions) or 'none recorded'}.",
            "",
            *(
                _table(alpha, ["question", "units", "Krippendorff α", "95% CI", "measured on"])
                if alpha
                else ["No agreement was measured."]
            ),
        ]
    return out


def _money(x: float | None, digits: int = 4) -> str:
    return "—" if x is None else f"${x:.{digits}f}"


def _studies(report: CostReport) -> list[str]:
    """Crowd studies' pay per verified item (``prefkit crowd report``); nothing without a study."""
    if not report.studies:
        return []
    rows = [
        [
            s.study_id,
            s.kind,
            s.batch_id,
            s.participants,
            s.approved,
            f"{s.currency} {s.cost:.2f}",
            s.verified_items,
            "—" if s.cost_per_verified_item is None else f"{s.currency} {s.cost_per_verified_item:.4f}",
        ]
        for s in report.studies
    ]
    head = ["study", "task kind", "batch", "participants", "approved", "paid", "verified items", "paid each"]
    return [
        "",
        "Crowd studies (`prefkit crowd report`): rewards of approved submissions and bonuses, over the "
        "verified items their participants labelled:",
        "",
        *_table(rows, head),
    ]


def _cost(report: CostReport) -> list[str]:
    """LLM dollars and annotator minutes, per verified unit (:mod:`prefkit.curation.quality.cost`)."""
    offline = sum(s.offline for s in report.stages)
    out = [
        f"What the data cost (`prefkit cost`): LLM calls from the call ledger, US$ {report.totals['cost_usd']:.4f} "
        f"for {report.totals['tokens']:,} tokens"
        + (f" ({offline} call(s) answered by the offline backend, at no cost)" if offline else "")
        + f"; annotator time {report.totals['minutes']:.1f} minutes over {report.totals['items']} finished items "
        f"(one item counts at most {report.time_cap_s:g} s; longer ones are capped and counted).",
        "",
    ]
    if report.stages:
        rows = [
            [
                s.stage,
                s.calls,
                s.cached,
                s.failed,
                s.offline,
                s.prompt_tokens + s.completion_tokens,
                _money(s.cost_usd),
            ]
            for s in report.stages
        ]
        out += [*_table(rows, ["stage", "calls", "cached", "failed", "offline", "tokens", "US$"]), ""]
    if report.times:
        rows = [
            [t.kind, t.items, f"{t.minutes:.1f}", _fmt(t.median_s), t.capped, t.untimed] for t in report.times
        ]
        out += [*_table(rows, ["task kind", "items", "minutes", "median s", "capped", "untimed"]), ""]
    rows = [
        [
            v.unit,
            v.count,
            " + ".join(v.stages),
            _money(v.usd_per_unit),
            v.kind,
            "—" if v.minutes_per_unit is None else f"{v.minutes_per_unit:.2f}",
        ]
        for v in report.verified
        if v.count or v.cost_usd or v.minutes  # a unit this project never made is not a row
    ]
    out += [
        "Per verified unit (the dollars of the stages that made it and the minutes of the task kind that "
        "verified it, divided by how many are verified):",
        "",
        *_table(rows, ["verified", "count", "LLM stages", "US$ each", "verified by", "minutes each"]),
    ]
    out += _studies(report)
    left = [f for f in report.forecast if f.remaining_labels]
    until = report.paced_until or "no finished item yet"
    if not left:
        out += ["", "When this release was cut, no labels remained in any batch."]
        return out
    rows = [
        [f.kind, f.batch_id, f.tasks, f.remaining_labels, _fmt(f.labels_per_day), _fmt(f.days_left)]
        for f in left
    ]
    out += [
        "",
        f"Labelling still open when this release was cut, per batch, at the pace of the last "
        f"{report.pace_days:g} days of labelling (until {until}; days left: the labels left over the "
        "kind's labels per day, — without a pace):",
        "",
        *_table(rows, ["task kind", "batch", "tasks", "labels left", "labels per day", "days left"]),
    ]
    return out


#: The columns of the card's table of suggestion arms, per task kind and arm.
ASSIST_HEAD = (
    "task kind|arm|labels|time median (s)|time p90 (s)|gold agreement|adjudicated agreement|"
    "α (human vs human)|anchoring rate"
).split("|")


def _assisted(assist: dict[str, Any] | None) -> list[str]:
    """Whether labels made with a model's suggestion on screen are in the release, and what the
    suggestions did (the arms' figures of ``prefkit agreement --assist``)."""
    if not assist:
        return []
    report, policy = assist["report"], assist["policy"]
    if report.n_assisted + report.n_control == 0:
        return ["", "No label was made with a model's suggestion on screen (no suggestions were shown)."]
    where = {
        "allow": f"**{report.n_assisted} labels made with a model's suggestion on screen are in this release**",
        "control_only": f"The {report.n_assisted} labels made with a model's suggestion on screen are "
        '**left out** of this release (`assisted = "control_only"`)',
        "forbid": f"{report.n_assisted} labels were made with a model's suggestion on screen "
        '(`assisted = "forbid"`)',
    }[policy]
    rows = []
    for k, ka in report.kinds.items():
        for arm, f in ka.arms.items():
            alpha = "; ".join(f"{name} {e.text()}" for name, e in f.alpha.items())
            rows.append(
                [
                    k,
                    arm,
                    f.n_labels,
                    f.time_median.text(1),
                    f.time_p90.text(1),
                    f.gold_agreement.text(),
                    f.adjudicated_agreement.text(),
                    alpha,
                    f.anchoring_rate.text(),
                ]
            )
    out = [
        "",
        f"{where}; {report.n_control} control labels were made without it (a stable random share "
        "of each annotator's items). Per task kind and arm, with 95% bootstrap intervals:",
        "",
        *_table(rows, ASSIST_HEAD),
        "",
    ]
    for k, ka in report.kinds.items():
        verdict = {
            None: "not measurable",
            True: "significantly worse than control",
            False: "not significantly worse",
        }
        out.append(
            f"- {k}: anchoring difference assisted − control {ka.anchoring_difference.text()}: "
            f"{verdict[ka.significantly_worse]}."
        )
    out += ["", f"Protocol: {report.protocol}."]
    return out


def _evaluation(configs) -> list[str]:
    """Which protocol numbers on this release should name, the official tools' layouts, and where the
    CUPID construction differs from CUPID's code."""
    names = {c.name for c in configs if c.count}
    out = [
        "Every number reported on this release should name the protocol that computed it "
        "(docs/eval.md of prefkit has the table):",
        "",
    ]
    out += [
        f"- {n}"
        for n in TEXT["protocol_notes"]
        if any(x.startswith(n.split("`")[1].rstrip("*")) for x in names)
    ]
    if "cupid" in names:
        out += TEXT["official_tools"]["cupid"]
    if any(n.startswith("alpsbench_task") for n in names):
        out += TEXT["official_tools"]["alpsbench_task"]
    if any(n.startswith("cupid") for n in names):
        out += ["", "Where this release's CUPID construction differs from CUPID's code:", ""]
        out += [f"- {d}" for d in TEXT["cupid_differences"]]
    return out if len(out) > 2 else []


def card(
    meta: dict[str, Any],
    configs,
    gates: list[dict],
    agreement: list[dict],
    provenance: ProvenanceSummary,
    cost: CostReport | None = None,
) -> str:
    """The dataset card text. ``meta``: name, version, description, licence, hf_licence, the YAML lists,
    and the free-text datasheet answers from ``[release]`` (motivation, uses, maintenance)."""
    distribution = (
        f"Licence: {md_text(meta['licence'])}. `manifest.json` lists the sha256 and size of every file; "
        "`prefkit release verify <dir>` re-hashes them. `croissant.json` is Croissant 1.0 metadata. The canary "
        "line under the title (also in `manifest.json`, `croissant.json` and the DuckDB file's `metadata` table) "
        "marks this as evaluation data: leave every file holding it out of training corpora."
    )
    sections = {
        "Motivation": [md_paragraphs(meta["motivation"])],
        "Composition": _composition(configs),
        **_kind_sections(configs, agreement, cost, meta.get("guidelines") or []),
        "Collection process": _collection(provenance),
        "Labeling": _labeling(
            agreement,
            gates,
            meta.get("override_reason"),
            meta.get("judge_alpha_min", 0.667),
            meta.get("consensus", "majority"),
            meta.get("overlap"),
            meta.get("guidelines"),
        )
        + _assisted(meta.get("assist")),
        **({"Cost": _cost(cost)} if cost is not None else {}),
        **({"Evaluation": ev} if (ev := _evaluation(configs)) else {}),
        "Uses": [md_paragraphs(meta["uses"])],
        "Distribution": [distribution],
        "Maintenance": [md_paragraphs(meta["maintenance"])],
    }
    parts = [
        yaml_header(meta, configs),
        "",
        f"# {md_text(meta['name'])} {md_text(meta['version'])}",
        "",
        md_paragraphs(meta["description"]),
        "",
        *([f"`{canary_sentence(meta['canary'])}`", ""] if meta.get("canary") else []),
    ]
    for title, body in sections.items():
        parts += [f"## {title}", "", *body, ""]
    return "\n".join(parts)
