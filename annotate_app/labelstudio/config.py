"""Label Studio labeling configs, found from the task kinds that name them, and the building blocks they
share: XML tags, reading an annotation's ``result`` list back (every result is checked against the
config: Label Studio's API stores results that do not match it, so an unknown control or a value the
config does not offer is a :class:`LabelError`), and writing results (gold answers as ground truth,
scripted annotations in tests).

A kind's config is a small object in its own module (``annotate_app/labelstudio/kinds/<kind>.py``,
``CONFIG``) that the kind names (``TaskKind.labelstudio_config``); it knows only how the kind *looks*
in Label Studio (the layout, hotkeys, slots). What the kind's labels are (its fields, choices,
schema) comes from the kind itself: a config's ``values`` always ends in ``TaskKind.validate``. A kind
whose labels are simple questions is a declaration, drawn by the generic config
(:mod:`~prefkit.annotate_app.labelstudio.declared`). This module must never talk to a server.
"""

from __future__ import annotations

from typing import Any
from xml.dom import minidom
from xml.sax.saxutils import quoteattr

from prefkit.curation.annotation.task_kinds import (
    TASK_KIND_REGISTRY,
    KindPluginError,
    LabelError,
    TaskKind,
    declared_part,
    get_kind,
)
from prefkit.schemas.curation import AnnotationTask

TASK_ID_KEY = "prefkit_task_id"


# -- building blocks ---------------------------------------------------------------------------------
def tag(element: str, body: str = "", /, **attrs: Any) -> str:
    """``<element attr="…">body</element>`` (attributes in the order given, values XML-quoted)."""
    parts = " ".join(f"{k}={quoteattr(str(v))}" for k, v in attrs.items())
    opening = f"<{element} {parts}" if parts else f"<{element}"
    return f"{opening}>{body}</{element}>" if body else f"{opening}/>"


def dialogue_xml() -> str:
    return tag(
        "Paragraphs", name="dialogue", value="$dialogue", layout="dialogue", nameKey="role", textKey="content"
    )


def textarea_xml(name: str, to_name: str, placeholder: str) -> str:
    """A free-text control of two rows, one text per annotation."""
    return tag(
        "TextArea",
        name=name,
        toName=to_name,
        placeholder=placeholder,
        maxSubmissions="1",
        editable="true",
        rows="2",
    )


def comment_xml(to_name: str) -> str:
    return textarea_xml("comment", to_name, "Comment (optional)")


def shown_when(body: str, control: str, choice: str) -> str:
    """``body`` shown only while ``choice`` is selected in the choices ``control``."""
    return tag("View", body, visibleWhen="choice-selected", whenTagName=control, whenChoiceValue=choice)


def dialogue_data(task: AnnotationTask) -> list[dict[str, str]]:
    return [{"role": t["role"], "content": t["content"]} for t in task.payload["turns"]]


def by_control(results: list[dict[str, Any]], known: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Group results by control name; a control the config does not have is an error."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        name = r.get("from_name")
        if name not in known:
            raise LabelError(f"result from unknown control {name!r}")
        grouped.setdefault(name, []).append(r)
    return grouped


def one_choice(grouped: dict[str, list[dict[str, Any]]], name: str, allowed: set[str]) -> str | None:
    rs = grouped.get(name)
    if not rs:
        return None
    choices = (rs[-1].get("value") or {}).get("choices") or []
    if len(choices) != 1 or choices[0] not in allowed:
        raise LabelError(f"{name}: {choices!r} is not one of {sorted(allowed)}")
    return choices[0]


def text(grouped: dict[str, list[dict[str, Any]]], name: str) -> str | None:
    rs = grouped.get(name)
    if not rs:
        return None
    texts = (rs[-1].get("value") or {}).get("text") or []
    joined = "\n".join(str(t) for t in texts).strip()
    return joined or None


def choice_result(name: str, to_name: str, value: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": to_name, "type": "choices", "value": {"choices": [value]}}


def text_result(name: str, to_name: str, value: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": to_name, "type": "textarea", "value": {"text": [value]}}


# -- what a config provides ----------------------------------------------------------------------------
class LSConfig:
    """How one task kind looks and round-trips in Label Studio. A config implements ``controls`` (the
    names of its control tags), ``xml``, ``data``, ``raw_values`` and ``results``; ``fits`` when some
    tasks cannot be shown. ``kind`` is set when the config is first used (:meth:`bind`)."""

    kind: TaskKind
    controls: set[str]

    def __init__(self, kind: TaskKind | None = None) -> None:
        """A config class a kind names is made with the kind (:func:`ls_kind`)."""
        if kind is not None:
            self.bind(kind)

    def bind(self, kind: TaskKind) -> None:
        """Attach the kind (a config may derive its controls from the kind's fields here)."""
        self.kind = kind

    def xml(self) -> str:
        """The labeling config."""
        raise NotImplementedError

    def data(self, task: AnnotationTask) -> dict[str, Any]:
        """Task data without the prefkit task id (see :func:`task_data`)."""
        raise NotImplementedError

    def raw_values(self, results: list[dict[str, Any]], task: AnnotationTask) -> dict[str, Any]:
        """Values read from results (config conformance checked, the kind's schema not yet)."""
        raise NotImplementedError

    def results(self, values: dict[str, Any], task: AnnotationTask) -> list[dict[str, Any]]:
        """The Label Studio result list for prefkit values."""
        raise NotImplementedError

    def fits(self, task: AnnotationTask) -> str | None:
        """Why this task cannot be shown with the config, or None when it can."""
        return None

    def values(self, results: list[dict[str, Any]], task: AnnotationTask) -> dict[str, Any]:
        """Validated prefkit values for an annotation's result list, or :class:`LabelError`."""
        return self.kind.validate(self.raw_values(results, task), task)


def ls_kind(name: str) -> LSConfig:
    """The config of task kind ``name``, the one the kind names (``TaskKind.labelstudio_config``, found
    with its other parts: the configs import this module, they are built from its blocks)."""
    kind = get_kind(name)  # the one clear error for an unknown kind
    config = declared_part(kind, "labelstudio_config")
    if config is None:
        raise LabelError(f"task kind {name!r} has no Label Studio config (TaskKind.labelstudio_config)")
    if not isinstance(config, LSConfig):
        where = TASK_KIND_REGISTRY.origin(name) or f"module {type(kind).__module__}"
        raise KindPluginError(
            f"task kind {name!r} from {where}: its labelstudio_config {kind.labelstudio_config!r} "
            f"is {type(config).__name__}, not an LSConfig"
        )
    if getattr(config, "kind", None) is not kind:
        config.bind(kind)
    return config


def label_config(kind: str) -> str:
    """The labeling config XML for a task kind."""
    return ls_kind(kind).xml()


def task_data(task: AnnotationTask) -> dict[str, Any]:
    """Label Studio task data for a prefkit task; carries the prefkit task id."""
    return {TASK_ID_KEY: task.task_id, **ls_kind(task.kind).data(task)}


def pretty_config(kind: str) -> str:
    """The labeling config, indented for reading and pasting into Label Studio's settings."""
    root = minidom.parseString(label_config(kind)).documentElement
    assert root is not None  # label_config always has a root element
    pretty = root.toprettyxml(indent="  ")
    return "\n".join(line for line in pretty.splitlines() if line.strip())
