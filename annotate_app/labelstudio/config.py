"""Label Studio labeling configs for prefkit's task kinds, and the mapping both ways between a
prefkit label (``TaskKind`` values) and a Label Studio annotation result.

One :class:`LSKind` per task kind gives: the config XML, the task data a prefkit task becomes, how an
annotation's ``result`` list turns back into values, and the reverse (gold answers as ground truth,
scripted annotations in tests). Everything that comes back from Label Studio is checked here: its API
stores results that do not match the config, so an unknown control or a value the config does not
offer is a :class:`LabelError`, and the values then go through ``TaskKind.validate``.

Limits of the configs (Label Studio has no data-driven repetition, so lists become bounded slots):
- preference_expressed: up to ``MAX_ITEMS`` (4) checklist items, as slots ``item0..item3`` whose choices
  are loaded from the task data (an absent item has no choices, so nothing to click); evidence is
  marked by labelling user turns in the dialogue with "item N".
- memory_verify: up to ``MAX_CANDIDATES`` candidates per task, as slots ``c0..c59``; a task with more
  is not pushed (label it in the prefkit app). An edit corrects the memory statement; its taxonomy
  label, type and time scope are kept from the candidate ("unknown" time scope when it has none).
  Memories the models missed cannot be added in Label Studio.
This module must never talk to a server.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any
from xml.sax.saxutils import quoteattr

from curation.annotation.task_kinds import REJECT_REASONS, LabelError, TaskKind, get_kind
from schemas.curation import AnnotationTask

MAX_ITEMS = 4
MAX_CANDIDATES = 60
TASK_ID_KEY = "prefkit_task_id"


def _tag(tag: str, body: str = "", **attrs: Any) -> str:
    parts = " ".join(f"{k}={quoteattr(str(v))}" for k, v in attrs.items())
    opening = f"<{tag} {parts}" if parts else f"<{tag}"
    return f"{opening}>{body}</{tag}>" if body else f"{opening}/>"


def _dialogue_xml() -> str:
    return _tag(
        "Paragraphs", name="dialogue", value="$dialogue", layout="dialogue", nameKey="role", textKey="content"
    )


def _comment_xml(to_name: str) -> str:
    return _tag(
        "TextArea",
        name="comment",
        toName=to_name,
        placeholder="Comment (optional)",
        maxSubmissions="1",
        editable="true",
        rows="2",
    )


def _dialogue_data(task: AnnotationTask) -> list[dict[str, str]]:
    return [{"role": t["role"], "content": t["content"]} for t in task.payload["turns"]]


def _by_control(results: list[dict[str, Any]], known: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Group results by control name; a control the config does not have is an error."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        name = r.get("from_name")
        if name not in known:
            raise LabelError(f"result from unknown control {name!r}")
        grouped.setdefault(name, []).append(r)
    return grouped


def _one_choice(grouped: dict[str, list[dict[str, Any]]], name: str, allowed: set[str]) -> str | None:
    rs = grouped.get(name)
    if not rs:
        return None
    choices = (rs[-1].get("value") or {}).get("choices") or []
    if len(choices) != 1 or choices[0] not in allowed:
        raise LabelError(f"{name}: {choices!r} is not one of {sorted(allowed)}")
    return choices[0]


def _text(grouped: dict[str, list[dict[str, Any]]], name: str) -> str | None:
    rs = grouped.get(name)
    if not rs:
        return None
    texts = (rs[-1].get("value") or {}).get("text") or []
    joined = "\n".join(str(t) for t in texts).strip()
    return joined or None


def _choice_result(name: str, to_name: str, value: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": to_name, "type": "choices", "value": {"choices": [value]}}


def _text_result(name: str, to_name: str, text: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": to_name, "type": "textarea", "value": {"text": [text]}}


class LSKind(ABC):
    """How one task kind looks and round-trips in Label Studio."""

    kind: TaskKind

    @abstractmethod
    def xml(self) -> str:
        """The labeling config."""

    @abstractmethod
    def data(self, task: AnnotationTask) -> dict[str, Any]:
        """Task data without the prefkit task id (see :func:`task_data`)."""

    @abstractmethod
    def raw_values(self, results: list[dict[str, Any]], task: AnnotationTask) -> dict[str, Any]:
        """Values read from results (config conformance checked, the kind's schema not yet)."""

    @abstractmethod
    def results(self, values: dict[str, Any], task: AnnotationTask) -> list[dict[str, Any]]:
        """The Label Studio result list for prefkit values."""

    def fits(self, task: AnnotationTask) -> str | None:
        """Why this task cannot be shown with the config, or None when it can."""
        return None

    def values(self, results: list[dict[str, Any]], task: AnnotationTask) -> dict[str, Any]:
        """Validated prefkit values for an annotation's result list, or :class:`LabelError`."""
        return self.kind.validate(self.raw_values(results, task), task)


class ExpressedConfig(LSKind):
    kind = get_kind("preference_expressed")
    controls = {"evidence", "comment", *(f"item{i}" for i in range(MAX_ITEMS))}

    @staticmethod
    def hotkeys(i: int) -> tuple[str, str]:
        return str(2 * i + 1), str(2 * i + 2)

    def xml(self) -> str:
        labels = "".join(_tag("Label", value=f"item {i + 1}", hotkey="qwer"[i]) for i in range(MAX_ITEMS))
        slots = "".join(
            _tag("Header", value=f"$q{i}", size="5")
            + _tag(
                "Choices",
                name=f"item{i}",
                toName="dialogue",
                value=f"$item{i}_options",
                choice="single-radio",
                showInline="true",
            )
            for i in range(MAX_ITEMS)
        )
        body = (
            _tag("Header", value="Preference in force: $preference", size="4")
            + _tag("Header", value="Context: $context_factor", size="6")
            + _dialogue_xml()
            + _tag(
                "Header",
                value="Evidence (optional): select a user turn, then label it with its item",
                size="6",
            )
            + _tag("ParagraphLabels", labels, name="evidence", toName="dialogue")
            + _tag("Header", value="Does the user express each checklist item?", size="4")
            + slots
            + _comment_xml("dialogue")
        )
        return _tag("View", body)

    def data(self, task):
        checklist = task.payload["checklist"]
        out: dict[str, Any] = {
            "dialogue": _dialogue_data(task),
            "preference": task.payload["preference"],
            "context_factor": task.payload["context_factor"],
        }
        for i in range(MAX_ITEMS):
            yes, no = self.hotkeys(i)
            present = i < len(checklist)
            out[f"q{i}"] = f"{i + 1}. {checklist[i]} (keys {yes} / {no})" if present else ""
            out[f"item{i}_options"] = (
                [{"value": "expressed", "hotkey": yes}, {"value": "not_expressed", "hotkey": no}]
                if present
                else []
            )
        return out

    def fits(self, task):
        n = len(task.payload["checklist"])
        return None if n <= MAX_ITEMS else f"{n} checklist items (the config has {MAX_ITEMS} slots)"

    def raw_values(self, results, task):
        grouped = _by_control(results, self.controls)
        evidence = self._evidence(grouped.get("evidence", []), task)
        items = []
        for i in range(len(task.payload["checklist"])):
            choice = _one_choice(grouped, f"item{i}", {"expressed", "not_expressed"})
            if choice is not None:
                items.append({"item": i, "expressed": choice == "expressed", "evidence": evidence.get(i, [])})
        extra = [n for n in grouped if n.startswith("item") and int(n[4:]) >= len(task.payload["checklist"])]
        if extra:
            raise LabelError(
                f"{extra[0]}: the task has only {len(task.payload['checklist'])} checklist items"
            )
        return {"items": items, "comment": _text(grouped, "comment")}

    @staticmethod
    def _evidence(results: list[dict[str, Any]], task: AnnotationTask) -> dict[int, list[int]]:
        turns = task.payload["turns"]
        out: dict[int, set[int]] = {}
        for r in results:
            v = r.get("value") or {}
            try:
                start, end = int(v["start"]), int(v["end"])
                labels = [int(str(lab).removeprefix("item ")) - 1 for lab in v["paragraphlabels"]]
            except (KeyError, TypeError, ValueError) as exc:
                raise LabelError(f"evidence: malformed paragraph label {v!r}") from exc
            if not 0 <= start <= end < len(turns):
                raise LabelError(f"evidence: paragraphs {start}..{end} are outside the dialogue")
            for item in labels:
                out.setdefault(item, set()).update(turns[p]["index"] for p in range(start, end + 1))
        return {k: sorted(v) for k, v in out.items()}

    def results(self, values, task):
        out = []
        position = {t["index"]: p for p, t in enumerate(task.payload["turns"])}
        for it in values["items"]:
            out.append(
                _choice_result(
                    f"item{it['item']}", "dialogue", "expressed" if it["expressed"] else "not_expressed"
                )
            )
            for turn in it.get("evidence", []):
                p = position[turn]
                content = task.payload["turns"][p]["content"]
                out.append(
                    {
                        "from_name": "evidence",
                        "to_name": "dialogue",
                        "type": "paragraphlabels",
                        "value": {
                            "start": p,
                            "end": p,
                            "startOffset": 0,
                            "endOffset": len(content),
                            "text": content,
                            "paragraphlabels": [f"item {it['item'] + 1}"],
                        },
                    }
                )
        if values.get("comment"):
            out.append(_text_result("comment", "dialogue", values["comment"]))
        return out


COVERAGE_KEYS = {"fully": "1", "partially": "2", "not_covered": "3"}  # as in the guidelines


class MatchConfig(LSKind):
    kind = get_kind("preference_match")
    controls = {"coverage", "comment"}

    def xml(self):
        choices = "".join(_tag("Choice", value=v, hotkey=k) for v, k in COVERAGE_KEYS.items())
        body = (
            _tag("Header", value="Checklist item", size="5")
            + _tag("Text", name="checklist_item", value="$checklist_item")
            + _tag("Header", value="Candidate preference", size="5")
            + _tag("Text", name="candidate", value="$candidate")
            + _tag(
                "Header",
                value="How much of the checklist item does the candidate cover? (keys 1 / 2 / 3)",
                size="5",
            )
            + _tag(
                "Choices",
                choices,
                name="coverage",
                toName="candidate",
                choice="single-radio",
                showInline="true",
                required="true",
            )
            + _comment_xml("candidate")
        )
        return _tag("View", body)

    def data(self, task):
        return {"checklist_item": task.payload["checklist_item"], "candidate": task.payload["candidate"]}

    def raw_values(self, results, task):
        grouped = _by_control(results, self.controls)
        values: dict[str, Any] = {"comment": _text(grouped, "comment")}
        coverage = _one_choice(grouped, "coverage", set(COVERAGE_KEYS))
        if coverage is not None:
            values["coverage"] = coverage
        return values

    def results(self, values, task):
        out = [_choice_result("coverage", "candidate", values["coverage"])]
        if values.get("comment"):
            out.append(_text_result("comment", "candidate", values["comment"]))
        return out


DECISIONS = ("accept", "edit", "reject")


class MemoryConfig(LSKind):
    kind = get_kind("memory_verify")
    controls = {"comment"} | {f"c{i}{s}" for i in range(MAX_CANDIDATES) for s in ("", "_reason", "_edit")}

    def xml(self):
        slots = "".join(
            _tag("Header", value=f"$c{i}_title", size="6")
            + _tag("Header", value=f"$c{i}_memory", size="5")
            + _tag(
                "Choices",
                name=f"c{i}",
                toName="dialogue",
                value=f"$c{i}_options",
                choice="single-radio",
                showInline="true",
            )
            + _tag(
                "View",
                _tag(
                    "Choices",
                    name=f"c{i}_reason",
                    value=f"$c{i}_reasons",
                    toName="dialogue",
                    choice="single-radio",
                    showInline="true",
                ),
                visibleWhen="choice-selected",
                whenTagName=f"c{i}",
                whenChoiceValue="reject",
            )
            + _tag(
                "View",
                _tag(
                    "TextArea",
                    name=f"c{i}_edit",
                    toName="dialogue",
                    placeholder="Corrected memory",
                    maxSubmissions="1",
                    editable="true",
                    rows="2",
                ),
                visibleWhen="choice-selected",
                whenTagName=f"c{i}",
                whenChoiceValue="edit",
            )
            for i in range(MAX_CANDIDATES)
        )
        body = (
            _dialogue_xml()
            + _tag("Header", value="Candidate memories: accept, edit or reject each one", size="4")
            + slots
            + _comment_xml("dialogue")
        )
        return _tag("View", body)

    def fits(self, task):
        n = len(task.payload["candidates"])
        return None if n <= MAX_CANDIDATES else f"{n} candidates (the config has {MAX_CANDIDATES} slots)"

    def data(self, task):
        cands = task.payload["candidates"]
        out: dict[str, Any] = {"dialogue": _dialogue_data(task)}
        for i in range(MAX_CANDIDATES):
            c = cands[i] if i < len(cands) else None
            memory = c["memory"] if c and isinstance(c["memory"], dict) else {}
            out[f"c{i}_title"] = self._title(i, c, memory) if c else ""
            out[f"c{i}_memory"] = str(memory.get("value", "")) if c else ""
            out[f"c{i}_options"] = [{"value": d} for d in DECISIONS] if c else []
            # Loaded from the data like the decisions, so an empty slot renders no controls at all.
            out[f"c{i}_reasons"] = [{"value": r} for r in REJECT_REASONS] if c else []
        return out

    @staticmethod
    def _title(i: int, c: dict[str, Any], memory: dict[str, Any]) -> str:
        about = ", ".join(str(memory[k]) for k in ("label", "type", "time_scope") if memory.get(k))
        problems = f" — problems: {'; '.join(c['problems'])}" if c.get("problems") else ""
        return f"Candidate {i + 1} ({c['model']}) {about}{problems}"

    def raw_values(self, results, task):
        grouped = _by_control(results, self.controls)
        cands = task.payload["candidates"]
        beyond = [n for n in grouped if n != "comment" and int(n[1:].split("_")[0]) >= len(cands)]
        if beyond:
            raise LabelError(f"{beyond[0]}: the task has only {len(cands)} candidates")
        decisions = []
        for i, c in enumerate(cands):
            decision = _one_choice(grouped, f"c{i}", set(DECISIONS))
            if decision is not None:
                decisions.append(self._decision(grouped, i, c, decision))
        return {"decisions": decisions, "comment": _text(grouped, "comment")}

    @staticmethod
    def _decision(grouped, i: int, c: dict[str, Any], decision: str) -> dict[str, Any]:
        out: dict[str, Any] = {"key": c["key"], "decision": decision}
        if decision == "reject":
            out["reason"] = _one_choice(grouped, f"c{i}_reason", set(REJECT_REASONS))
        if decision == "edit":
            memory = c["memory"] if isinstance(c["memory"], dict) else {}
            out["edited"] = {
                "value": _text(grouped, f"c{i}_edit") or "",
                "label": memory.get("label"),
                "type": memory.get("type"),
                "time_scope": memory.get("time_scope") or "unknown",
            }
        return out

    def results(self, values, task):
        index = {c["key"]: i for i, c in enumerate(task.payload["candidates"])}
        out = []
        for d in values["decisions"]:
            i = index[d["key"]]
            out.append(_choice_result(f"c{i}", "dialogue", d["decision"]))
            if d["decision"] == "reject":
                out.append(_choice_result(f"c{i}_reason", "dialogue", d["reason"]))
            if d["decision"] == "edit":
                out.append(_text_result(f"c{i}_edit", "dialogue", d["edited"]["value"]))
        if values.get("comment"):
            out.append(_text_result("comment", "dialogue", values["comment"]))
        return out


QC_KEYS = {"leakage": {"none": "1", "leaks": "2"}, "answer": {"correct": "3", "incorrect": "4"}}


class TaskQcConfig(LSKind):
    """Generated task check: the generated text, its memory and gold answer; two verdicts."""

    kind = get_kind("task_qc")
    controls = {"leakage", "answer", "comment"}

    def xml(self):
        body = (
            _tag("Header", value="$question", size="6")
            + _tag("Header", value="Generated", size="5")
            + _tag("Text", name="generated", value="$generated")
            + _tag("Header", value="Memory", size="5")
            + _tag("Text", name="memory", value="$memory")
            + _tag("Header", value="Gold answer", size="5")
            + _tag("Text", name="gold_answer", value="$gold_answer")
        )
        for control, keys in QC_KEYS.items():
            choices = "".join(_tag("Choice", value=v, hotkey=k) for v, k in keys.items())
            body += _tag(
                "Header", value=f"{control.capitalize()} (keys {' / '.join(keys.values())})", size="5"
            )
            body += _tag(
                "Choices",
                choices,
                name=control,
                toName="generated",
                choice="single-radio",
                showInline="true",
                required="true",
            )
        return _tag("View", body + _comment_xml("generated"))

    def data(self, task):
        p = task.payload
        return {k: p[k] for k in ("question", "generated", "memory", "gold_answer")}

    def raw_values(self, results, task):
        grouped = _by_control(results, self.controls)
        values: dict[str, Any] = {"comment": _text(grouped, "comment")}
        for control, keys in QC_KEYS.items():
            choice = _one_choice(grouped, control, set(keys))
            if choice is not None:
                values[control] = choice
        return values

    def results(self, values, task):
        out = [_choice_result(c, "generated", values[c]) for c in QC_KEYS]
        if values.get("comment"):
            out.append(_text_result("comment", "generated", values["comment"]))
        return out


#: The Label Studio config of every task kind the bridge can push, by kind name.
LS_KINDS: dict[str, LSKind] = {}


def register_ls(config: LSKind) -> LSKind:
    """Let the bridge push tasks of ``config.kind`` (a registered task kind) with ``config``."""
    get_kind(config.kind.name)
    LS_KINDS[config.kind.name] = config
    return config


for _config in (ExpressedConfig(), MatchConfig(), MemoryConfig(), TaskQcConfig()):
    register_ls(_config)


def ls_kind(name: str) -> LSKind:
    get_kind(name)  # the one clear error for an unknown kind
    try:
        return LS_KINDS[name]
    except KeyError:
        raise LabelError(f"task kind {name!r} has no Label Studio config (register_ls)") from None


def label_config(kind: str) -> str:
    """The labeling config XML for a task kind."""
    return ls_kind(kind).xml()


def task_data(task: AnnotationTask) -> dict[str, Any]:
    """Label Studio task data for a prefkit task; carries the prefkit task id."""
    return {TASK_ID_KEY: task.task_id, **ls_kind(task.kind).data(task)}


def pretty_config(kind: str) -> str:
    """The labeling config, indented for reading and pasting into Label Studio's settings."""
    from xml.dom import minidom

    pretty = minidom.parseString(label_config(kind)).documentElement.toprettyxml(indent="  ")
    return "\n".join(line for line in pretty.splitlines() if line.strip())
