"""The task-kind interface and the registry.

The Streamlit app, the Label Studio bridge, label import, consensus and the agreement code all work
through :class:`TaskKind`, found by name in :data:`TASK_KIND_REGISTRY`: how tasks are built from
project content, what a label's values look like (a strict pydantic model), how a label splits into
agreement units, how decided units are assembled back into a final label, how it is scored against a
gold answer, which answers are known up front, and the default guidelines. Each kind is one module
(the built-in ones are in :mod:`prefkit.curation.annotation.kinds`) that subclasses :class:`TaskKind` and calls
:func:`register`; its app form and Label Studio config register against its name
(``prefkit.annotate_app.forms.register_form``, ``prefkit.annotate_app.labelstudio.config.register_ls``). See
docs/ARCHITECTURE.md, "How to add a task kind". This module knows no kind by name.
"""

from __future__ import annotations

import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from prefkit.schemas.common import PrefkitError, content_hash, utcnow, validation_line
from prefkit.schemas.curation import AnnotationTask
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from prefkit.curation.project import ProjectStore


class LabelError(PrefkitError, ValueError):
    """A label's values do not fit its task kind. The message names the field."""


@dataclass(frozen=True)
class FieldSpec:
    """One agreement field of a task kind."""

    name: str
    level: Literal["nominal", "ordinal", "interval", "ratio"]
    choices: tuple[str, ...] | None = None  # for ordinal fields: lowest rank first


class TaskKind(ABC):
    name: str
    title: str
    label_model: type[BaseModel]
    fields: tuple[FieldSpec, ...]

    def task_id(self, item_ref: str) -> str:
        return f"{self.name}_{content_hash(item_ref, 20)}"

    def make_task(self, item_ref: str, payload: dict[str, Any], overlap: int, batch: str) -> AnnotationTask:
        return AnnotationTask(
            task_id=self.task_id(item_ref),
            kind=self.name,
            item_ref=item_ref,
            payload=payload,
            batch=batch,
            overlap=overlap,
            created_at=utcnow(),
        )

    def field(self, name: str) -> FieldSpec:
        """The agreement field ``name`` (its level and choices)."""
        for spec in self.fields:
            if spec.name == name:
                return spec
        raise LabelError(f"task kind {self.name!r} has no field {name!r}")

    @abstractmethod
    def build_tasks(self, store: ProjectStore, overlap: int, batch: str) -> list[AnnotationTask]:
        """Tasks for every item of the project this kind applies to."""

    def validate(self, values: dict[str, Any], task: AnnotationTask) -> dict[str, Any]:
        """Normalized values, or :class:`LabelError` naming the field that is wrong."""
        try:
            model = self.label_model.model_validate(values)
        except ValidationError as exc:
            raise LabelError(validation_line(exc, root="<values>")) from exc
        self.check_against_task(model, task)
        return model.model_dump(mode="json", exclude_none=True)

    def check_against_task(self, model: Any, task: AnnotationTask) -> None:  # noqa: B027 - optional hook
        """Checks that need the task's payload (item counts, turn indexes)."""

    @abstractmethod
    def units(self, values: dict[str, Any]) -> dict[tuple[str, str], Any]:
        """Split a label into agreement units: ``{(sub_unit, field): value}``."""

    @abstractmethod
    def assemble(
        self, units: dict[tuple[str, str], Any], labels: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        """The final values from the decided units (``{unit: value}``) and the labels they came from."""

    def agreeing(self, labels: dict[str, dict[str, Any]], unit: tuple[str, str], value: Any) -> list[dict]:
        """The labels (in annotator order) whose value for ``unit`` is the decided ``value``."""
        return [labels[a] for a in sorted(labels) if self.units(labels[a]).get(unit) == value]

    def known_answers(self, store: ProjectStore) -> dict[str, dict[str, Any]]:
        """Answers known when tasks are built (``{item_ref: values}``): those tasks become gold items."""
        return {}

    def iter_tasks(self, store: ProjectStore, overlap: int, batch: str) -> Iterator[AnnotationTask]:
        """Every task of this kind, each built once, a gold item's answer (``known_answers``)
        validated and set, handed on as it is built (a Label Studio push imports the first tasks while
        the rest are built). A kind that reads its items and answers in one pass overrides this."""
        known = self.known_answers(store)
        for task in self.build_tasks(store, overlap, batch):
            if task.item_ref in known:
                task.is_gold, task.gold_answer = True, self.validate(known[task.item_ref], task)
            yield task

    def default_guidelines(self) -> str:
        """The guidelines a new project starts with (``guidelines/<kind>.md``): by default the ``.md``
        file beside the kind's module with the module's name (``kinds/memory_verify.md``)."""
        path = Path(sys.modules[type(self).__module__].__file__ or "").with_suffix(".md")
        return path.read_text(encoding="utf-8") if path.is_file() else f"# {self.title}\n"

    def gold_score(self, values: dict[str, Any], gold: dict[str, Any]) -> float:
        """Share of the gold answer's units this label gets right (0..1)."""
        want, got = self.units(gold), self.units(values)
        if not want:
            return 1.0
        return sum(got.get(k) == v for k, v in want.items()) / len(want)

    def superseded(self, store: ProjectStore) -> set[str]:
        """Ids of tasks a newer task of this kind replaced (the label gates skip them)."""
        return set()

    def after_turn_rewrite(self, store: ProjectStore, task: AnnotationTask) -> None:  # noqa: B027 - optional hook
        """Called after an annotator rewrote a user turn of ``task``'s dialogue (the app's rewrite)."""


#: Every task kind by name, in registration order (the CLI's choices, the app's menus).
TASK_KIND_REGISTRY: dict[str, TaskKind] = {}


def register(kind: TaskKind) -> TaskKind:
    """Make ``kind`` known by its name to every part of prefkit; a name is registered once."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", kind.name or ""):
        raise LabelError(f"task kind name {kind.name!r}: use lower-case letters, digits and _")
    if kind.name in TASK_KIND_REGISTRY and type(TASK_KIND_REGISTRY[kind.name]) is not type(kind):
        raise LabelError(f"task kind {kind.name!r} is already registered")
    TASK_KIND_REGISTRY[kind.name] = kind
    return kind


def kind_names() -> tuple[str, ...]:
    return tuple(TASK_KIND_REGISTRY)


def get_kind(name: str) -> TaskKind:
    """The registered kind ``name``; an unknown name is one :class:`LabelError` listing the known ones."""
    try:
        return TASK_KIND_REGISTRY[name]
    except (KeyError, TypeError):
        raise LabelError(
            f"unknown task kind {name!r}; expected one of {', '.join(TASK_KIND_REGISTRY)}"
        ) from None


# The built-in kinds register themselves (imported last: they build on the interface above).
import prefkit.curation.annotation.kinds  # noqa: E402, F401
