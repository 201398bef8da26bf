"""Push prefkit tasks to a Label Studio server and pull its annotations back as label events.

- push: one Label Studio project per (server, task kind), its labeling config and guidelines kept up
  to date, ``maximum_annotations`` = the project's overlap k, tasks imported in chunks with the prefkit
  task id in their data, gold answers uploaded as ground-truth annotations. A task already mapped is
  never imported again, and a push interrupted between import and bookkeeping is reconciled from the
  tasks' data on the next push.
- pull: every annotation becomes a ``LabelEvent`` (source ``labelstudio``) whose values passed the
  config check and ``TaskKind.validate``; an edited annotation supersedes its earlier event, a deleted
  one is withdrawn, a skipped one is a ``skip``. Label Studio users map to prefkit annotators by email.
- status: tasks, annotations, annotators and completion per Label Studio project.

Only this module (and the test helpers in ``accounts.py``) talks to Label Studio, through
label-studio-sdk 2.x.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from annotate_app.labelstudio.config import TASK_ID_KEY, ls_kind, task_data
from curation.annotation.task_kinds import LabelError
from schemas.common import PrefkitError, content_hash, utcnow
from schemas.curation import AnnotationTask, LabelEvent

if TYPE_CHECKING:
    from curation.project import Project
    from curation.store.labelstudio import LSAnnotation

ENV_URL = "LABEL_STUDIO_URL"
ENV_KEY = "LABEL_STUDIO_API_KEY"
# Tasks per import request: a small first request so Label Studio starts while the rest is built and
# stored, then large ones (Label Studio's import costs per task, plus a little per request;
# bench/bench_labelstudio.py measures the push against one plain SDK import of the same tasks).
FIRST_CHUNK = 5_000
IMPORT_CHUNK = 25_000
# Label Studio takes up to 200 MB per request; stay well below.
IMPORT_BYTES = 64 * 2**20
# Seconds to wait for one import request (25,000 tasks took up to ~40 s on 2 busy cores).
IMPORT_TIMEOUT_S = 900


class LabelStudioError(PrefkitError):
    """Label Studio is unreachable, refuses the token, or the project is not pushed yet."""


def connect(url: str, api_key: str | None = None, timeout: float = 120) -> LabelStudio:
    """An SDK client for ``url``; the token comes from ``api_key`` or ``$LABEL_STUDIO_API_KEY``."""
    key = api_key or os.environ.get(ENV_KEY)
    if not key:
        raise LabelStudioError(
            f"no Label Studio API token: set {ENV_KEY} (Account & Settings → Access Token)"
        )
    return LabelStudio(base_url=url.rstrip("/"), api_key=key, timeout=timeout)


def _call(what: str, fn, *args, **kwargs):
    """Run one SDK call; network and API failures become one clear line."""
    try:
        return fn(*args, **kwargs)
    except httpx.HTTPError as exc:
        raise LabelStudioError(
            f"{what}: cannot reach Label Studio ({exc.__class__.__name__}: {exc})"
        ) from exc
    except ApiError as exc:
        raise LabelStudioError(
            f"{what}: Label Studio answered {exc.status_code}: {str(exc.body)[:300]}"
        ) from exc


def instructions_html(markdown: str) -> str:
    """Guidelines (Markdown) as the simple HTML Label Studio shows in its instructions panel."""
    from html import escape

    paragraphs = [p.strip() for p in markdown.split("\n\n") if p.strip()]
    html = []
    for p in paragraphs:
        text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", escape(p))
        text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
        if text.startswith("#"):
            html.append(f"<h3>{text.lstrip('#').strip()}</h3>")
        else:
            html.append("<p>" + text.replace("\n", "<br/>") + "</p>")
    return "\n".join(html)


# -- push -----------------------------------------------------------------------------------------
@dataclass
class PushReport:
    kind: str
    url: str
    ls_project_id: int
    project_created: bool
    imported: int = 0
    requests: int = 0
    gold: int = 0
    already: int = 0
    reconciled: int = 0
    not_pushed: list[str] = field(default_factory=list)


def _project_settings(project: Project, kind: str, overlap: int) -> dict[str, Any]:
    return {
        "title": f"{project.name} · {kind}"[:50],
        "label_config": ls_kind(kind).xml(),
        "expert_instruction": instructions_html(project.guidelines(kind)),
        "show_instruction": True,
        "maximum_annotations": overlap,
        "show_skip_button": True,
    }


def ensure_project(
    client: LabelStudio, project: Project, kind: str, url: str, overlap: int
) -> tuple[int, bool]:
    """The Label Studio project of ``kind`` (created when missing), with current settings."""
    settings = _project_settings(project, kind, overlap)
    pid = project.store.labelstudio.project_id(url, kind)
    if pid is not None:
        try:
            _call(f"updating Label Studio project {pid}", client.projects.update, pid, **settings)
            return pid, False
        except LabelStudioError as exc:
            if not isinstance(exc.__cause__, ApiError) or exc.__cause__.status_code != 404:
                raise
            # Deleted in Label Studio: a new project gets every task; pulled labels stay in prefkit.
    created = _call("creating the Label Studio project", client.projects.create, **settings)
    project.store.labelstudio.set_project(url, kind, int(created.id), settings["title"])
    return int(created.id), True


def _reconcile(client: LabelStudio, project: Project, url: str, pid: int, mapped: dict[str, int]) -> int:
    """Map tasks present in Label Studio but missing from the store (a push interrupted between an
    import and its bookkeeping); ``mapped`` is updated in place."""
    info = _call("reading the Label Studio project", client.projects.get, pid)
    if (info.task_number or 0) <= len(mapped):
        return 0
    found: dict[str, int] = {}
    for t in _call("listing Label Studio tasks", client.tasks.list, project=pid, fields="all", page_size=500):
        task_id = (t.data or {}).get(TASK_ID_KEY)
        if task_id and task_id not in mapped:
            found[task_id] = int(t.id)
    added = project.store.labelstudio.add_tasks(url, pid, found, only_stored=True)
    mapped.update(project.store.labelstudio.task_ids(url, pid))
    return added


def _import_item(task: AnnotationTask) -> dict[str, Any]:
    item: dict[str, Any] = {"data": task_data(task)}
    if task.is_gold and task.gold_answer:
        result = ls_kind(task.kind).results(task.gold_answer, task)
        item["annotations"] = [{"result": result, "ground_truth": True}]
    return item


def _tasks_to_push(
    project: Project, kind: str, url: str, pid: int, overlap: int, new_ids: set[str]
) -> Iterator[AnnotationTask]:
    """The tasks of ``kind`` the Label Studio project lacks, as they are built.

    Does what ``prefkit tasks create`` does (see :func:`curation.annotation.task_admin.create_tasks`)
    in one pass (``TaskKind.iter_tasks``): each new task is built and validated once and handed on,
    never read back; its id goes into ``new_ids`` (the caller stores it, a chunk at a time). Stored
    tasks are read only when Label Studio lacks them, and come last; a stored task whose answer has
    become known is marked gold first.
    """
    from curation.annotation.task_kinds import get_kind

    stored, todo = project.store.labelstudio.push_state(url, pid, kind)
    unpushed = {t.task_id: t for t in todo}
    for task in get_kind(kind).iter_tasks(project.store, overlap, "default"):
        if task.item_ref not in stored:
            new_ids.add(task.task_id)
            yield task
        elif task.is_gold and not stored[task.item_ref][1]:  # stored before its answer was known
            project.store.labels.set_gold(task.task_id, task.gold_answer)
            if task.task_id in unpushed:
                unpushed[task.task_id].is_gold = True
                unpushed[task.task_id].gold_answer = task.gold_answer
    yield from todo


def _chunks(
    tasks: Iterator[AnnotationTask], first: int, size: int
) -> Iterator[tuple[list[AnnotationTask], list[dict[str, Any]]]]:
    """(tasks, import items) a request at a time: a small first request (Label Studio starts working
    while the rest is built), then ``size`` tasks, fewer when the first request's items are so large
    that ``size`` of them would pass ``IMPORT_BYTES``."""
    n, first_part = max(1, min(first, size)), True
    while part := list(itertools.islice(tasks, n)):
        items = [_import_item(t) for t in part]
        if first_part:
            per_item = len(json.dumps(items).encode()) / len(items)
            size, first_part = max(1, min(size, int(IMPORT_BYTES / per_item))), False
        yield part, items
        n = size


class _Importer:
    """Import requests sent one at a time from a background thread, so the next chunk is built and
    stored while Label Studio works on the current one. After a failure nothing more is sent."""

    def __init__(self, client: LabelStudio, pid: int):
        self.client, self.pid = client, pid
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ls-import")
        self.failed = threading.Event()

    def submit(self, items: list[dict[str, Any]]) -> Future[list[int]]:
        return self.pool.submit(self._send, items)

    def _send(self, items: list[dict[str, Any]]) -> list[int]:
        if self.failed.is_set():
            raise LabelStudioError("not imported: an earlier import request failed")
        try:
            resp = _call(
                "importing tasks",
                self.client.projects.import_tasks,
                self.pid,
                request=items,
                return_task_ids=True,
                # Never resent: a request whose answer was lost may have been imported (the SDK would
                # retry it on a 5xx or a dropped connection and import the tasks twice); the next push
                # maps such tasks from their data instead.
                request_options={"max_retries": 0, "timeout_in_seconds": IMPORT_TIMEOUT_S},
            )
        except BaseException:
            self.failed.set()
            raise
        ids = [int(i) for i in resp.task_ids or []]
        if len(ids) != len(items):
            self.failed.set()
            raise LabelStudioError(
                f"Label Studio returned {len(ids)} task ids for {len(items)} imported tasks"
            )
        return ids

    def close(self) -> None:
        self.failed.set()  # whatever is still queued is not sent
        self.pool.shutdown(wait=True)


def push(
    project: Project,
    kind: str,
    url: str,
    api_key: str | None = None,
    chunk: int = IMPORT_CHUNK,
    first_chunk: int = FIRST_CHUNK,
) -> PushReport:
    """Create or update the Label Studio project of ``kind`` and import the tasks it lacks.

    Each task is built once, imported in a few large requests (``return_task_ids`` maps them to
    Label Studio's ids without listing anything) and its mapping row written in one transaction per
    request. A failed request stops the push; what was imported before it stays mapped, and the next
    push imports only the rest (or maps, from the tasks' data, a request whose answer was lost)."""
    lsk = ls_kind(kind)
    overlap = project.config.annotation.overlap
    if overlap < 1:
        raise LabelStudioError("overlap must be at least 1")
    client = connect(url, api_key)
    pid, created = ensure_project(client, project, kind, url, overlap)
    report = PushReport(kind, url, pid, created)
    mapped = project.store.labelstudio.task_ids(url, pid)
    report.reconciled = _reconcile(client, project, url, pid, mapped)
    report.already = len(mapped)
    new_ids: set[str] = set()
    unfit: list[AnnotationTask] = []

    def fitting() -> Iterator[AnnotationTask]:
        for task in _tasks_to_push(project, kind, url, pid, overlap, new_ids):
            if task.task_id in mapped:  # reconciled just now
                continue
            why = lsk.fits(task)
            if why:
                report.not_pushed.append(f"{task.task_id}: {why}")
                unfit.append(task)
            else:
                yield task

    importer = _Importer(client, pid)
    pending: tuple[list[AnnotationTask], Future[list[int]]] | None = None
    try:
        for part, items in _chunks(fitting(), first_chunk, chunk):
            # Stored before they are sent (while Label Studio imports the previous request): a task in
            # Label Studio is always one the store holds, so a lost answer can be reconciled.
            if fresh := [t for t in part if t.task_id in new_ids]:
                project.store.labels.add_tasks(fresh)
            future = importer.submit(items)
            if pending:
                _mapped(project, report, url, pid, *pending)
            pending = (part, future)
        if pending:
            _mapped(project, report, url, pid, *pending)
    finally:
        importer.close()
    if fresh_unfit := [t for t in unfit if t.task_id in new_ids]:
        project.store.labels.add_tasks(fresh_unfit)  # stored like every task; labelled in the prefkit app
    return report


def _mapped(
    project: Project,
    report: PushReport,
    url: str,
    pid: int,
    part: list[AnnotationTask],
    future: Future[list[int]],
) -> None:
    """Wait for one import request and record its id map (one transaction)."""
    ids = future.result()
    project.store.labelstudio.add_tasks(url, pid, {t.task_id: i for t, i in zip(part, ids, strict=True)})
    report.imported += len(part)
    report.requests += 1
    report.gold += sum(1 for t in part if t.is_gold and t.gold_answer)


# -- pull -----------------------------------------------------------------------------------------
@dataclass
class PullReport:
    kind: str
    url: str
    ls_project_id: int
    labels: int = 0
    updated: int = 0
    skips: int = 0
    withdrawn: int = 0
    unchanged: int = 0
    invalid: list[str] = field(default_factory=list)
    users_created: list[str] = field(default_factory=list)


def _export(client: LabelStudio, pid: int) -> list[dict[str, Any]]:
    chunks = _call(
        "exporting annotations",
        lambda: b"".join(client.projects.exports.download_sync(pid, export_type="JSON")),
    )
    return json.loads(chunks or b"[]")


def _username_for(email: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]", "_", email.split("@")[0]) or "annotator"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


class AnnotatorMap:
    """Label Studio user id → prefkit annotator (matched by email; unknown users are created)."""

    def __init__(self, project: Project, client: LabelStudio, report: PullReport):
        self.store, self.report = project.store, report
        users = _call("listing Label Studio users", client.users.list)
        self.emails = {int(u.id): u.email for u in users if u.email}
        self.cache: dict[int, str] = {}

    def __call__(self, completed_by: Any) -> str:
        ls_id = int(completed_by["id"] if isinstance(completed_by, dict) else completed_by)
        if ls_id not in self.cache:
            self.cache[ls_id] = self._resolve(ls_id)
        return self.cache[ls_id]

    def _resolve(self, ls_id: int) -> str:
        email = self.emails.get(ls_id)
        if not email:
            raise LabelError(f"completed by Label Studio user {ls_id}, who has no email or no longer exists")
        user = self.store.accounts.user_by_email(email)
        if user is not None:
            return user.username
        username = _username_for(email, {u.username for u in self.store.accounts.users()})
        try:
            # A random password nobody is told: the account exists for attribution, not for signing in.
            self.store.accounts.add_user(username, "annotator", secrets.token_urlsafe(32), email=email)
        except PrefkitError:
            user = self.store.accounts.user_by_email(email)
            if user is None:
                raise
            return user.username  # a pull running at the same time created the account
        self.report.users_created.append(f"{username} <{email}>")
        return username


def _event_id(url: str, ann_id: int, *parts: Any) -> str:
    return "ls_" + content_hash([url, ann_id, *parts], 24)


def _label_event(
    task: AnnotationTask, ann: dict[str, Any], annotators: AnnotatorMap, url: str, prev: LSAnnotation | None
) -> LabelEvent:
    cancelled = bool(ann.get("was_cancelled"))
    values = {} if cancelled else ls_kind(task.kind).values(ann.get("result") or [], task)
    annotator = annotators(ann["completed_by"])  # after validation: an invalid result creates no account
    lead = ann.get("lead_time")
    return LabelEvent(
        event_id=_event_id(url, ann["id"], ann["updated_at"]),
        task_id=task.task_id,
        kind=task.kind,
        annotator=annotator,
        action="skip" if cancelled else "label",
        values=values,
        comment="skipped in Label Studio" if cancelled else None,
        time_spent_s=float(lead) if isinstance(lead, int | float) and lead >= 0 else None,
        supersedes=prev.event_id if prev else None,
        source="labelstudio",
        created_at=utcnow(),
    )


def _record(
    project: Project,
    report: PullReport,
    pid: int,
    task: AnnotationTask,
    ann: dict,
    annotators: AnnotatorMap,
    prev: LSAnnotation | None,
) -> None:
    try:
        event = _label_event(task, ann, annotators, report.url, prev)
    except LabelError as exc:
        report.invalid.append(
            f"task {task.task_id} (Label Studio task {ann.get('task')}, annotation {ann['id']}): {exc}"
        )
        return
    new = project.store.labelstudio.record_annotation(
        event, report.url, pid, int(ann["id"]), updated_at=ann["updated_at"]
    )
    if not new:  # a pull running at the same time recorded it first
        report.unchanged += 1
    elif event.action == "skip":
        report.skips += 1
    elif prev:
        report.updated += 1
    else:
        report.labels += 1


def _withdraw(project: Project, report: PullReport, pid: int, ann_id: int, row: LSAnnotation) -> None:
    task = project.store.labels.task(row.task_id)
    event = LabelEvent(
        event_id=_event_id(report.url, ann_id, "withdraw", row.updated_at),
        task_id=task.task_id,
        kind=task.kind,
        annotator=row.annotator,
        action="withdraw",
        comment="annotation deleted in Label Studio",
        supersedes=row.event_id,
        source="labelstudio",
        created_at=utcnow(),
    )
    new = project.store.labelstudio.record_annotation(
        event, report.url, pid, ann_id, updated_at=row.updated_at, withdrawn=True
    )
    if new:
        report.withdrawn += 1
    else:
        report.unchanged += 1


def pull(project: Project, kind: str, url: str, api_key: str | None = None) -> PullReport:
    """Record every new, edited, skipped or deleted annotation of ``kind`` as label events."""
    ls_kind(kind)
    pid = project.store.labelstudio.project_id(url, kind)
    if pid is None:
        raise LabelStudioError(
            f"{kind} was never pushed to {url}; run `prefkit labelstudio push {kind} --url {url}`"
        )
    client = connect(url, api_key)
    report = PullReport(kind, url, pid)
    annotators = AnnotatorMap(project, client, report)
    by_ls_id = {ls_id: task_id for task_id, ls_id in project.store.labelstudio.task_ids(url, pid).items()}
    tasks = {t.task_id: t for t in project.store.labels.tasks(kind=kind)}
    known = project.store.labelstudio.annotations(url, pid)
    seen: set[int] = set()
    for ls_task in _export(client, pid):
        task = tasks.get(by_ls_id.get(int(ls_task["id"])) or (ls_task.get("data") or {}).get(TASK_ID_KEY, ""))
        for ann in ls_task.get("annotations") or []:
            if task is None:
                report.invalid.append(f"Label Studio task {ls_task['id']}: no prefkit {kind} task for it")
                break
            if ann.get("ground_truth") and task.is_gold:
                continue  # the gold answer push uploaded, not anyone's label
            seen.add(int(ann["id"]))
            prev = known.get(int(ann["id"]))
            if prev and prev.updated_at == ann["updated_at"] and not prev.withdrawn:
                report.unchanged += 1
                continue
            _record(project, report, pid, task, ann, annotators, prev)
    for ann_id, row in known.items():
        if ann_id not in seen and not row.withdrawn:
            _withdraw(project, report, pid, ann_id, row)
    return report


# -- status ---------------------------------------------------------------------------------------
def status(project: Project, url: str | None = None, api_key: str | None = None) -> list[dict[str, Any]]:
    """Per Label Studio project: tasks, annotations, annotators, completion (tasks with k annotations)."""
    rows = []
    for p in project.store.labelstudio.projects(url):
        client = connect(p.url, api_key)
        info = _call(f"reading Label Studio project {p.ls_project_id}", client.projects.get, p.ls_project_id)
        annotators = _call("listing annotators", client.projects.list_unique_annotators, p.ls_project_id)
        pulled = project.store.labelstudio.annotations(p.url, p.ls_project_id)
        tasks = info.task_number or 0
        finished = info.finished_task_number or 0
        rows.append(
            {
                "kind": p.kind,
                "url": p.url,
                "project": p.ls_project_id,
                "tasks": tasks,
                "annotations": info.total_annotations_number or 0,
                "annotators": len(annotators),
                "pulled": sum(1 for r in pulled.values() if not r.withdrawn),
                "completion": f"{finished}/{tasks} ({(finished / tasks if tasks else 0):.0%})",
            }
        )
    return rows
