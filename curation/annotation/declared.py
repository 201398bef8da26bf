"""Task kinds a project declares in ``kinds/<name>.toml``: fields to show, questions to ask.

A declaration is read and checked here (:func:`read_declaration`: a bad one is one
:class:`DeclarationError` naming the file and the key) and becomes a :class:`DeclaredKind`, a
:class:`TaskKind` like any other: what a question *is* decides how its answer is validated, split into
agreement units (label nominal or ordinal, rating interval, multi_label one binary unit per label,
ranking the rank of each value, span one binary unit per word and label; text is not measured), decided
(majority, the lower median, the mean rank, the words most mark) and assembled back.
:func:`use_project_kinds` puts a project's declarations into the registry
(``TASK_KIND_REGISTRY``) beside the built-in and plugin kinds; with the store it also checks each
change of a declaration against what the store recorded under it (a change orphaning a recorded answer
leaves the kind out, its error naming the change and how many answers) and pins every accepted one. Items come from a file
(:func:`import_items`). This module never writes a label and knows no declared kind by name.
"""

from __future__ import annotations

import re
import tomllib
from bisect import bisect_right
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING, Any, Literal

import jinja2
import jinja2.meta
import regex
from prefkit.curation.annotation.evidence_spans import grapheme_bounds
from prefkit.curation.annotation.task_kinds import (
    TASK_KIND_REGISTRY,
    FieldSpec,
    KindPluginError,
    LabelError,
    TaskKind,
    load_reference,
)
from prefkit.schemas.common import Contract, InputError, RecordId, validation_line
from prefkit.schemas.config import KIND_CONFIGS, LABEL_CONFIGS, RELEASE_CONFIGS, RELEASE_TABLES, ROW_KEYS
from prefkit.schemas.reading import read_project_text
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    create_model,
    field_validator,
)

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

#: The folder of a project that holds its declarations.
KINDS_DIR = "kinds"
#: Keys of an item line that are not fields.
ITEM_KEYS = ("id", "gold", "meta")
#: Names no field or question takes: an item line's own keys and a release row's.
RESERVED_KEYS = tuple(dict.fromkeys([*ITEM_KEYS, *ROW_KEYS]))
#: The suffix of the release config of a declared kind's items not decided yet.
UNVERIFIED = "_unverified"
NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
Unit = tuple[str, str]
#: A word of a span question's field: letters and digits (whole characters), or any other one character.
WORD = r"(?:(?=\w)\X)+|(?=\S)\X"


class DeclarationError(KindPluginError):
    """A declaration in ``kinds/`` is not valid, or no longer fits the labels the store holds: one
    line naming the file and the key (or the question and how many labels it has)."""


class FieldDecl(Contract):
    name: str = Field(pattern=NAME_PATTERN, description="The item's key holding what is shown.")
    type: Literal["text", "chat", "list"] = Field(description="text, chat ({role, content} turns), list.")
    title: str | None = Field(default=None, description="What the annotator reads above it.")


class QuestionDecl(Contract):
    name: str = Field(pattern=NAME_PATTERN, description="The answer's key in a label's values.")
    type: Literal["label", "multi_label", "rating", "ranking", "text", "span"] = Field(
        description="The control."
    )
    title: str | None = Field(default=None, description="The question as the annotator reads it.")
    required: StrictBool = Field(default=True, description="Whether every label answers it.")
    labels: list[str] | None = Field(default=None, description="label, multi_label, span: the choices.")
    field: str | None = Field(default=None, description="span: the field it marks; label: what it is about.")
    ordinal: StrictBool | None = Field(default=None, description="label: the order of labels is a scale.")
    values: list[StrictInt] | list[str] | None = Field(
        default=None, description="rating: ascending integers; ranking: what is put in order."
    )
    values_from: list[str] | str | None = Field(
        default=None,
        description="ranking: the text fields put in order, or the list field whose strings are.",
    )
    max_length: StrictInt | None = Field(default=None, ge=1, description="text: the longest answer.")
    titles: dict[str, str] | None = Field(default=None, description="label: the words shown for a label.")
    keys: list[str] | None = Field(
        default=None, description="label, rating: the key of each choice, in order."
    )

    def text(self) -> str:
        return self.title or self.name.replace("_", " ").capitalize()

    def heading(self) -> str:
        """The question as drawn above its control: an optional one says so (once)."""
        said = self.required or "(optional)" in self.text().lower()
        return self.text() + ("" if said else " (optional)")

    def choices(self, payload: dict[str, Any] | None = None) -> list[Any]:
        """The choices; a ranking ``values_from`` one list field: that field's strings in ``payload``."""
        if isinstance(self.values_from, str):
            return list((payload or {}).get(self.values_from) or [])
        return list(self.labels or self.values or self.values_from or [])

    def ordered(self) -> list[Any]:
        """The choices in the order of their keys (as the guidelines list them)."""
        keys = dict(zip(self.choices(), self.keys or (), strict=False))
        return sorted(self.choices(), key=lambda c: keys.get(c, "")) if keys else self.choices()

    def word(self, choice: Any) -> str:
        """A choice as the annotator reads it (its title, else itself)."""
        return (self.titles or {}).get(str(choice), str(choice))


REFERENCE = r"^[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?$"


class Hooks(Contract):
    """What a declaration cannot say, named by import reference (``package.module:name``)."""

    items: str | None = Field(
        default=None, pattern=REFERENCE, description="items(store): (ref, payload) pairs."
    )
    gold: str | None = Field(default=None, pattern=REFERENCE, description="gold(store): {ref: known answer}.")
    suggestions: str | None = Field(default=None, pattern=REFERENCE, description="The kind's Suggester.")
    release: dict[str, str] = Field(
        default_factory=dict, description="The release configs the labels decide: {config: hook}."
    )


#: The metrics of each type of ``[evaluation] target`` (``metrics`` picks among them; default all).
EVAL_METRICS = {
    "label": ("accuracy", "macro_f1", "f1"),
    "multi_label": ("micro_f1", "macro_f1"),
    "rating": ("mae", "spearman"),
    "ranking": ("kendall_tau_b", "top1_accuracy"),
    "span": ("precision", "recall", "f1"),
    "text": ("mean_grade", "share"),  # judged: the grades on the rubric's scale
}


class EvaluationDecl(Contract):
    """How a model is measured on the kind's decided items (``prefkit eval run``)."""

    input: str = Field(min_length=1, description="A Jinja template over the item's fields: the prompt.")
    target: str = Field(description="The question the model answers; its decided answer is the reference.")
    messages: str | None = Field(default=None, description="A chat field passed as the conversation.")
    metrics: list[str] | None = Field(default=None, min_length=1, description="Default: by target type.")
    rubric: str | None = Field(default=None, description="text target: the judge's rubric, a project file.")
    scale: list[StrictInt] | list[str] | None = Field(default=None, description="text target: the grades.")


class KindDeclaration(Contract):
    name: str = Field(pattern=NAME_PATTERN, description="An identifier equal to the file's stem.")
    title: str = Field(min_length=1, description="The kind's name in menus.")
    guidelines: str | None = Field(default=None, description="Guidelines file, relative to the project.")
    fields: list[FieldDecl] = Field(min_length=1, description="What the annotator sees.")
    questions: list[QuestionDecl] = Field(min_length=1, description="What the annotator answers.")
    menu_order: StrictInt = Field(default=100, description="Where the kind comes in menus (lowest first).")
    flag_reasons: list[str] | None = Field(default=None, min_length=1, description="The app's flag menu.")
    comment: StrictBool = Field(default=False, description="Labels may carry a free-text comment.")
    hooks: Hooks = Field(default_factory=Hooks, description="Python hooks, by import reference.")
    evaluation: EvaluationDecl | None = Field(default=None, description="How a model is scored on it.")
    summary: str | None = Field(
        default=None, description="The text field naming an item (default: the first text field)."
    )

    def summary_field(self) -> str | None:
        """The text field that names an item beside its id (``summary``, else the first text field)."""
        return self.summary or next((f.name for f in self.fields if f.type == "text"), None)


#: Keys each question type takes beyond name, type, title and required.
TYPE_KEYS = {
    "label": {"labels", "ordinal", "titles", "keys", "field"},
    "multi_label": {"labels"},
    "rating": {"values", "keys"},
    "ranking": {"values", "values_from"},
    "text": {"max_length"},
    "span": {"labels", "field"},
}


def reserved_names() -> set[str]:
    """Names no declared kind takes: every release config's, table's and view's, every installed kind's."""
    return (
        {c.rstrip("*").rstrip("_") for c in RELEASE_CONFIGS}
        | set(LABEL_CONFIGS)
        | set(RELEASE_TABLES)
        | TASK_KIND_REGISTRY.installed()
    )


def _is_name(name: str) -> bool:
    return len(name) <= 64 and re.fullmatch(NAME_PATTERN, name) is not None


def _name_problem(name: str) -> str | None:
    if not _is_name(name):
        return f"{name[:80]!r}: use at most 64 lower-case letters, digits and _, starting with a letter"
    if name in reserved_names() or name.startswith("alpsbench_") or name.endswith(KIND_CONFIGS[1:]):
        return f"{name!r} is reserved (a built-in or installed kind's, or a release config's name)"
    return None


def _check(decl: KindDeclaration, stem: str, own: bool = False) -> tuple[str, str] | None:
    """The first ``(key, problem)`` of a parsed declaration, else None (``own``: one of prefkit's)."""
    if decl.name != stem:
        return "name", f"{decl.name!r} is not the file's stem {stem!r}"
    problem = None if own else _name_problem(decl.name)
    if problem:
        return "name", problem
    seen: set[str] = set()
    named = [("fields", n, f.name) for n, f in enumerate(decl.fields, start=1)]
    named += [("questions", n, q.name) for n, q in enumerate(decl.questions, start=1)]
    for where, n, name in named:
        if name in seen or name in RESERVED_KEYS:
            return f"{where}[{n}].name", f"{name!r} is used twice or reserved ({', '.join(RESERVED_KEYS)})"
        seen.add(name)
    types = {f.name: f.type for f in decl.fields}
    if decl.summary is not None and types.get(decl.summary) != "text":
        return "summary", f"{decl.summary!r} is not a text field of the kind"
    for n, q in enumerate(decl.questions, start=1):
        key = f"questions[{n}]"
        if q.type == "ranking" and (q.values is None) == (q.values_from is None):
            return f"{key}.values", "a ranking takes values or values_from (one of them)"
        wrong = _values_from_problem(q.values_from, types)
        if wrong:
            return f"{key}.values_from", wrong
        given = {k for k in set().union(*TYPE_KEYS.values()) if getattr(q, k) is not None}
        for extra in sorted(given - TYPE_KEYS[q.type]):
            return f"{key}.{extra}", f"a {q.type} question takes no {extra}"
        if q.type == "span":
            shown = {f.name: f.type for f in decl.fields if f.type in ("text", "chat")}
            names = ", ".join(shown)
            if shown.get(q.field or "") is None:
                return f"{key}.field", f"a span question names a text or chat field of the kind ({names})"
            labels = q.labels or []
            if not labels or len(set(labels)) != len(labels) or any(not x or ":" in x for x in labels):
                return f"{key}.labels", "a span question needs at least one label, each distinct, without ':'"
            continue
        if q.field is not None and q.field not in {f.name for f in decl.fields}:
            return f"{key}.field", f"{q.field!r} is not a field of the kind"
        need = "labels" if q.type in ("label", "multi_label") else "values" if q.type != "text" else None
        need = "values_from" if q.values_from else need
        if need is not None and not isinstance(q.values_from, str):
            choices = q.choices()
            if len(choices) < 2 or len(set(choices)) != len(choices) or "" in choices:
                return f"{key}.{need}", f"a {q.type} question needs at least two distinct {need}"
            if q.type in ("label", "multi_label", "ranking") and any(":" in str(c) for c in choices):
                return f"{key}.{need}", "a choice cannot hold ':'"
        if q.type == "rating" and not (
            all(isinstance(v, int) for v in q.values or []) and q.values == sorted(q.values or [])
        ):
            return f"{key}.values", "a rating needs ascending integer values"
        if q.type == "ranking" and not all(isinstance(v, str) for v in q.values or []):
            return f"{key}.values", "a ranking's values are strings"
        if q.keys is not None and len(q.keys) != len(q.choices()):
            return f"{key}.keys", "give one key for each choice, in their order"
        if set(q.titles or ()) - {str(c) for c in q.choices()}:
            return f"{key}.titles", "a title names one of the labels"
    for config in decl.hooks.release:
        if config not in RELEASE_CONFIGS:
            return f"hooks.release.{config}", f"not a release config ({', '.join(RELEASE_CONFIGS)})"
    return _check_evaluation(decl)


def _check_evaluation(decl: KindDeclaration) -> tuple[str, str] | None:
    ev, fields = decl.evaluation, {f.name: f.type for f in decl.fields}
    if ev is None:
        return None
    q = next((q for q in decl.questions if q.name == ev.target), None)
    if q is None:
        return "evaluation.target", f"{ev.target!r} is not a question of the kind"
    if (q.type == "text") != bool(ev.rubric and ev.scale):
        return (
            "evaluation.rubric",
            "a text target is judged: give it (and no other target) a rubric and a scale",
        )
    scale = ev.scale or [0, 1]
    if (
        len(set(scale)) < max(2, len(scale))
        or "" in scale
        or (isinstance(scale[0], int) and scale != sorted(scale))
    ):
        return "evaluation.scale", "at least two grades: ascending integers, or distinct labels worst first"
    if ev.messages is not None and fields.get(ev.messages) != "chat":
        return "evaluation.messages", f"{ev.messages!r} is not a chat field of the kind"
    for m in ev.metrics or ():
        if m not in EVAL_METRICS[q.type]:
            return "evaluation.metrics", f"{m!r} is not a {q.type} metric ({', '.join(EVAL_METRICS[q.type])})"
    try:
        names = jinja2.meta.find_undeclared_variables(jinja2.Environment().parse(ev.input))
    except jinja2.TemplateSyntaxError as exc:
        return "evaluation.input", f"the template does not parse (line {exc.lineno}: {exc.message})"
    unknown = sorted(names - set(fields) - {"id", "meta"})
    if unknown:
        return "evaluation.input", f"{unknown[0]!r} is not a field of the kind ({', '.join(fields)})"
    return None


def _values_from_problem(source: list[str] | str | None, types: dict[str, Any]) -> str | None:
    """Why a ranking's ``values_from`` names no text fields (or one list field), or None."""
    names = [source] if isinstance(source, str) else source or []
    want = "list" if isinstance(source, str) else "text"
    for name in names:
        if types.get(name) != want:
            what = "one list field" if want == "list" else "text fields"
            return f"{name!r} is not a {want} field of the kind (values_from names {what})"
    return None


def read_declaration(path: Path, own: bool = False) -> KindDeclaration:
    """The checked declaration in ``path``; anything wrong is one :class:`DeclarationError` naming
    the file and the key (``own``: one of prefkit's, which takes its built-in name)."""
    where = _where(path, own)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise DeclarationError(f"{where}: {exc}") from None
    except RecursionError:
        raise DeclarationError(f"{where}: nested too deep to be a declaration") from None
    try:
        decl = KindDeclaration.model_validate(data)
    except ValidationError as exc:
        line = validation_line(exc, root="<file>")
        raise DeclarationError(f"{where}: key {_one_based(line)}") from None
    problem = _check(decl, path.stem, own)
    if problem:
        raise DeclarationError(f"{where}: key {problem[0]}: {problem[1]}")
    return decl


def _where(path: Path, own: bool) -> str:
    """How an error names a declaration: ``kinds/NAME.toml``, or prefkit's own file in the package."""
    return f"prefkit/curation/annotation/kinds/{path.name}" if own else f"{KINDS_DIR}/{path.name}"


def _one_based(line: str) -> str:
    """``questions.0.values`` as the file's reader counts: ``questions[1].values``."""
    head, sep, rest = line.partition(": ")
    parts = head.split(".")
    out: list[str] = []
    for part in parts:
        if part.isdigit() and out:
            out[-1] += f"[{int(part) + 1}]"
        else:
            out.append(part)
    return ".".join(out) + sep + rest


# -- the kind -------------------------------------------------------------------------------------------
class ChatTurn(Contract):
    role: str = Field(min_length=1, description="Who speaks (user, assistant, system).")
    content: str = Field(description="What they said.")
    session: str | None = Field(default=None, min_length=1, description="The session it opens (a title).")
    date: str | None = Field(default=None, description="When: ISO 8601 (2024-01-03, 2024-01-03T10:00).")

    @field_validator("date")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        try:
            value is None or datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO 8601 date (2024-01-03 or 2024-01-03T10:00)") from None
        return value


_FIELD_TYPES: dict[str, Any] = {"text": str, "chat": list[ChatTurn], "list": list[str]}


class DeclaredKind(TaskKind):
    """A task kind made from a :class:`KindDeclaration`. Its app form, Label Studio config and
    suggestions are the generic ones, made from its title, fields and questions."""

    app_form = "prefkit.annotate_app.forms.declared:DeclaredForm"
    labelstudio_config = "prefkit.annotate_app.labelstudio.declared:DeclaredConfig"
    suggestions = "prefkit.pipelines.suggestions.kinds:DECLARED"
    label_model = BaseModel  # answers are checked question by question (:meth:`validate`)

    def __init__(self, decl: KindDeclaration, root: Path, where: str | None = None):
        self.declaration, self.root = decl, root
        self.where = where or f"{KINDS_DIR}/{decl.name}.toml"
        self.name, self.title = decl.name, decl.title
        self.menu_order = decl.menu_order  # type: ignore[misc]
        self.flag_reasons = tuple(decl.flag_reasons or TaskKind.flag_reasons)
        self.suggestions = decl.hooks.suggestions or DeclaredKind.suggestions  # type: ignore[misc]
        self.release = decl.hooks.release
        self.questions = {q.name: q for q in decl.questions}
        specs: list[FieldSpec] = []
        for q in decl.questions:
            if q.type == "label":
                specs.append(FieldSpec(q.name, "ordinal" if q.ordinal else "nominal", tuple(q.labels or ())))
            elif q.type in ("multi_label", "span"):
                specs += [
                    FieldSpec(f"{q.name}:{label}", "nominal", ("no", "yes")) for label in q.labels or ()
                ]
            elif q.type in ("rating", "ranking"):
                specs.append(FieldSpec(q.name, "interval"))
        self.fields = tuple(specs)
        #: Questions agreement does not measure (free text), named in its report.
        self.unmeasured = tuple(q.name for q in decl.questions if q.type == "text")
        self.item_model = create_model(  # type: ignore[call-overload]
            f"{decl.name}_item",
            __config__=ConfigDict(extra="forbid"),
            id=(RecordId, ...),
            gold=(dict[str, Any] | None, None),
            meta=(dict[str, Any] | None, None),
            **{f.name: (_FIELD_TYPES[f.type], ...) for f in decl.fields},
        )

    def summary(self, payload: dict[str, Any]) -> str:
        name = self.declaration.summary_field()
        return str(payload.get(name) or "") if name else ""

    def hook(self, name: str) -> Any:
        """The hook ``hooks.<name>`` names (``release.<config>``: under ``hooks.release``), imported, or
        None; one that cannot be loaded is one :class:`DeclarationError` naming the file and the key."""
        hooks = self.declaration.hooks
        reference = hooks.release.get(name[8:]) if name.startswith("release.") else getattr(hooks, name)
        if not reference:
            return None
        try:
            return load_reference(reference)
        except Exception as exc:  # the hook's own module: any failure is the declaration's
            raise DeclarationError(
                f"{self.where}: key hooks.{name}: {reference!r} cannot be loaded: {type(exc).__name__}: {exc}"
            ) from None

    def release_hook(self, config: str) -> Any:
        return self.hook(f"release.{config}")

    def build_tasks(self, store, overlap, batch):
        items = self.hook("items")
        if items is None:
            raise LabelError(
                f"task kind {self.name!r} is declared in {self.where}: its items come from a "
                f"file (prefkit tasks import --kind {self.name} ITEMS.jsonl)"
            )
        return [self.make_task(ref, payload, overlap, batch) for ref, payload in items(store)]

    def iter_tasks(self, store, overlap, batch):
        """Tasks from ``hooks.items``, gold from ``hooks.gold``; without them nothing to build: every
        task of a declared kind is stored when its items are imported."""
        return super().iter_tasks(store, overlap, batch) if self.declaration.hooks.items else iter(())

    def known_answers(self, store):
        gold = self.hook("gold")
        return gold(store) if gold is not None else {}

    # -- answers --
    def validate(self, values: dict[str, Any], task) -> dict[str, Any]:
        return self.answers(values, task.payload if task is not None else {})

    def answers(self, values: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
        """``values`` checked question by question against the item ``payload`` (a span's words)."""
        if not isinstance(values, dict):
            raise LabelError("<values>: expected an object keyed by question")
        comment = values.get("comment") if self.declaration.comment else None
        for key in values:
            if key not in self.questions and not (key == "comment" and self.declaration.comment):
                raise LabelError(f"{key}: not a question of {self.name} ({', '.join(self.questions)})")
        if comment is not None and not isinstance(comment, str):
            raise LabelError("comment: expected a string")
        out: dict[str, Any] = {}
        for q in self.declaration.questions:
            value = values.get(q.name)
            if value is None or value == [] or (q.type == "text" and value == ""):
                if q.required:
                    raise LabelError(f"{q.name}: required ({q.text()})")
                continue
            out[q.name] = _answer(q, value, payload)
        return {**out, "comment": comment} if comment is not None else out

    def units(self, values: dict[str, Any]) -> dict[Unit, Any]:
        out: dict[Unit, Any] = {}
        for q in self.declaration.questions:
            value = values.get(q.name)
            if value is None or value == []:
                continue
            if q.type in ("label", "rating"):
                out[("", q.name)] = value
            elif q.type == "multi_label":
                out.update(
                    {("", f"{q.name}:{lab}"): "yes" if lab in value else "no" for lab in q.labels or ()}
                )
            elif q.type == "ranking":
                out.update({(str(v), q.name): rank for rank, v in enumerate(value, start=1)})
        return out

    def item_units(self, values: dict[str, Any], task) -> dict[Unit, Any]:
        """:meth:`units` and, with the item at hand, one unit per word of a span question's field (a
        chat's turn by turn) and label: ``yes`` when a span of that label covers any of its characters."""
        out = self.units(values)
        for q in self.declaration.questions:
            spans = values.get(q.name)
            if q.type != "span" or not spans or task is None:
                continue
            shown = task.payload.get(q.field or "")
            chat = isinstance(shown, list)
            for n, text in enumerate([t["content"] for t in shown] if chat else [shown or ""]):
                words = [m.span() for m in regex.finditer(WORD, text)]
                ends, marked = [b for _, b in words], set()
                for s in (s for s in spans if s.get("turn", 0) == n):  # the words from the first it reaches
                    w = bisect_right(ends, s["start"])
                    while w < len(words) and words[w][0] < s["end"]:
                        marked.add((w, s["label"]))
                        w += 1
                for w, (a, b) in enumerate(words):
                    for label in q.labels or ():
                        yes = (w, label) in marked
                        out[(f"{n if chat else ''}:{w}:{a}:{b}", f"{q.name}:{label}")] = (
                            "yes" if yes else "no"
                        )
        return out

    def rubric(self) -> str | None:
        """The text of ``[evaluation] rubric``: a UTF-8 file inside the project, else one error."""
        ev = self.declaration.evaluation
        try:
            text = read_project_text(self.root, ev.rubric) if ev and ev.rubric else None
        except InputError as exc:
            raise DeclarationError(f"{self.where}: key evaluation.rubric: {exc}") from None
        if ev and ev.rubric and text is None:
            raise DeclarationError(f"{self.where}: key evaluation.rubric: {ev.rubric}: no such file")
        return text

    def check_answer(self, name: str, value: Any, payload: dict[str, Any]) -> Any:
        """The answer ``value`` to question ``name`` as stored, or one :class:`LabelError` naming it."""
        q = self.questions[name]
        return _answer(q, value, payload)

    def question_of(self, field: str) -> QuestionDecl:
        return self.questions[field.split(":")[0]]

    def decide(self, votes: dict[Unit, list[Any]]) -> tuple[dict[Unit, Any], list[Unit]]:
        """Label and multi_label by majority, rating by the lower median, ranking by mean rank; a tie
        of a required question waits for adjudication, one of an optional question leaves it out."""
        by_question: dict[str, dict[Unit, list[Any]]] = defaultdict(dict)
        for unit, values in votes.items():
            by_question[self.question_of(unit[1]).name][unit] = values
        decided: dict[Unit, Any] = {}
        tied: list[Unit] = []
        for name, mine in by_question.items():
            q = self.questions[name]
            if q.type == "rating":
                got, open_ = {u: sorted(v)[(len(v) - 1) // 2] for u, v in mine.items()}, list[Unit]()
            elif q.type == "span":  # a word keeps a label when more than half of the answers mark it
                got, open_ = {u: "yes" if 2 * v.count("yes") > len(v) else "no" for u, v in mine.items()}, []
            elif q.type == "ranking":
                means = {u: mean(v) for u, v in mine.items()}
                even = len(set(means.values())) < len(means)
                order = sorted(means, key=lambda u: means[u])
                got, open_ = ({}, sorted(mine)) if even else ({u: n for n, u in enumerate(order, 1)}, [])
            else:
                got, open_ = super().decide(mine)
            decided.update(got)
            if q.required:
                tied += open_
        return decided, sorted(tied)

    def assemble(self, units: dict[Unit, Any], labels: dict[str, dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for q in self.declaration.questions:
            if q.type in ("label", "rating") and ("", q.name) in units:
                out[q.name] = units[("", q.name)]
            elif q.type == "multi_label" and any(("", f"{q.name}:{lab}") in units for lab in q.labels or ()):
                out[q.name] = [lab for lab in q.labels or () if units.get(("", f"{q.name}:{lab}")) == "yes"]
            elif q.type == "ranking":  # values_from a list field: the item's strings, all ranked
                ranks = {u: v for (u, name), v in units.items() if name == q.name}
                if ranks and len(ranks) == len(q.choices() if not isinstance(q.values_from, str) else ranks):
                    out[q.name] = sorted(ranks, key=lambda v: ranks[v])
            elif q.type == "span":
                mine = {u: v for u, v in units.items() if u[1].partition(":")[0] == q.name}
                out.update({q.name: _rebuilt(mine)} if mine else {})
        return out

    def default_guidelines(self) -> str:
        text = (
            read_project_text(self.root, self.declaration.guidelines) if self.declaration.guidelines else None
        )
        if text is not None:
            return text
        lines = [f"# Guidelines: {self.title}", "", "Read the item, then answer each question.", ""]
        for q in self.declaration.questions:
            titles = {f.name: f.title or f.name for f in self.declaration.fields}
            word = titles.get if isinstance(q.values_from, list) else q.word
            choices = ", ".join(str(word(c)) for c in q.choices())
            if isinstance(q.values_from, str):
                choices = f"the strings of {q.values_from}"
            how = {
                "label": f"pick one of {choices}",
                "multi_label": f"pick every one that applies of {choices}",
                "rating": f"rate on {choices}",
                "ranking": f"put {choices} in order, best first",
                "text": "write your answer",
                "span": f"mark the words of {q.field} that are {choices}, each with its label",
            }[q.type]
            lines.append(f"- **{q.heading()}** — {how}.")
        return "\n".join(lines) + "\n"

    def item(self, line: dict[str, Any], where: str) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
        """``(id, payload, gold answer)`` of one item line, or one :class:`LabelError` naming the key."""
        try:
            item = self.item_model.model_validate(line)
        except ValidationError as exc:
            raise LabelError(f"{where}: key {validation_line(exc)}") from None
        payload = {f.name: line[f.name] for f in self.declaration.fields}
        taken = next((k for k in item.meta or {} if k in payload or k in self.questions), None)
        if taken is not None:
            raise LabelError(f"{where}: key meta.{taken}: a field or question of {self.name} has this name")
        if item.meta:
            payload["meta"] = item.meta
        gold = None
        if item.gold is not None:
            try:
                gold = self.answers(item.gold, payload)
            except LabelError as exc:
                raise LabelError(f"{where}: key gold.{exc}") from None
        return item.id, payload, gold


def _spans(q: QuestionDecl, value: Any, shown: Any) -> list[dict[str, Any]]:
    """A span answer as stored (sorted, each span once), or one :class:`LabelError` naming the question:
    character offsets (code points) on whole characters of a text field, or of a chat field's turn."""
    chat = isinstance(shown, list)
    keys = ["turn", "start", "end", "label"] if chat else ["start", "end", "label"]
    if not isinstance(value, list):
        raise LabelError(f"{q.name}: expected a list of spans {{{', '.join(keys)}}}")
    out: dict[tuple, dict[str, Any]] = {}
    for n, span in enumerate(value):
        where = f"{q.name}.{n}"
        if not isinstance(span, dict) or sorted(span) != sorted(keys):
            raise LabelError(f"{where}: a span is {{{', '.join(keys)}}}, got {span!r}")
        if any(type(span[k]) is not int for k in keys if k != "label"):
            raise LabelError(f"{where}: turn, start and end are integers")
        if span["label"] not in (q.labels or ()):
            raise LabelError(f"{where}: {span['label']!r} is not one of {', '.join(q.labels or ())}")
        if chat and not 0 <= span["turn"] < len(shown):
            raise LabelError(f"{where}: {q.field} has no turn {span['turn']}")
        text = shown[span["turn"]]["content"] if chat else shown
        if not isinstance(text, str) or not 0 <= span["start"] < span["end"] <= len(text):
            raise LabelError(f"{where}: characters {span['start']}-{span['end']} are not in {q.field}")
        bounds = grapheme_bounds(text)
        if span["start"] not in bounds or span["end"] not in bounds:
            raise LabelError(
                f"{where}: characters {span['start']}-{span['end']} split a character (a letter from its "
                "accent, or an emoji from its modifier): mark it whole"
            )
        out[tuple(span[k] for k in keys)] = {k: span[k] for k in keys}
    return [out[k] for k in sorted(out)]


def _rebuilt(units: dict[Unit, Any]) -> list[dict[str, Any]]:
    """The spans of the words kept (``yes``): consecutive words of one label (and turn) are one span."""
    kept = sorted(
        (turn, label, int(w), int(a), int(b))
        for (sub, field), value in units.items()
        if value == "yes"
        for turn, w, a, b in [sub.split(":")]
        for label in [field.partition(":")[2]]
    )
    spans: list[dict[str, Any]] = []
    last: tuple | None = None
    for turn, label, w, a, b in kept:
        if last == (turn, label, w - 1):
            spans[-1]["end"] = b
        else:
            spans.append({**({"turn": int(turn)} if turn else {}), "start": a, "end": b, "label": label})
        last = (turn, label, w)
    return sorted(spans, key=lambda s: (s.get("turn", 0), s["start"], s["label"]))


def _answer(q: QuestionDecl, value: Any, payload: dict[str, Any]) -> Any:
    """The answer ``value`` to ``q`` as stored (a span's checked against its field in the item
    ``payload``), or one :class:`LabelError` naming the question."""
    if q.type == "span":
        return _spans(q, value, payload.get(q.field or ""))
    choices = q.choices(payload)
    shown = ", ".join(map(str, choices))
    if q.type == "text":
        if not isinstance(value, str):
            raise LabelError(f"{q.name}: expected a string")
        if q.max_length is not None and len(value) > q.max_length:
            raise LabelError(f"{q.name}: at most {q.max_length} characters (this one has {len(value)})")
        return value
    if q.type in ("label", "rating"):
        kind = str if q.type == "label" else int
        if type(value) is not kind or value not in choices:
            raise LabelError(f"{q.name}: {value!r} is not one of {shown}")
        return value
    if not isinstance(value, list) or any(type(v) is not str or v not in choices for v in value):
        raise LabelError(f"{q.name}: expected a list of {shown}")
    if len(set(value)) != len(value):
        raise LabelError(f"{q.name}: a choice is given twice")
    if q.type == "ranking" and len(value) != len(choices):
        raise LabelError(f"{q.name}: put every one of {shown} in order, best first")
    return value if q.type == "ranking" else [c for c in choices if c in value]


# -- a project's kinds ----------------------------------------------------------------------------------
def own_kind(module_file: str) -> DeclaredKind:
    """One of prefkit's own declared kinds: ``kinds/<name>.toml`` beside its hooks, ``kinds/<name>.py``."""
    path = Path(module_file).with_suffix(".toml")
    return DeclaredKind(read_declaration(path, own=True), path.parent, _where(path, own=True))


def declaration_files(root: Path) -> tuple[list[Path], list[str]]:
    """The declarations in ``kinds/`` (regular ``*.toml`` files named as a kind is), and one line for
    each other entry left out: a folder, a dangling link (an editor's lock file), a FIFO, a bad name."""
    folder, files, skipped = Path(root) / KINDS_DIR, [], []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        why = (
            "not a .toml file"
            if path.suffix != ".toml"
            else "not a regular file"
            if not path.is_file()
            else "not a kind's name (at most 64 lower-case letters, digits and _)"
            if not _is_name(path.stem)
            else None
        )
        if why:
            skipped.append(f"{KINDS_DIR}/{path.name}: skipped: {why}")
        else:
            files.append(path)
    return files, skipped


def read_project_kinds(root: Path) -> tuple[dict[str, DeclaredKind], dict[str, DeclarationError]]:
    """Every declaration of the project at ``root``: the kinds, and the error of each bad file (by
    its stem)."""
    kinds: dict[str, DeclaredKind] = {}
    errors: dict[str, DeclarationError] = {}
    for path in declaration_files(root)[0]:
        try:
            kind = DeclaredKind(read_declaration(path), Path(root))
            hooks = kind.declaration.hooks
            for name in ["items", "gold", *(f"release.{c}" for c in hooks.release)]:
                kind.hook(name)  # a hook that cannot be loaded is the declaration's error, said now
            try:
                kind.default_guidelines()
            except InputError as exc:
                raise DeclarationError(f"{kind.where}: key guidelines: {exc}") from None
            kind.rubric()
            kinds[path.stem] = kind
        except DeclarationError as exc:
            errors[path.stem] = exc
    return kinds, errors


def use_project_kinds(root: Path, store: ProjectStore | None = None) -> dict[str, DeclarationError]:
    """Make the project's declared kinds the registry's (replacing another project's) and return the
    errors of those left out. With ``store``: a kind whose declaration is not the one the store pinned
    with its first item or label is checked against what was recorded under it (:func:`orphaned`) and
    left out, or pinned in its place; the store pins the current one with a first item or label."""
    kinds, errors = read_project_kinds(root)
    if store is not None:
        pinned = store.labels.kind_declarations()
        for name, kind in list(kinds.items()):
            now = kind.declaration.model_dump(mode="json")
            if pinned.get(name, now) != now or name not in pinned and store.count("tasks", kind=name):
                problem = orphaned(kind, pinned.get(name), store)
                if problem:
                    errors[name] = DeclarationError(f"{KINDS_DIR}/{name}.toml: {problem}")
                    del kinds[name]
                else:
                    store.labels.repin(name, pinned.get(name), now)
        store.labels.pin_when_recorded = {n: k.declaration.model_dump(mode="json") for n, k in kinds.items()}
    TASK_KIND_REGISTRY.declare(list(kinds.values()), dict(errors))
    return errors


def orphaned(kind: DeclaredKind, pinned: dict[str, Any] | None, store: ProjectStore) -> str | None:
    """Why the declaration of ``kind`` cannot replace ``pinned``, or None: a field retyped under items,
    or a label, repeat, adjudication or gold answer recorded that it no longer takes (a question removed, new
    and required, or with other choices, a ``max_length`` below an answer)."""
    tasks = {t.task_id: t for t in store.labels.tasks(kind=kind.name)}
    was = {f["name"]: f["type"] for f in (pinned or {}).get("fields", [])}
    for f in kind.declaration.fields:
        if was.get(f.name, f.type) != f.type and tasks:
            return f"field {f.name!r} is retyped ({was[f.name]} -> {f.type}) but {len(tasks)} items hold it"
    events = store.labels.effective_events(kind.name)
    recorded = [("label", e.task_id, e.values) for e in events if e.action == "label"]
    recorded += [("repeat", e.task_id, e.values) for e in store.repeats.events(kind=kind.name)]
    recorded += [
        ("adjudication", a.task_id, a.values) for a in store.labels.adjudications() if a.task_id in tasks
    ]
    recorded += [("gold answer", t, task.gold_answer) for t, task in tasks.items() if task.gold_answer]
    lost: dict[str, list[str]] = defaultdict(list)
    for what, task_id, values in recorded:
        task = tasks.get(task_id)
        try:
            kind.answers(values, task.payload if task else {})
        except LabelError as exc:
            lost[what].append(str(exc))
    if not lost:
        return None
    counts = ", ".join(f"{len(v)} {w}{'s' if len(v) > 1 else ''}" for w, v in lost.items())
    first = next(iter(lost.values()))[0]
    return f"the change orphans {counts} of {kind.name} ({first}): answers are never reinterpreted"


EXAMPLE = """# A task kind of this project: prefkit builds the app's form, the Label Studio config, agreement,
# decisions and the release configs {name} and {name}_unverified from it. Check it with
# `prefkit kinds check`; add items with `prefkit tasks import --kind {name} items.jsonl`.
name = "{name}"  # equal to the file's name
title = "Does the response follow the user's preferences?"
# guidelines = "guidelines/{name}.md"  # optional: else guidelines are made from the questions

[[fields]]                            # what the annotator sees, read from each item line
name = "history"
type = "chat"                         # text | chat (a list of {{role, content}}) | list (of strings)
title = "The conversation so far"

[[fields]]
name = "preferences"
type = "list"
title = "What the user prefers"

[[fields]]
name = "response"
type = "text"
title = "The model's response"

[[questions]]
name = "follows"
type = "rating"                       # label | multi_label | rating | ranking | text | span
values = [1, 2, 3, 4, 5]              # ascending integers: digits 1-9 choose them in the app
title = "How well does the response follow the user's preferences?"

[[questions]]
name = "problems"
type = "multi_label"
labels = ["ignores a preference", "contradicts a preference", "does not answer the request"]
title = "What is wrong with it?"
required = false                      # default true

[[questions]]
name = "note"
type = "text"                         # not measured by agreement, never decided
max_length = 500
required = false
"""


def describe_kinds(root: Path, store: ProjectStore | None = None) -> tuple[list[dict[str, str]], list[str]]:
    """Every kind the project can use (``prefkit kinds list``): its name, title, where it comes from,
    its fields and questions (a Python kind's agreement fields); and the one-line error of every
    declaration left out."""
    errors = use_project_kinds(root, store)
    rows = []
    for name in TASK_KIND_REGISTRY:
        kind = TASK_KIND_REGISTRY[name]
        if isinstance(kind, DeclaredKind):
            fields = ", ".join(f"{f.name} ({f.type})" for f in kind.declaration.fields)
            questions = ", ".join(f"{q.name} ({q.type})" for q in kind.declaration.questions)
        else:
            fields, questions = "-", ", ".join(f"{f.name} ({f.level})" for f in kind.fields)
        source = TASK_KIND_REGISTRY.source(name)
        rows.append(
            {"kind": name, "title": kind.title, "from": source, "fields": fields, "questions": questions}
        )
    return rows, [str(e) for _, e in sorted(errors.items())]


def new_declaration(root: Path, name: str) -> Path:
    """Write a commented example declaration ``kinds/<name>.toml`` (``prefkit kinds new``); refused
    when the file exists or the name is not an identifier or is reserved."""
    problem = _name_problem(name)
    if problem:
        raise DeclarationError(f"{KINDS_DIR}: {problem}")
    path = Path(root) / KINDS_DIR / f"{name}.toml"
    if path.exists() or path.is_symlink():
        raise DeclarationError(f"{KINDS_DIR}/{path.name} exists already; edit it, or choose another name")
    path.parent.mkdir(exist_ok=True)
    path.write_text(EXAMPLE.format(name=name), encoding="utf-8")
    return path
