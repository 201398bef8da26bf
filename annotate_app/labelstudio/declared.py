"""The Label Studio config of every declared task kind, generated from its declaration.

Fields are object tags (``Text``; a chat is ``Paragraphs`` of its turns; a list is one ``Text`` of its
lines); each question is a control named after it: ``Choices`` (a label, a multi_label with
``choice="multiple"``, a rating whose values are not 1..N), ``Rating`` (values 1..N), ``Ranker`` over a
``List`` of the values, ``TextArea``, and a span question ``Labels`` over its text field (``ParagraphLabels``
over a chat's ``Paragraphs``), whose offsets count UTF-16 units as the browser does (prefkit's count code
points: converted both ways). Results are read back question by question and end in the kind's own
validation, like every config's.
"""

from __future__ import annotations

from typing import Any

from prefkit.annotate_app.labelstudio.config import (
    LSConfig,
    by_control,
    choice_result,
    comment_xml,
    one_choice,
    tag,
    text,
    text_result,
)
from prefkit.curation.annotation.declared import DeclaredKind, QuestionDecl
from prefkit.curation.annotation.task_kinds import LabelError, TaskKind

#: The suffix of the List object a ranking question's Ranker orders.
LIST = "__values"


def _utf16(text: str, at: int) -> int:
    """Code point offset ``at`` of ``text`` as UTF-16 units (Label Studio's, the browser's)."""
    return len(text[:at].encode("utf-16-le")) // 2


def _code_points(text: str, at: Any, where: str) -> int:
    """UTF-16 offset ``at`` of ``text`` as code points; one :class:`LabelError` when it is none."""
    units = text.encode("utf-16-le")
    if type(at) is not int or not 0 <= at <= len(units) // 2:
        raise LabelError(f"{where}: offset {at!r} is not in the text")
    return len(units[: 2 * at].decode("utf-16-le", errors="ignore"))


def _stars(q: QuestionDecl) -> bool:
    """A rating Label Studio draws as stars: values 1..N."""
    return q.type == "rating" and q.values == list(range(1, len(q.values or ()) + 1))


def _alias(q: QuestionDecl, choice: Any) -> dict[str, str]:
    """A choice shown by its title records its raw value (Label Studio's ``alias``): pulled labels
    are the same whatever the titles say."""
    return {"alias": str(choice)} if q.word(choice) != str(choice) else {}


class DeclaredConfig(LSConfig):
    """Made for one declared kind (:meth:`bind`)."""

    kind: DeclaredKind

    def bind(self, kind: TaskKind) -> None:
        assert isinstance(kind, DeclaredKind)
        self.kind = kind
        self.questions = kind.declaration.questions
        self.controls = {q.name for q in self.questions} | (
            {"comment"} if kind.declaration.comment else set()
        )
        # the field the answers are about (a label question's ``field``; Label Studio keeps annotations
        # to it), else the first
        about = [q.field for q in self.questions if q.type == "label" and q.field]
        self.to_name = about[0] if about else kind.declaration.fields[0].name
        self.chat = {f.name for f in kind.declaration.fields if f.type == "chat"}

    def xml(self) -> str:
        body = ""
        for f in self.kind.declaration.fields:
            body += tag("Header", value=f.title or f.name.replace("_", " ").capitalize(), size="5")
            if f.type == "chat":
                body += tag(
                    "Paragraphs",
                    name=f.name,
                    value=f"${f.name}",
                    layout="dialogue",
                    nameKey="role",
                    textKey="content",
                )
            else:
                body += tag("Text", name=f.name, value=f"${f.name}")
        for q in self.questions:
            hint = f" (keys {' / '.join(sorted(q.keys))})" if q.keys else ""
            body += tag("Header", value=q.heading() + hint, size="5")
            required = "true" if q.required else "false"
            if q.type == "span":
                chat, labels = q.field in self.chat, "".join(tag("Label", value=x) for x in q.labels or ())
                extra = {} if chat else {"granularity": "word"}
                body += tag(
                    "ParagraphLabels" if chat else "Labels", labels, name=q.name, toName=q.field, **extra
                )
            elif q.type == "ranking":
                body += tag("List", name=q.name + LIST, value=f"${q.name}{LIST}", title=q.text())
                body += tag("Ranker", name=q.name, toName=q.name + LIST)
            elif _stars(q):
                body += tag(
                    "Rating",
                    name=q.name,
                    toName=self.to_name,
                    maxRating=str(len(q.choices())),
                    required=required,
                )
            elif q.type == "text":
                attrs = {"maxSubmissions": "1", "editable": "true", "rows": "3", "required": required}
                if q.max_length:
                    attrs["maxLength"] = str(q.max_length)
                body += tag("TextArea", name=q.name, toName=self.to_name, **attrs)
            else:
                keys = dict(zip(q.choices(), q.keys or (), strict=False))
                choices = "".join(
                    tag(
                        "Choice",
                        value=q.word(c),
                        **_alias(q, c),
                        **({"hotkey": keys[c]} if c in keys else {}),
                    )
                    for c in q.ordered()
                )
                mode = "multiple" if q.type == "multi_label" else "single-radio"
                body += tag(
                    "Choices",
                    choices,
                    name=q.name,
                    toName=self.to_name,
                    choice=mode,
                    showInline="true",
                    required=required,
                )
        return tag("View", body + (comment_xml(self.to_name) if self.kind.declaration.comment else ""))

    def data(self, task):
        out: dict[str, Any] = {}
        for f in self.kind.declaration.fields:
            value = task.payload.get(f.name)  # None: a field declared after the item was imported
            empty = [] if f.type == "chat" else ""
            out[f.name] = (
                "\n".join(f"• {line}" for line in value or []) if f.type == "list" else value or empty
            )
        for q in self.questions:
            if q.type == "ranking":
                fields = isinstance(q.values_from, list)  # the item's text fields: by title, in full
                titles = {f.name: f.title or f.name for f in self.kind.declaration.fields}
                out[q.name + LIST] = [
                    {"id": v, "title": titles[v], "body": str(task.payload.get(v) or "")}
                    if fields
                    else {"id": v, "title": v}
                    for v in q.choices(task.payload)
                ]
        return out

    def raw_values(self, results, task):
        grouped = by_control(results, self.controls)
        values: dict[str, Any] = {"comment": text(grouped, "comment")} if "comment" in self.controls else {}
        for q in self.questions:
            mine = grouped.get(q.name)
            if not mine:
                continue
            value = mine[-1].get("value") or {}
            if q.type == "span":
                values[q.name] = [self._span(q, r.get("value") or {}, task) for r in mine]
            elif q.type == "text":
                values[q.name] = text(grouped, q.name)
            elif q.type == "ranking":
                values[q.name] = (value.get("ranker") or {}).get(q.name)
            elif _stars(q):
                values[q.name] = value.get("rating")
            elif q.type == "multi_label":
                values[q.name] = value.get("choices") or []
            else:
                choice = one_choice(grouped, q.name, {str(c) for c in q.choices()})
                values[q.name] = int(choice) if q.type == "rating" and choice is not None else choice
        return values

    def _span(self, q: QuestionDecl, v: dict[str, Any], task) -> dict[str, Any]:
        """One Label Studio region as a span (offsets in code points); a region across turns, or with
        other than one label, is one :class:`LabelError`."""
        shown, where = task.payload.get(q.field or ""), f"{q.name}: region {v!r}"
        labels = v.get("paragraphlabels" if q.field in self.chat else "labels")
        if not isinstance(labels, list) or len(labels) != 1:
            raise LabelError(f"{where}: give each marked passage exactly one label")
        if q.field not in self.chat:
            a, b = (_code_points(shown, v.get(k), where) for k in ("start", "end"))
            return {"start": a, "end": b, "label": labels[0]}
        try:
            turn, end_turn = int(v["start"]), int(v["end"])
        except (KeyError, TypeError, ValueError):
            raise LabelError(f"{where}: no turn") from None
        if turn != end_turn or not 0 <= turn < len(shown):
            raise LabelError(f"{where}: mark words within one turn of {q.field}")
        text = shown[turn]["content"]
        a, b = (_code_points(text, v.get(k), where) for k in ("startOffset", "endOffset"))
        return {"turn": turn, "start": a, "end": b, "label": labels[0]}

    def _regions(self, q: QuestionDecl, spans: list[dict[str, Any]], task) -> list[dict[str, Any]]:
        chat, shown, out = q.field in self.chat, task.payload.get(q.field or ""), []
        kind = "paragraphlabels" if chat else "labels"
        for s in spans:
            text = shown[s["turn"]]["content"] if chat else shown
            a, b = _utf16(text, s["start"]), _utf16(text, s["end"])
            at = (
                {"start": s["turn"], "end": s["turn"], "startOffset": a, "endOffset": b}
                if chat
                else {"start": a, "end": b}
            )
            value = {**at, kind: [s["label"]], "text": text[s["start"] : s["end"]]}
            out.append({"from_name": q.name, "to_name": q.field, "type": kind, "value": value})
        return out

    def results(self, values, task):
        out = []
        for q in self.questions:
            value = values.get(q.name)
            if value is None:
                continue
            if q.type == "span":
                out += self._regions(q, value, task)
            elif q.type == "text":
                out.append(text_result(q.name, self.to_name, value))
            elif q.type == "ranking":
                out.append(
                    {
                        "from_name": q.name,
                        "to_name": q.name + LIST,
                        "type": "ranker",
                        "value": {"ranker": {q.name: list(value)}},
                    }
                )
            elif _stars(q):
                out.append(
                    {
                        "from_name": q.name,
                        "to_name": self.to_name,
                        "type": "rating",
                        "value": {"rating": value},
                    }
                )
            elif q.type == "multi_label":
                out.append(
                    {
                        "from_name": q.name,
                        "to_name": self.to_name,
                        "type": "choices",
                        "value": {"choices": list(value)},
                    }
                )
            else:  # a label, a rating of other values than 1..N
                out.append(choice_result(q.name, self.to_name, str(value)))
        if values.get("comment") and "comment" in self.controls:
            out.append(text_result("comment", self.to_name, values["comment"]))
        return out
