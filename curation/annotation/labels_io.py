"""Label events in and out of a project as JSONL or CSV rows, losslessly.

One row per label event. The columns, the checks an import makes before its one write (file, line and
field of the first bad row; the same file twice writes nothing; an exported label imported back is the
event it is) and repeats are described in docs/agreement.md (*Label files*).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from prefkit.curation.annotation.guidelines import version_of
from prefkit.curation.annotation.task_kinds import LabelError, get_kind
from prefkit.schemas.common import InputError, PrefkitError, canonical_json, content_hash, validation_line
from prefkit.schemas.curation import AnnotationTask, LabelEvent
from prefkit.schemas.reading import loads, no_records, parse_timestamp, printable, read_text
from prefkit.schemas.safe_text import csv_cell, csv_value
from pydantic import ValidationError

if TYPE_CHECKING:
    from prefkit.curation.store import ProjectStore

COLUMNS = tuple(
    """annotator task_kind item_id values time_spent_s timestamp action comment judge assist_arm
    suggestion_id event_id guidelines_version repeat""".split()
)
ARMS = ("assisted", "control")
REQUIRED = ("annotator", "task_kind", "item_id", "timestamp")
ACTIONS = ("label", "skip", "flag", "withdraw")
FORMATS = ("jsonl", "csv")
SOURCES = ("import", "judge")


class LabelsFileError(PrefkitError):
    """A labels file cannot be imported; the message names the file, the line and the field."""


class _RowError(Exception):
    def __init__(self, column: str, message: str):
        super().__init__(f"{printable(column)}: {message}")


class _RowLine(Exception):
    """A row error while parsing, with the line it is on."""

    def __init__(self, line: int, error: _RowError):
        super().__init__(f"{line}: {error}")


@dataclass
class ImportResult:
    """What an import did: rows read, events written now, rows already recorded before."""

    rows: int
    written: int

    @property
    def already_recorded(self) -> int:
        return self.rows - self.written


def detect_format(path: Path, fmt: str | None = None) -> str:
    chosen = fmt or {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(path.suffix.lower())
    if chosen not in FORMATS:
        raise LabelsFileError(f"{path}: cannot tell the format; name it .jsonl or .csv, or pass --format")
    return chosen


# -- reading ---------------------------------------------------------------------------------------------
def _csv_rows(text: str) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)  # an unclosed quote is an error
    rows = []
    try:
        for row in reader:
            line = reader.line_num
            if None in row:
                raise _RowLine(line, _RowError("<row>", "more cells than header columns"))
            # cells a spreadsheet could run as formulas were written with a leading ' (write_rows)
            parsed: dict[str, Any] = {k: (csv_value(v) if v != "" else None) for k, v in row.items()}
            if parsed.get("values") is not None:
                try:
                    parsed["values"] = loads(parsed["values"], "")
                except InputError as exc:
                    raise _RowLine(
                        line, _RowError("values", "not valid JSON: " + str(exc).removeprefix(": "))
                    ) from exc
            if parsed.get("time_spent_s") is not None:
                try:
                    parsed["time_spent_s"] = float(parsed["time_spent_s"])
                except ValueError as exc:
                    raise _RowLine(
                        line, _RowError("time_spent_s", f"not a number: {row['time_spent_s']!r}")
                    ) from exc
            for column in ("judge", "repeat"):
                if parsed.get(column) is not None:
                    flag = parsed[column].lower()
                    if flag not in ("true", "false"):
                        raise _RowLine(
                            line, _RowError(column, f"expected true or false, got {row[column]!r}")
                        )
                    parsed[column] = flag == "true"
            rows.append((line, parsed))
    except csv.Error as exc:  # the reader counts the lines of rows it finished: the bad one is next
        why = f"not readable CSV ({exc}; a quote not closed?)"
        raise _RowLine(reader.line_num + 1, _RowError("<row>", why)) from exc
    return rows


def _jsonl_rows(text: str) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = loads(raw, "")
        except InputError as exc:
            raise _RowLine(line, _RowError("<row>", str(exc).removeprefix(": "))) from exc
        if not isinstance(row, dict):
            raise _RowLine(line, _RowError("<row>", "expected a JSON object"))
        rows.append((line, row))
    return rows


def read_rows(path: Path, fmt: str | None = None) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` pairs of a labels file, parsed but not yet validated."""
    fmt = detect_format(path, fmt)
    try:
        text = read_text(path)
    except OSError as exc:
        raise LabelsFileError(f"{path}: cannot read ({exc.strerror})") from exc
    except InputError as exc:
        raise LabelsFileError(str(exc)) from exc
    try:
        rows = _csv_rows(text) if fmt == "csv" else _jsonl_rows(text)
    except _RowLine as exc:
        raise LabelsFileError(f"{path}:{exc}") from exc
    except csv.Error as exc:
        raise LabelsFileError(f"{path}: not a readable CSV file ({exc})") from exc
    if not rows:
        raise LabelsFileError(str(no_records(path)))
    return rows


# -- validating ------------------------------------------------------------------------------------------
class _Resolver:
    """Looks up tasks and users once per import."""

    def __init__(self, store: ProjectStore, guidelines: Callable[[str], str] | None):
        self.store = store
        self.guidelines = guidelines  # the kind's guidelines as shown now
        self.shown: dict[str, tuple[str, str]] = {}  # kind -> (current version, its text): kept if all pass
        self.known: dict[str, set[str]] = {}
        self.tasks: dict[tuple[str, str], AnnotationTask] = {}
        for task in store.labels.tasks():
            self.tasks[(task.kind, task.item_ref)] = task
            self.tasks[(task.kind, task.task_id)] = task
        self.users: dict[str, str | None] = {}
        self.suggestions: dict[str, str | None] = {}  # suggestion id -> its task id (None: unknown)
        self._events: dict[str, LabelEvent] | None = None

    def recorded(self, event_id: str) -> LabelEvent | None:
        """The project's event with this id, if it has one (the events are read once per import)."""
        if self._events is None:
            self._events = {e.event_id: e for e in self.store.labels.events()}
        return self._events.get(event_id)

    def suggestion(self, suggestion_id: str, task: AnnotationTask) -> str:
        """``suggestion_id`` when it is this project's suggestion for ``task``."""
        if suggestion_id not in self.suggestions:
            found = self.store.suggestions.by_ids([suggestion_id]).get(suggestion_id)
            self.suggestions[suggestion_id] = None if found is None else found.task_id
        owner = self.suggestions[suggestion_id]
        if owner is None:
            raise _RowError(
                "suggestion_id",
                f"no suggestion {printable(suggestion_id)!r} in this project "
                "(run prefkit suggest, or import into the project that made it)",
            )
        if owner != task.task_id:
            raise _RowError("suggestion_id", f"suggestion {printable(suggestion_id)!r} is for another task")
        return suggestion_id

    def version(self, kind: str, given: Any) -> str | None:
        """The row's guidelines version (one this project had for ``kind``), else the current one."""
        if self.guidelines is not None and kind not in self.shown:
            text = self.guidelines(kind)
            self.shown[kind] = (version_of(text), text)
        current = self.shown[kind][0] if kind in self.shown else None
        if given is None or given == current:
            return current
        if kind not in self.known:
            self.known[kind] = {v.version for v in self.store.guidelines.versions(kind) if v.version}
        if not isinstance(given, str) or given not in self.known[kind]:
            raise _RowError(
                "guidelines_version",
                f"{kind} never had guidelines version {given!r} in this project (prefkit guidelines list)",
            )
        return given

    def task(self, kind: str, item_id: str) -> AnnotationTask:
        task = self.tasks.get((kind, item_id))
        if task is None:
            raise _RowError("item_id", f"no {kind} task with item_ref or task_id {item_id!r} in this project")
        return task

    def user(self, username: str) -> str:
        """The account's own name: ``ALICE`` or a full-width ``ａｌｉｃｅ`` is the account ``alice``
        (names are compared as sign-in compares them), so an event always names a real account."""
        if username not in self.users:
            account = self.store.accounts.user(username)
            self.users[username] = None if account is None else account.username
        canonical = self.users[username]
        if canonical is None:
            raise _RowError("annotator", f"no user {printable(username)!r} in this project")
        return canonical


def _text(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    if not isinstance(value, str) or not value:
        raise _RowError(column, "required, a non-empty string")
    return value


def _values(row: dict[str, Any], action: str, task: AnnotationTask) -> dict[str, Any]:
    values = row.get("values")
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise _RowError("values", "expected a JSON object")
    if action != "label":
        if values:
            raise _RowError("values", f"a {action} event carries no values")
        return {}
    try:
        return get_kind(task.kind).validate(values, task)
    except LabelError as exc:
        where, _, message = str(exc).partition(": ")
        raise _RowError(f"values.{where}", message or "invalid for this task") from exc


def _scalars(row: dict[str, Any]) -> tuple[str, float | None, str | None]:
    action = row.get("action") or "label"
    if action not in ACTIONS:
        raise _RowError("action", f"{action!r} is not one of {', '.join(ACTIONS)}")
    spent = row.get("time_spent_s")
    if spent is not None and (
        isinstance(spent, bool) or not isinstance(spent, int | float) or not math.isfinite(spent) or spent < 0
    ):
        raise _RowError("time_spent_s", f"expected a number of seconds >= 0, got {spent!r}")
    comment = row.get("comment")
    if comment is not None and not isinstance(comment, str):
        raise _RowError("comment", "expected a string")
    return action, None if spent is None else float(spent), comment


def _arm(row: dict[str, Any], resolver: _Resolver, task: AnnotationTask) -> tuple[str | None, str | None]:
    """The row's assist arm and suggestion id: both or neither."""
    arm, suggestion_id = row.get("assist_arm"), row.get("suggestion_id")
    if arm is None and suggestion_id is None:
        return None, None
    if arm not in ARMS:
        raise _RowError("assist_arm", f"expected one of {', '.join(ARMS)} (with suggestion_id), got {arm!r}")
    if not isinstance(suggestion_id, str) or not suggestion_id:
        raise _RowError("suggestion_id", f"required with assist_arm {arm!r}, a non-empty string")
    return arm, resolver.suggestion(suggestion_id, task)


#: What makes two events the same label (``supersedes`` is where it sits in a chain, not its content;
#: ``source`` counts only as judge or not, which is what a file says of it).
_CONTENT = tuple(
    "task_id kind annotator action values comment time_spent_s created_at assist_arm suggestion_id".split()
)
EVENT_ID_MAX = 128


def same_content(a: LabelEvent, b: LabelEvent) -> bool:
    """Whether two events hold the same label (see ``_CONTENT``)."""
    return all(getattr(a, f) == getattr(b, f) for f in _CONTENT) and (a.source == "judge") == (
        b.source == "judge"
    )


def _event_id(row: dict[str, Any]) -> str | None:
    event_id = row.get("event_id")
    if event_id is None:
        return None
    if (
        not isinstance(event_id, str)
        or not event_id
        or not event_id.isprintable()
        or event_id != event_id.strip()
    ):
        raise _RowError(
            "event_id", f"expected an event id (printable text, no spaces around it), got {event_id!r}"
        )
    if len(event_id) > EVENT_ID_MAX:
        raise _RowError("event_id", f"at most {EVENT_ID_MAX} characters, got {len(event_id)}")
    return event_id


def _row_event(row: dict[str, Any], resolver: _Resolver, source: str) -> LabelEvent:
    unknown = sorted(set(row) - set(COLUMNS))
    if unknown:
        raise _RowError(unknown[0], f"unknown column; expected {', '.join(COLUMNS)}")
    for column in ("judge", "repeat"):
        if row.get(column) is not None and not isinstance(row[column], bool):
            raise _RowError(column, f"expected true or false, got {row[column]!r}")
    source = "judge" if row.get("judge") else source
    for column in REQUIRED:
        _text(row, column)
    annotator = resolver.user(row["annotator"])
    try:
        kind = get_kind(row["task_kind"])
    except LabelError as exc:
        raise _RowError("task_kind", str(exc)) from exc
    task = resolver.task(kind.name, row["item_id"])
    action, spent, comment = _scalars(row)
    try:
        timestamp = parse_timestamp(row["timestamp"], "")
    except InputError as exc:
        raise _RowError("timestamp", str(exc).removeprefix(": field timestamp: ")) from exc
    values = _values(row, action, task)
    arm, suggestion_id = _arm(row, resolver, task)
    if row.get("repeat") and (action != "label" or arm):
        raise _RowError("repeat", "a repeat is a label (action label, no assist_arm)")
    event_id = _event_id(row)
    key = [
        annotator,
        kind.name,
        task.task_id,
        values,
        spent,
        timestamp,
        action,
        comment,
        source,
        *([arm, suggestion_id] if arm else []),  # an id as before for a row without an arm
        *(["repeat"] if row.get("repeat") else []),
    ]
    event = LabelEvent(
        event_id=event_id or "imp_" + content_hash(key, 24),
        task_id=task.task_id,
        kind=kind.name,
        annotator=annotator,
        action="repeat" if row.get("repeat") else action,
        values=values,
        comment=comment,
        time_spent_s=spent,
        source=source,
        created_at=timestamp,
        assist_arm=arm,
        suggestion_id=suggestion_id,
        guidelines_version=resolver.version(kind.name, row.get("guidelines_version")),
    )
    recorded = resolver.recorded(event.event_id) if event_id else None
    if recorded is not None and not same_content(recorded, event):
        raise _RowError(
            "event_id",
            f"event {printable(event_id or '')!r} is in this project with other content "
            "(an edited export? clear its event_id to import the row as a new label)",
        )
    return event


def _chain(events: list[LabelEvent], store: ProjectStore) -> list[LabelEvent]:
    """Link each event to the one it replaces (the latest of the same task and annotator)."""
    latest = {(e.task_id, e.annotator): e.event_id for e in store.labels.events()}
    out = []
    for ev in events:
        prior = latest.get((ev.task_id, ev.annotator))
        if prior is not None and prior != ev.event_id:
            ev = ev.model_copy(update={"supersedes": prior})
        latest[(ev.task_id, ev.annotator)] = ev.event_id
        out.append(ev)
    return out


def import_labels(
    store: ProjectStore,
    path: str | Path,
    fmt: str | None = None,
    source: str = "import",
    guidelines: Callable[[str], str] | None = None,
) -> ImportResult:
    """Validate every row of a labels file, then record them all in one transaction (or none).
    ``guidelines(kind)``: the kind's guidelines as annotators are shown them now (``Project.guidelines``),
    whose version rows that name none record (kept in the store once every row passed)."""
    if source not in SOURCES:
        raise LabelsFileError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    path = Path(path)
    resolver = _Resolver(store, guidelines)
    labelled = {(e.task_id, e.annotator) for e in store.labels.events() if e.action == "label"}  # repeated
    repeats = {(e.task_id, e.annotator): e for e in store.repeats.events()}  # the project's, else the file's
    events: dict[str, LabelEvent] = {}
    for line, row in read_rows(path, fmt):
        try:
            event = _row_event(row, resolver, source)
            first = events.setdefault(event.event_id, event)  # an identical row twice is one event
            if not same_content(first, event):
                raise _RowError(
                    "event_id",
                    f"event {printable(event.event_id)!r} is on an earlier line with other content",
                )
            key, who = (event.task_id, event.annotator), printable(event.annotator)
            labelled.update([key] if event.action == "label" else [])
            if event.action == "repeat" and key not in labelled:
                raise _RowError("repeat", f"{who} has no label of this item to repeat (a label comes first)")
            if event.action == "repeat" and repeats.setdefault(key, event).values != event.values:
                raise _RowError(
                    "repeat", f"a repeat of this item by {who} is already recorded with other values"
                )
        except _RowError as exc:
            raise LabelsFileError(f"{path}:{line}: {exc}") from exc
        except ValidationError as exc:
            raise LabelsFileError(f"{path}:{line}: {validation_line(exc, root='')}") from exc
    new = [e for e in events.values() if resolver.recorded(e.event_id) is None]  # exported labels coming back
    again = [e for e in new if e.action == "repeat" and repeats[(e.task_id, e.annotator)] is e]
    labels = _chain([e for e in new if e.action != "repeat"], store)
    for kind, (version, text) in resolver.shown.items():
        store.guidelines.record(kind, version, text)
    written = store.labels.append_events(labels, repeats=again) if labels or again else 0
    return ImportResult(rows=len(events), written=written)


# -- exporting -------------------------------------------------------------------------------------------
def export_rows(
    store: ProjectStore, all_events: bool = False, kind: str | None = None
) -> list[dict[str, Any]]:
    """Rows in file order: the live event per (task, annotator), or every event with ``all_events``."""
    if kind is not None:
        get_kind(kind)  # an unknown kind is an error, not an empty file
    item_refs = {t.task_id: t.item_ref for t in store.labels.tasks(kind=kind)}
    events = store.labels.events(kind=kind) if all_events else store.labels.effective_events(kind)
    if all_events:
        events += store.repeats.events(kind=kind)
    return [
        {
            "annotator": ev.annotator,
            "task_kind": ev.kind,
            "item_id": item_refs[ev.task_id],
            "values": ev.values,
            "time_spent_s": ev.time_spent_s,
            "timestamp": ev.created_at,
            "action": ev.action,
            "comment": ev.comment,
            "judge": ev.source == "judge",
            "assist_arm": ev.assist_arm,
            "suggestion_id": ev.suggestion_id,
            "event_id": ev.event_id,
            "guidelines_version": ev.guidelines_version,
        }
        | ({"repeat": True, "action": "label"} if ev.action == "repeat" else {})
        for ev in events
    ]


def write_rows(rows: list[dict[str, Any]], out: TextIO, fmt: str) -> None:
    """Rows as JSONL (one object per line) or CSV (``values`` as a JSON string, ``None`` as empty)."""
    if fmt not in FORMATS:
        raise LabelsFileError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    # the repeat column only when there is a repeat: other exports keep their columns
    columns = COLUMNS if any(row.get("repeat") for row in rows) else COLUMNS[:-1]
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        cells = {**row, "values": canonical_json(row["values"]), "judge": "true" if row["judge"] else "false"}
        writer.writerow({k: csv_cell(v) for k, v in cells.items()})  # OWASP: no cell is a formula


def export_labels(
    store: ProjectStore, out: TextIO, fmt: str = "jsonl", all_events: bool = False, kind: str | None = None
) -> int:
    """Write the project's labels to ``out``; returns the number of rows."""
    rows = export_rows(store, all_events=all_events, kind=kind)
    write_rows(rows, out, fmt)
    return len(rows)
