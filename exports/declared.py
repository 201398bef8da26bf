"""The release configs of the project's declared task kinds (``kinds/<name>.toml``): ``NAME``, every
item people decided, and ``NAME_unverified``, the items not decided yet or decided by fewer people than
they needed (docs/kinds.md, "What the release holds"). A row holds the item's id, every field, its
``meta`` (when items carry one), ``n_labels`` and ``decided_by``; a decided row also ``answers``, one typed
entry per question. Column types follow the declaration (a chat is a list of turns, each with its
``session`` and ``date`` where any item's turns give them, a ranking a list of
values best first, a span question a list of ``{turn, start, end, label, text}``: ``turn`` on a chat
field only; a text question every answer given, by pseudonymous annotator, and the adjudicated one),
so the card's features, Croissant's fields and the DuckDB tables do too. ``NAME_labels``,
``NAME_final_labels`` and ``NAME_adjudications`` are the shared label configs' rows of the kind with
``values`` typed as its questions (:func:`answers_type`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from prefkit.curation.annotation.annotator_model import live_labels
from prefkit.curation.annotation.declared import UNVERIFIED, DeclaredKind, QuestionDecl
from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY
from prefkit.curation.quality.consensus import effective_adjudications, final_labels, labels_needed
from prefkit.schemas.alpsbench_layout import split_rank
from prefkit.schemas.common import canonical_json
from prefkit.schemas.config import SplitName

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore
    from prefkit.exports.release_data import ConfigData

_FIELD_TYPES = {"text": pa.string(), "list": pa.list_(pa.string())}
#: A chat turn's keys: role and content, and the session it opens and its date where items give them.
_TURN = ("role", "content", "session", "date")
_SPAN = [("start", pa.int64()), ("end", pa.int64()), ("label", pa.string())]
_TEXT = pa.struct(
    [
        ("given", pa.list_(pa.struct([("annotator", pa.string()), ("text", pa.string())]))),
        ("adjudicated", pa.string()),
    ]
)
_ANSWER_TYPES = {
    "label": pa.string(),
    "multi_label": pa.list_(pa.string()),
    "rating": pa.int64(),
    "ranking": pa.list_(pa.string()),
}
_RULES = {
    "label": "majority",
    "multi_label": "majority per label",
    "rating": "the lower median",
    "ranking": "mean rank",
    "span": "the words more than half of the answers mark with a label (per word), consecutive ones one span",
    "text": "not decided: every answer given, and the one a maintainer chose",
}
#: Arrow types a ``meta`` struct's leaves may take (what DuckDB and ``datasets`` both type).
_LEAVES = (pa.string(), pa.int64(), pa.float64(), pa.bool_())


def declared_kinds() -> list[DeclaredKind]:
    """The declared kinds with configs of their own (one whose hooks feed other configs has none)."""
    return [k for k in TASK_KIND_REGISTRY.values() if isinstance(k, DeclaredKind) and not k.release]


def item_split(item_id: str, shares: dict[SplitName, float] | None) -> str:
    """An item's split: ``test`` (the one public split) without ``[release] splits``; with them, by a
    hash of its id (the same in every cut): ``test``, ``validation`` by their shares, the rest ``train``."""
    if not shares:
        return "test"
    at = int(split_rank(item_id)[:13], 16) / 16**13
    for name in ("test", "validation"):
        if at < shares.get(name, 0):
            return name
        at -= shares.get(name, 0)
    return "train"


def question_line(q: QuestionDecl) -> str:
    """One question as the card and a config's description state it: name, title, type, rule."""
    choices = ", ".join(map(str, q.choices()))
    how = f"{q.type} ({choices})" if choices else q.type
    if q.type == "span":
        how = f"span over {q.field} ({choices}; character offsets)"
    return f"{q.name}: {q.text()}, {how}{'' if q.required else ', optional'}; decided by {_RULES[q.type]}"


def _answer_type(q: QuestionDecl, chat: set[str], row: bool) -> pa.DataType:
    """A question's answer in a decided row (``row``: a span's text, a text question's answers) or in
    a label's values."""
    if q.type == "span":
        turn = [("turn", pa.int64())] if q.field in chat else []
        return pa.list_(pa.struct(turn + _SPAN + ([("text", pa.string())] if row else [])))
    if q.type == "text":
        return _TEXT if row else pa.string()
    return _ANSWER_TYPES[q.type]


def answers_type(kind: DeclaredKind, row: bool = True) -> pa.DataType:
    """The ``answers`` struct of a decided row, one typed entry per question; with ``row=False`` a
    label's ``values`` (a text answer a string; ``comment`` when the kind takes one): the ``values``
    column of ``NAME_labels``, ``NAME_final_labels`` and ``NAME_adjudications``."""
    chat = {f.name for f in kind.declaration.fields if f.type == "chat"}
    cols = [(q.name, _answer_type(q, chat, row)) for q in kind.declaration.questions]
    return pa.struct(cols + ([("comment", pa.string())] if kind.declaration.comment and not row else []))


def meta_type(metas: list[Any]) -> pa.DataType:
    """A struct when every item's meta has the same keys, each with one type throughout (nested
    objects and lists of them too); else one JSON string per row."""
    if not metas or any(not isinstance(m, dict) for m in metas) or len({tuple(sorted(m)) for m in metas}) > 1:
        return pa.string()
    try:
        t = pa.array(metas).type
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.string()
    same = all(len({type(m[k]) for m in metas if m[k] is not None}) <= 1 for k in metas[0])
    return t if same and _typed(t) else pa.string()


def _field_type(name: str, type_: str, tasks: list) -> pa.DataType:
    if type_ != "chat":
        return _FIELD_TYPES[type_]
    given = {key for t in tasks for turn in t.payload.get(name) or [] for key in turn}
    return pa.list_(pa.struct([(key, pa.string()) for key in _TURN if key in given or key in _TURN[:2]]))


def _typed(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return t.num_fields > 0 and all(_typed(f.type) for f in t)
    if pa.types.is_list(t):
        return _typed(t.value_type)
    return t in _LEAVES


def _text_answer(q: QuestionDecl, labels: dict[str, dict[str, Any]], adjudicated: dict | None, who) -> dict:
    given = sorted(
        ({"annotator": who(a), "text": v[q.name]} for a, v in labels.items() if v.get(q.name)),
        key=lambda g: g["annotator"],
    )
    return {"given": given, "adjudicated": (adjudicated or {}).get(q.name)}


def _with_text(spans: list[dict[str, Any]], shown: Any) -> list[dict[str, Any]]:
    """Each span with the characters it marks (a chat's from its turn)."""
    out = []
    for s in spans:
        text = shown[s["turn"]]["content"] if isinstance(shown, list) else shown
        out.append({**s, "text": text[s["start"] : s["end"]]})
    return out


def declared_configs(
    store: ProjectStore,
    kind: DeclaredKind,
    config_data: type[ConfigData],
    pseudonym: Callable[[str], str],
    min_labels: int | None = None,
    splits: dict[SplitName, float] | None = None,
) -> list[ConfigData]:
    """``NAME`` and ``NAME_unverified`` of a declared kind, their rows split by :func:`item_split`; with
    ``splits``, the test items' answers go to the private ``NAME_test_answers`` (the public rows' are null). An item is verified when a maintainer
    adjudicated it, or when its labels decided it and it has the labels it needed
    (:func:`prefkit.curation.quality.consensus.labels_needed`: its overlap, the target adaptive overlap
    settled on, or ``min_labels``), whatever a gate override says."""
    tasks = store.labels.tasks(kind=kind.name)
    decl = kind.declaration
    metas = [t.payload["meta"] for t in tasks if "meta" in t.payload]
    meta = [("meta", meta_type(metas))] if metas else []
    as_json = bool(meta) and meta[0][1] == pa.string()
    head = [("id", pa.string()), *((f.name, _field_type(f.name, f.type, tasks)) for f in decl.fields), *meta]
    counts = [("n_labels", pa.int64()), ("decided_by", pa.string())]
    shows = "; ".join(f"{f.name} ({f.type}{f': {f.title}' if f.title else ''})" for f in decl.fields)
    said = (", `meta` (" + ("JSON text" if as_json else "a struct") + ")") if meta else ""
    decided = config_data(
        kind.name,
        f"Items of the task {decl.title!r} that people decided: id, the fields ({shows}){said}, "
        "`n_labels`, `decided_by` and `answers`, one entry per question: "
        f"{' | '.join(question_line(q) for q in decl.questions)}."
        + (
            f" Evaluation (`prefkit eval run`): {decl.evaluation.model_dump_json()}."
            if decl.evaluation
            else ""
        ),
        pa.schema([*head, *counts, ("answers", answers_type(kind))]),
        needs=(kind.name,),
    )
    rest = config_data(
        kind.name + UNVERIFIED,
        f"Items of the task {decl.title!r} not verified yet: id, the fields{said}, `n_labels`, "
        "`decided_by` and `waiting_for` (labels: fewer than the item needs; adjudication: a tie).",
        pa.schema([*head, *counts, ("waiting_for", pa.string())]),
    )
    hidden = config_data(
        kind.name + "_test_answers",
        f"The decided answers of the test items of {decl.title!r} (private: withheld from the public release).",
        pa.schema([("id", pa.string()), ("task_id", pa.string()), ("answers", answers_type(kind))]),
        private=True,
    )
    finals = final_labels(store, kind.name)
    labels = live_labels(store, kind.name)
    adjudicated = effective_adjudications(store)
    for task in tasks:
        row: dict[str, Any] = {"id": task.item_ref, **{f.name: task.payload.get(f.name) for f in decl.fields}}
        if meta:
            m = task.payload.get("meta")
            row["meta"] = canonical_json(m) if as_json and m is not None else m
        split = item_split(task.item_ref, splits)
        final = finals[task.task_id]
        row |= {"n_labels": final.n_labels, "decided_by": final.shown_decided_by}
        need = labels_needed(task, min_labels)
        if not final.enough(task, min_labels):
            short = final.n_labels < need
            decided.drop(f"waiting for {'labels' if short else 'adjudication'} (in the unverified config)")
            rest.add(
                split,
                {**row, "waiting_for": f"labels ({final.n_labels} of {need})" if short else "adjudication"},
            )
            continue
        adj = adjudicated.get(task.task_id)
        answers = {}
        for q in decl.questions:
            value = (final.values or {}).get(q.name)
            if q.type == "text":
                value = _text_answer(q, labels.get(task.task_id, {}), adj.values if adj else None, pseudonym)
            elif q.type == "span" and value is not None:
                value = _with_text(value, task.payload.get(q.field or ""))
            answers[q.name] = value
        shown: dict[str, Any] | None = answers
        if splits and split == "test":
            hidden.add(split, {"id": task.item_ref, "task_id": task.task_id, "answers": answers})
            shown = None
        decided.add(split, {**row, "answers": shown})
    if splits and not hidden.count:
        hidden.drop("no decided item in the test split")  # kept, so the test_gold_private gate fails
    return [decided.finish(), rest.finish()] + ([hidden.finish()] if splits else [])
