"""The release configs of the project's declared task kinds (``kinds/<name>.toml``): ``NAME``, every
item people decided, with its fields and the decided answer of each question, and ``NAME_unverified``,
the items not decided yet. Column types follow the declaration (a chat is a list of turns, a ranking a
list of values best first, a span question a list of ``{turn, start, end, label}``: ``turn`` on a chat field
only), so the card's features, Croissant's fields and the DuckDB tables do too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
from prefkit.curation.annotation.declared import UNVERIFIED, DeclaredKind, QuestionDecl
from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY
from prefkit.curation.quality.consensus import final_labels

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore
    from prefkit.exports.release_data import ConfigData

_FIELD_TYPES = {
    "text": pa.string(),
    "chat": pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])),
    "list": pa.list_(pa.string()),
}
_SPAN = [("start", pa.int64()), ("end", pa.int64()), ("label", pa.string())]
_ANSWER_TYPES = {
    "label": pa.string(),
    "multi_label": pa.list_(pa.string()),
    "rating": pa.int64(),
    "ranking": pa.list_(pa.string()),
    "span": pa.list_(pa.struct(_SPAN)),
    "chat_span": pa.list_(pa.struct([("turn", pa.int64()), *_SPAN])),
}
_RULES = {
    "label": "majority",
    "multi_label": "majority per label",
    "rating": "the lower median",
    "ranking": "mean rank",
    "span": "the words more than half of the answers mark with a label (per word), consecutive ones one span",
}


def declared_kinds() -> list[DeclaredKind]:
    """The declared kinds with configs of their own (one whose hooks feed other configs has none)."""
    return [k for k in TASK_KIND_REGISTRY.values() if isinstance(k, DeclaredKind) and not k.release]


def _question(q: QuestionDecl) -> str:
    choices = ", ".join(map(str, q.choices()))
    how = f"{q.type} ({choices})" if choices else q.type
    if q.type == "span":
        how = f"span over {q.field} ({choices}; character offsets)"
    rule = _RULES.get(q.type, "not decided: every answer is in the labels config")
    return f"{q.name}: {q.text()}, {how}{'' if q.required else ', optional'}; decided by {rule}"


def declared_configs(store: ProjectStore, config_data: type[ConfigData]) -> list[ConfigData]:
    """``NAME`` and ``NAME_unverified`` of every declared kind with tasks in the project."""
    out = []
    for kind in declared_kinds():
        tasks = store.labels.tasks(kind=kind.name)
        if not tasks:
            continue
        decl = kind.declaration
        fields = [(f.name, _FIELD_TYPES[f.type]) for f in decl.fields]
        asked = [q for q in decl.questions if q.type in _ANSWER_TYPES]
        chat = {f.name for f in decl.fields if f.type == "chat"}
        types = {q.name: "chat_span" if q.type == "span" and q.field in chat else q.type for q in asked}
        answers = pa.struct([(q.name, _ANSWER_TYPES[types[q.name]]) for q in asked])
        shows = "; ".join(f"{f.name} ({f.type}{f': {f.title}' if f.title else ''})" for f in decl.fields)
        decided = config_data(
            kind.name,
            f"Items of the task {decl.title!r} that people decided: id, the fields ({shows}) and `answers`, "
            f"the decided answer of each question: {' | '.join(_question(q) for q in decl.questions)}.",
            pa.schema([("id", pa.string()), *fields, ("answers", answers)]),
            needs=(kind.name,),
        )
        rest = config_data(
            kind.name + UNVERIFIED,
            f"Items of the task {decl.title!r} not decided yet (too few labels, or a tie waiting for "
            f"adjudication): id and the fields ({shows}).",
            pa.schema([("id", pa.string()), *fields]),
        )
        finals = final_labels(store, kind.name)
        for task in tasks:
            row: dict[str, Any] = {
                "id": task.item_ref,
                **{f.name: task.payload.get(f.name) for f in decl.fields},
            }
            final = finals[task.task_id]
            if final.values is not None:
                decided.add("test", {**row, "answers": {q.name: final.values.get(q.name) for q in asked}})
            else:
                decided.drop("not decided yet (in the unverified config)")
                rest.add("test", row)
        out += [decided.finish(), rest.finish()]
    return out
