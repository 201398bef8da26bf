"""The task-kind interface and the registry.

The Streamlit app, the Label Studio bridge, label import, consensus and the agreement code all work
through :class:`TaskKind`, found by name in :data:`TASK_KIND_REGISTRY`: how tasks are built from
project content, what a label's values look like (a strict pydantic model), how a label splits into
agreement units, how decided units are assembled back into a final label, how it is scored against a
gold answer, which answers are known up front, and the default guidelines. Each kind is one module
(the built-in ones are in :mod:`prefkit.curation.annotation.kinds`) that subclasses :class:`TaskKind`
and names its app form, Label Studio config and suggestions (``app_form``, ``labelstudio_config``,
``suggestions``). Every kind,
prefkit's own included, is declared by its distribution as an entry point in the group
``prefkit.task_kinds`` (prefkit's in its pyproject.toml) and loaded from there (:class:`KindRegistry`);
:func:`register` adds one in-process. See docs/ARCHITECTURE.md, "How to add a task kind".
This module knows no kind by name and imports none.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from prefkit.schemas.common import PrefkitError, canonical_json, content_hash, utcnow, validation_line
from prefkit.schemas.curation import AnnotationTask
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

#: The entry point group in which every distribution, prefkit itself included, declares its task kinds.
ENTRY_POINT_GROUP = "prefkit.task_kinds"
#: The distribution whose kinds are the built-in ones (declared in prefkit's pyproject.toml).
OWN_DISTRIBUTION = "prefkit"
log = logging.getLogger("prefkit.plugins")


class LabelError(PrefkitError, ValueError):
    """A label's values do not fit its task kind. The message names the field."""


@dataclass(frozen=True)
class Contradiction:
    """A part of a label that contradicts another part of it (*Not expressed* with evidence turns):
    ``unit`` says where (``item1``, ``added0``: the form draws the message there) and ``message``
    what is wrong and how to fix it, in words an annotator reads."""

    unit: str
    message: str


class ContradictoryLabel(LabelError):
    """A label that contradicts itself (:meth:`TaskKind.contradictions`): refused, nothing written."""

    def __init__(self, found: list[Contradiction]):
        self.found = tuple(found)
        super().__init__(" ".join(c.message for c in self.found))


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
    #: The kind's app form and Label Studio config: import references (``"package.module"`` or
    #: ``"package.module:name"``) the app and the Label Studio bridge import when they first need them,
    #: so the kind's own module needs neither Streamlit nor the bridge (built-in and plugin kinds alike).
    app_form: ClassVar[str | None] = None
    labelstudio_config: ClassVar[str | None] = None
    #: The kind's suggestions (``prefkit suggest``): an import reference to its suggester, found the same way.
    suggestions: ClassVar[str | None] = None
    #: The release configs the kind's final labels decide, each with the hook (an import reference,
    #: or "" for none) that config's builder calls: ``{"matching": "package.module:name"}``.
    release: Mapping[str, str] = {}
    #: Where the kind comes in the CLI's ``--kind`` choices, the app's menus and the per-kind reports:
    #: lowest first, ties by distribution and name (the built-in kinds take 10, 20, ...).
    menu_order: ClassVar[int] = 100
    #: What an annotator can report as broken about an item of this kind (the app's flag menu).
    flag_reasons: tuple[str, ...] = ("empty or truncated item", "wrong language", "other")

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

    def contradictions(self, values: dict[str, Any], task: AnnotationTask) -> list[Contradiction]:
        """Parts of valid ``values`` (as :meth:`validate` returns them) that contradict each other.
        An annotator's submit or edit with any is refused (``workflow.submit``, ``workflow.edit_label``)
        so they fix it before saving; imports and Label Studio pulls record what people decided there."""
        return []

    @abstractmethod
    def units(self, values: dict[str, Any]) -> dict[tuple[str, str], Any]:
        """Split a label into agreement units: ``{(sub_unit, field): value}``."""

    def item_units(self, values: dict[str, Any], task: AnnotationTask | None) -> dict[tuple[str, str], Any]:
        """:meth:`units` with the item at hand: a kind whose units need its content (a declared kind's
        span questions, one unit per word) overrides this; agreement and decisions call it."""
        return self.units(values)

    @abstractmethod
    def assemble(
        self, units: dict[tuple[str, str], Any], labels: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        """The final values from the decided units (``{unit: value}``) and the labels they came from."""

    def decide(self, votes: dict[tuple[str, str], list[Any]]) -> tuple[dict, list]:
        """``(decided units, tied units)`` from every label's value of each unit: by majority, a unit
        whose most frequent value is tied left undecided (consensus and adjudication call this)."""
        decided: dict[tuple[str, str], Any] = {}
        tied: list[tuple[str, str]] = []
        for unit in sorted(votes):
            counts = Counter(canonical_json(v) for v in votes[unit])
            (top, n), *rest = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            if rest and rest[0][1] == n:
                tied.append(unit)
            else:
                decided[unit] = json.loads(top)
        return decided, tied

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

    def gold_score(
        self, values: dict[str, Any], gold: dict[str, Any], task: AnnotationTask | None = None
    ) -> float:
        """Share of the gold answer's units this label of ``task`` gets right (0..1)."""
        want, got = self.item_units(gold, task), self.item_units(values, task)
        if not want:
            return 1.0
        return sum(got.get(k) == v for k, v in want.items()) / len(want)

    def summary(self, payload: dict[str, Any]) -> str:
        """The item's own words that name it beside its id in lists and reports ('': its id alone)."""
        return ""

    def superseded(self, store: ProjectStore) -> set[str]:
        """Ids of tasks a newer task of this kind replaced (the label gates skip them)."""
        return set()

    def after_turn_rewrite(self, store: ProjectStore, task: AnnotationTask) -> None:  # noqa: B027 - optional hook
        """Called after an annotator rewrote a user turn of ``task``'s dialogue (the app's rewrite)."""

    def release_hook(self, config: str) -> Any:
        """The hook release config ``config``'s builder calls (:attr:`release`), or None."""
        reference = self.release.get(config)
        return load_reference(reference) if reference else None


class KindPluginError(LabelError):
    """A task kind an installed distribution declares cannot be loaded; the message names the
    distribution, its entry point and what went wrong."""


@dataclass(frozen=True)
class KindOrigin:
    """Where a plugin kind comes from: the distribution and its entry point."""

    distribution: str
    version: str
    entry_point: str  # ``name = value`` as declared

    def __str__(self) -> str:
        return f"distribution {self.distribution} {self.version} (entry point {self.entry_point})"


class KindRegistry(MutableMapping[str, TaskKind]):
    """Every task kind by name, loaded on first use from the entry point group ``prefkit.task_kinds``:
    the built-in ones (prefkit's own entry points, declared in its pyproject.toml) and those of other
    installed distributions, in ``TaskKind.menu_order`` (then by distribution and name: the CLI's
    choices and the app's menus), then any registered in-process. Built-in and plugin kinds load the
    same way, by the module the entry point names (they import this module to subclass
    :class:`TaskKind`, so it imports none of them). A built-in kind that fails to load is prefkit's
    bug and raises; a plugin that fails is left out, logged once and remembered: asking for its kind
    is one :class:`KindPluginError` naming its distribution, and every other kind keeps working."""

    def __init__(self) -> None:
        self._kinds: dict[str, TaskKind] = {}
        self._origins: dict[str, KindOrigin] = {}
        self._built_in: list[str] = []
        self._broken: dict[str, KindPluginError] = {}
        self._declared: set[str] = set()  # a project's kinds/*.toml, good or bad (declare)
        self._loaded = self._loading = False
        self._lock = threading.RLock()  # the app's sessions are threads: one loads, the others wait

    # -- loading ------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:  # loaded meanwhile, or a kind module asking while loading
                return
            self._loading = True
            try:
                declared = entry_points(group=ENTRY_POINT_GROUP)
                own = [ep for ep in declared if _distribution(ep) == OWN_DISTRIBUTION]
                if not own:
                    log.warning(
                        "prefkit: its own task kinds are missing from its installed metadata (entry point "
                        "group %s): reinstall prefkit (make setup, or pip install -e .)",
                        ENTRY_POINT_GROUP,
                    )
                for ep in sorted(own, key=_entry_point_order):
                    register(_entry_point_kind(ep))
                    self._built_in.append(ep.name)
                others = [ep for ep in declared if _distribution(ep) != OWN_DISTRIBUTION]
                for ep in sorted(others, key=_entry_point_order):
                    self._load_plugin(ep)
                declared_kinds = [n for n in [*self._built_in, *self._origins] if n in self._kinds]
                order = sorted(declared_kinds, key=lambda n: (self._kinds[n].menu_order, self._dist_of(n), n))
                order += [n for n in self._kinds if n not in order]
                self._kinds = {n: self._kinds[n] for n in order}
            finally:
                self._loaded, self._loading = True, False

    def _dist_of(self, name: str) -> str:
        origin = self._origins.get(name)
        return origin.distribution if origin else OWN_DISTRIBUTION

    def _load_plugin(self, ep: EntryPoint) -> None:
        dist = ep.dist
        origin = KindOrigin(
            dist.name if dist else "?", dist.version if dist else "?", f"{ep.name} = {ep.value}"
        )
        try:
            if ep.name in self._built_in or ep.name in self._origins:
                owner = "is built in" if ep.name in self._built_in else f"comes from {self._origins[ep.name]}"
                raise LabelError(f"task kind {ep.name!r} {owner}")
            register(_entry_point_kind(ep))
            self._origins[ep.name] = origin
        except Exception as exc:  # a plugin's own code can fail in any way: it must not stop prefkit
            error = KindPluginError(
                f"task kind {ep.name!r} from {origin} cannot be loaded: {type(exc).__name__}: {exc}"
            )
            if ep.name not in self._built_in and ep.name not in self._origins:
                self._kinds.pop(ep.name, None)  # a kind its own module registered before failing
            self._broken.setdefault(ep.name, error)
            log.warning("prefkit: %s", error)

    # -- the mapping --------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> TaskKind:
        self._load()
        return self._kinds[name]

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(list(self._kinds))

    def __len__(self) -> int:
        self._load()
        return len(self._kinds)

    def __setitem__(self, name: str, kind: TaskKind) -> None:
        if name != kind.name:
            raise LabelError(f"task kind {kind.name!r} registered under another name, {name!r}")
        self.add(kind)

    def add(self, kind: TaskKind) -> None:
        """Add ``kind`` (no loading: the registry adds the kinds it loads through this)."""
        if kind.name in self._kinds and type(self._kinds[kind.name]) is not type(kind):
            raise LabelError(f"task kind {kind.name!r} is already registered")
        self._kinds[kind.name] = kind

    def declare(self, kinds: list[TaskKind], errors: Mapping[str, KindPluginError]) -> None:
        """Make ``kinds`` (and the ``errors`` of declarations left out) the declared kinds, replacing
        those of the project declared before (declared kinds belong to their project)."""
        self._load()
        with self._lock:  # each mapping replaced whole: the app's other threads read without the lock
            kept = {n: k for n, k in self._kinds.items() if n not in self._declared}
            broken = {n: e for n, e in self._broken.items() if n not in self._declared}
            errors = {n: e for n, e in errors.items() if n not in kept and n not in broken}
            self._declared = {k.name for k in kinds} | set(errors)
            self._kinds = kept | {k.name: k for k in kinds}
            self._broken = broken | dict(errors)

    def installed(self) -> set[str]:
        """Every kind name that is not a project's declaration: built-in, plugin (even broken), in-process."""
        self._load()
        return (set(self._kinds) | set(self._broken)) - self._declared

    def source(self, name: str) -> str:
        """Where ``name`` comes from, in words (``kinds list``)."""
        self._load()
        if name in self._declared:
            return f"kinds/{name}.toml"
        if name in self._built_in:
            return "built in"
        origin = self._origins.get(name)
        return str(origin) if origin else "registered in-process"

    def __delitem__(self, name: str) -> None:
        del self._kinds[name]
        self._origins.pop(name, None)

    def origin(self, name: str) -> KindOrigin | None:
        """The distribution a plugin kind came from (None for a built-in or in-process kind)."""
        self._load()
        return self._origins.get(name)

    def built_in(self) -> tuple[str, ...]:
        """The names of prefkit's own kinds (its entry points), by name."""
        self._load()
        return tuple(self._built_in)

    def broken(self) -> dict[str, KindPluginError]:
        """The plugin kinds that failed to load, by the name their entry point declares."""
        self._load()
        return dict(self._broken)


def _distribution(ep: EntryPoint) -> str:
    return ep.dist.name if ep.dist else ""


def _entry_point_order(ep: EntryPoint) -> tuple[str, str]:
    return (_distribution(ep), ep.name)


def _entry_point_kind(ep: EntryPoint) -> TaskKind:
    """The kind an entry point names (a :class:`TaskKind` subclass or instance), checked against its name."""
    loaded = ep.load()
    kind = loaded() if isinstance(loaded, type) and issubclass(loaded, TaskKind) else loaded
    if not isinstance(kind, TaskKind):
        raise LabelError(f"{ep.value} is {type(kind).__name__}, not a TaskKind subclass or instance")
    if kind.name != ep.name:
        raise LabelError(f"the entry point is named {ep.name!r} but the kind's name is {kind.name!r}")
    return kind


#: Every task kind by name (see :class:`KindRegistry`).
TASK_KIND_REGISTRY = KindRegistry()


def register(kind: TaskKind) -> TaskKind:
    """Make ``kind`` known by its name to every part of prefkit; a name is registered once."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", kind.name or ""):
        raise LabelError(f"task kind name {kind.name!r}: use lower-case letters, digits and _")
    TASK_KIND_REGISTRY.add(kind)
    return kind


def kind_names() -> tuple[str, ...]:
    return tuple(TASK_KIND_REGISTRY)


def get_kind(name: str) -> TaskKind:
    """The registered kind ``name``; an unknown name is one :class:`LabelError` listing the known ones,
    a plugin kind that failed to load the :class:`KindPluginError` naming its distribution."""
    try:
        return TASK_KIND_REGISTRY[name]
    except (KeyError, TypeError):
        broken = TASK_KIND_REGISTRY.broken().get(name) if isinstance(name, str) else None
        if broken is not None:
            raise broken from None
        raise LabelError(
            f"unknown task kind {name!r}; expected one of {', '.join(TASK_KIND_REGISTRY)}"
        ) from None


def item_name(task: AnnotationTask, width: int = 60) -> str:
    """An item as every list and report names it: its id and its kind's summary, on one line, cut to
    ``width`` characters (a kind that cannot be loaded: its id alone)."""
    try:
        words = " ".join(get_kind(task.kind).summary(task.payload).split())
    except LabelError:
        words = ""
    cut = words if len(words) <= width else words[: width - 1].rstrip() + "…"
    return f"{task.item_ref} · {cut}" if cut else task.item_ref


def feeding(config: str) -> list[TaskKind]:
    """The kinds whose final labels decide release config ``config`` (:attr:`TaskKind.release`)."""
    return [kind for kind in TASK_KIND_REGISTRY.values() if config in kind.release]


def load_reference(reference: str) -> Any:
    """What an import reference names: ``"package.module"`` or ``"package.module:name"``."""
    module_name, _, qualname = reference.partition(":")
    obj: Any = import_module(module_name)
    for part in filter(None, qualname.split(".")):
        obj = getattr(obj, part)
    return obj


def declared_part(kind: TaskKind, attribute: str) -> Any | None:
    """The part a kind names in ``attribute`` (``app_form``, ``labelstudio_config``, ``suggestions``:
    an import reference ``"package.module"`` or ``"package.module:name"``), the one way the app, the
    Label Studio bridge and ``prefkit suggest`` find a kind's parts: imported on first use and kept
    with the kind, a class made with the kind (one form or config per declared kind). None when it
    names none; a reference that cannot be loaded is one :class:`KindPluginError` naming the kind's
    distribution."""
    parts = kind.__dict__.setdefault("_parts", {})
    if attribute in parts:
        return parts[attribute]
    reference = getattr(kind, attribute, None)
    obj: Any = None
    if reference:
        try:
            obj = load_reference(reference)
            obj = obj(kind) if isinstance(obj, type) else obj
        except Exception as exc:  # the plugin's own code: any failure is reported as the plugin's
            where = TASK_KIND_REGISTRY.origin(kind.name) or f"module {type(kind).__module__}"
            raise KindPluginError(
                f"task kind {kind.name!r} from {where}: its {attribute} {reference!r} cannot be loaded: "
                f"{type(exc).__name__}: {exc}"
            ) from None
    parts[attribute] = obj
    return obj
