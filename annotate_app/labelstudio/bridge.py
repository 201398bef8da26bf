"""Push prefkit tasks to a Label Studio server and pull its annotations back as label events.

- push: one Label Studio project per (server, task kind), tasks imported in chunks with the prefkit
  task id in their data, gold answers as ground-truth annotations; a push interrupted between import
  and bookkeeping is reconciled on the next one, and pushes of one kind to one server take turns (a
  lease in the store). Suggestions go as ``predictions`` on the assisted arm only.
- pull: every annotation becomes a ``LabelEvent`` (source ``labelstudio``) whose values passed the
  config check and ``TaskKind.validate``; edits supersede, deletions withdraw, skips are ``skip``.
- status: tasks, annotations, annotators and completion per Label Studio project.

The details are in docs/labelstudio.md. Only this module (and the test helpers in ``accounts.py``)
talks to Label Studio, through label-studio-sdk 2.x.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError
from prefkit.annotate_app.labelstudio.config import TASK_ID_KEY, ls_kind, task_data
from prefkit.curation.annotation import overlap as adaptive
from prefkit.curation.annotation.guidelines import VERSION, current_version
from prefkit.curation.annotation.overlap import apply_overlap, first_target
from prefkit.curation.annotation.suggestions import EVERYONE, Exposure, exposure
from prefkit.curation.annotation.task_kinds import LabelError, get_kind
from prefkit.curation.store import LSPushLease
from prefkit.schemas.common import PrefkitError, content_hash, parse_utc, utcnow
from prefkit.schemas.config import OverlapRange
from prefkit.schemas.curation import AnnotationTask, LabelEvent
from prefkit.schemas.environment import LABEL_STUDIO_API_KEY

if TYPE_CHECKING:
    from prefkit.curation.project import Project
    from prefkit.curation.store import LSAnnotation

# Tasks are built, stored and encoded a part at a time: the first part is ``BATCH`` tasks, so Label
# Studio starts on the first import request while the rest is built; each later part is twice the
# one before (fewer, larger store transactions) up to ``IMPORT_CHUNK``. A request takes every part
# stored while the previous one ran, up to ``IMPORT_CHUNK`` tasks and ``IMPORT_BYTES``. The last
# ``TAIL`` tasks go alone in the last request, so the id map written after its answer is short (the
# one before is written while Label Studio imports them). Label Studio's import costs per task, plus
# ~30 ms of its CPU per request; bench/bench_labelstudio.py measures the push against one plain SDK
# import of the same tasks.
BATCH = 1_000
TAIL = 2_500
PART_BYTES = 16 * 2**20
IMPORT_CHUNK = 25_000
# Label Studio takes up to 200 MB per request; stay well below.
IMPORT_BYTES = 64 * 2**20
# Seconds to wait for one import request (25,000 tasks took up to ~40 s on 2 busy cores).
IMPORT_TIMEOUT_S = 900


# One push per (server, kind) at a time: the push holds a lease in the store, renewed every
# LEASE_RENEW_S; a lease not renewed for LEASE_STALE_S (its process was killed or hangs), or held by a
# process that no longer exists on this host, is taken over. A second push waits up to PUSH_WAIT_S.
LEASE_RENEW_S = 5.0
LEASE_STALE_S = 60.0
LEASE_POLL_S = 0.5
PUSH_WAIT_S = 600.0


class LabelStudioError(PrefkitError):
    """Label Studio is unreachable, refuses the token, or the project is not pushed yet."""


def connect(url: str, api_key: str | None, timeout: float = 120) -> LabelStudio:
    """An SDK client for ``url`` with the token ``api_key`` (the callers pass ``$LABEL_STUDIO_API_KEY``
    from ``project.env`` when they are given none)."""
    if not api_key:
        raise LabelStudioError(
            f"no Label Studio API token: set {LABEL_STUDIO_API_KEY} (Account & Settings → Access Token)"
        )
    return LabelStudio(base_url=url.rstrip("/"), api_key=api_key, timeout=timeout)


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
    suggestions_added: int = 0  # suggestions made after their task was pushed, added to it now
    suggestions_withheld: int = 0  # ... left out: people had already answered (or skipped) the task


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


#: Task data key of a task's arm and suggestion id (not shown by any labeling config).
ASSIST_KEY = "prefkit_assist"
#: Task data key of the guidelines version pushed with the task (its labels record it when pulled).
GUIDELINES_KEY = "prefkit_guidelines_version"


def _import_item(
    task: AnnotationTask, shown: Exposure | None = None, version: str | None = None
) -> dict[str, Any]:
    item: dict[str, Any] = {"data": task_data(task)}
    if version is not None:
        item["data"][GUIDELINES_KEY] = version
    if task.is_gold and task.gold_answer:
        result = ls_kind(task.kind).results(task.gold_answer, task)
        item["annotations"] = [{"result": result, "ground_truth": True}]
    if shown is not None:
        item["data"][ASSIST_KEY] = {"arm": shown.arm, "suggestion_id": shown.suggestion_id}
        if shown.arm == "assisted" and shown.values is not None:  # a control task gets no prediction
            result = ls_kind(task.kind).results(shown.values, task)
            item["predictions"] = [
                {"result": result, "model_version": f"{shown.model} {shown.suggestion_id}"}
            ]
    return item


def _exposures(project: Project, kind: str) -> Callable[[AnnotationTask], Exposure | None]:
    """Each task's exposure in Label Studio: the newest suggestion, the arm drawn per item."""
    suggestions = project.store.suggestions.latest(kind)
    share = project.config.annotation.assist_control_share
    return lambda task: exposure(suggestions.get(task.task_id), EVERYONE, task, share)


def _tasks_to_push(
    project: Project, kind: str, url: str, pid: int, overlap: int | OverlapRange, new_ids: set[str]
) -> Iterator[AnnotationTask]:
    """The tasks of ``kind`` the Label Studio project lacks, as they are built.

    Does what ``prefkit tasks create`` does (see :func:`prefkit.curation.annotation.task_admin.create_tasks`)
    in one pass (``TaskKind.iter_tasks``): each new task is built and validated once and handed on,
    never read back; its id goes into ``new_ids`` (the caller stores it, a chunk at a time). Stored
    tasks are read only when Label Studio lacks them, and come last; a stored task whose answer has
    become known is marked gold first.
    """
    stored, todo = project.store.labelstudio.push_state(url, pid, kind)
    unpushed = {t.task_id: t for t in todo}
    for task in get_kind(kind).iter_tasks(project.store, first_target(overlap), "default"):
        if task.item_ref not in stored:
            new_ids.add(task.task_id)
            yield apply_overlap([task], overlap)[0]
        elif task.is_gold and not stored[task.item_ref][1]:  # stored before its answer was known
            project.store.labels.set_gold(task.task_id, task.gold_answer)
            if task.task_id in unpushed:
                unpushed[task.task_id].is_gold = True
                unpushed[task.task_id].gold_answer = task.gold_answer
    yield from todo


@dataclass
class _Part:
    tasks: list[AnnotationTask]
    items: list[bytes]  # each task's import item, JSON-encoded once
    size: int  # bytes of the items
    last: bool = False  # sent alone, as the last request


def _parts(
    tasks: Iterator[AnnotationTask],
    first: int,
    largest: int,
    tail: int = TAIL,
    shown: Callable[[AnnotationTask], Exposure | None] = lambda task: None,
    version: str | None = None,
) -> Iterator[_Part]:
    """The tasks with their encoded import items (``shown``: each task's suggestion exposure;
    ``version``: the kind's guidelines version pushed with them):
    ``first`` tasks, then parts twice as large as the one before up to ``largest`` (or
    ``PART_BYTES``); the last ``tail`` tasks in a part of their own."""
    size = max(1, min(first, largest))
    part = _Part([], [], 0)
    for task in tasks:
        item = json.dumps(_import_item(task, shown(task), version), separators=(",", ":")).encode()
        part.tasks.append(task)
        part.items.append(item)
        part.size += len(item) + 1
        if len(part.tasks) >= size or part.size >= PART_BYTES:
            yield part
            part, size = _Part([], [], 0), min(2 * size, largest)
    # ``part`` holds the tasks after the last full part; ``tail`` of them end the push alone.
    if len(part.tasks) > tail:
        k = len(part.tasks) - tail
        yield _Part(part.tasks[:k], part.items[:k], sum(len(i) + 1 for i in part.items[:k]))
        part = _Part(part.tasks[k:], part.items[k:], sum(len(i) + 1 for i in part.items[k:]))
    if part.tasks:
        part.last = True
        yield part


_DONE = object()


class _Importer:
    """Sends the import requests from one background thread while the caller builds and stores the
    next tasks. A request takes every part handed over since the previous one was sent (at least one
    part, at most ``max_tasks`` tasks and ``IMPORT_BYTES``): the first goes as soon as the first part
    is stored, later ones grow with what was built meanwhile, so Label Studio never waits for a
    fixed-size chunk to be built. Answers come back in order (:meth:`answers`); after a failed request
    nothing more is sent."""

    def __init__(self, client: LabelStudio, pid: int, max_tasks: int, may_send: Callable[[], None]):
        self.client, self.pid, self.max_tasks, self.may_send = client, pid, max(1, max_tasks), may_send
        self._ready: deque[_Part] = deque()
        self._cond = threading.Condition()
        self._closed = self._stopped = self._finished = False
        self._answers: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ls-import", daemon=True)
        self._thread.start()

    def put(self, part: _Part) -> None:
        """Hand over stored tasks and their encoded import items."""
        with self._cond:
            self._ready.append(part)
            self._cond.notify()

    def close(self) -> None:
        """No more parts: what was handed over is still sent."""
        with self._cond:
            self._closed = True
            self._cond.notify()

    def stop(self) -> None:
        """Send nothing more; wait for the request in flight (its answer is not mapped: the next
        push reconciles those tasks from their data)."""
        with self._cond:
            self._stopped = True
            self._ready.clear()
            self._cond.notify()
        self._thread.join()

    def answers(self, wait: bool) -> Iterator[tuple[list[AnnotationTask], list[int]]]:
        """(tasks, Label Studio ids) of each request answered so far, in order; ``wait``: of every
        request, until the last is answered. Raises the error of a failed request."""
        while not self._finished:
            try:
                got = self._answers.get(block=wait)
            except queue.Empty:
                return
            if got is _DONE:
                self._finished = True
            elif isinstance(got, BaseException):
                raise got
            else:
                yield got

    def _take(self) -> tuple[list[AnnotationTask], list[bytes]] | None:
        with self._cond:
            while not (self._ready or self._closed or self._stopped):
                self._cond.wait()
            if self._stopped or not self._ready:
                return None
            tasks: list[AnnotationTask] = []
            items: list[bytes] = []
            size = 0
            while self._ready:
                part = self._ready[0]
                if tasks and (
                    part.last
                    or len(tasks) + len(part.tasks) > self.max_tasks
                    or size + part.size > IMPORT_BYTES
                ):
                    break
                self._ready.popleft()
                tasks += part.tasks
                items += part.items
                size += part.size
            return tasks, items

    def _run(self) -> None:
        try:
            while (taken := self._take()) is not None:
                tasks, items = taken
                self.may_send()  # raises when this push lost its lease
                ids = self._send(b"[" + b",".join(items) + b"]", len(tasks))
                self._answers.put((tasks, ids))
        except BaseException as exc:  # handed to the caller, who raises it
            self._answers.put(exc)
        finally:
            self._answers.put(_DONE)

    def _send(self, body: bytes, n: int) -> list[int]:
        # The SDK's own HTTP client (its auth, base URL and headers) with a body encoded once, as the
        # parts were built: the SDK's import_tasks would re-encode every item (jsonable_encoder), about
        # 1 s of CPU per 100,000 tasks, in the thread that must answer quickly.
        http = self.client._client_wrapper.httpx_client
        resp = _call(
            "importing tasks",
            http.request,
            f"api/projects/{self.pid}/import",
            method="POST",
            params={"return_task_ids": True},
            content=body,
            headers={"Content-Type": "application/json"},
            # Never resent: a request whose answer was lost may have been imported (a retry after a
            # 5xx or a dropped connection would import the tasks twice); the next push maps such
            # tasks from their data instead.
            request_options={"max_retries": 0, "timeout_in_seconds": IMPORT_TIMEOUT_S},
        )
        if resp.status_code >= 300:
            raise LabelStudioError(
                f"importing tasks: Label Studio answered {resp.status_code}: {resp.text[:300]}"
            )
        ids = [int(i) for i in resp.json().get("task_ids") or []]
        if len(ids) != n:
            raise LabelStudioError(f"Label Studio returned {len(ids)} task ids for {n} imported tasks")
        return ids


class _PushLease:
    """The lease a push holds on (server, kind) while it runs (see ``store.labelstudio``): taken
    before anything is read or sent, renewed from a background thread, given back at the end. The
    import thread calls :meth:`check` before each request, so a push whose lease was taken over
    (it stopped renewing for ``LEASE_STALE_S``) sends nothing more."""

    def __init__(self, project: Project, url: str, kind: str):
        now = utcnow()
        self.store = project.store.labelstudio
        self.lease = LSPushLease(
            url, kind, secrets.token_hex(16), socket.gethostname(), os.getpid(), now, now
        )
        self.renewed = time.monotonic()
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="ls-push-lease", daemon=True)

    def acquire(self, wait_s: float, on_wait: Callable[[LSPushLease], None] | None) -> None:
        deadline = time.monotonic() + wait_s
        told = False
        while (holder := self.store.take_push_lease(self.lease, _stopped)) is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LabelStudioError(
                    f"another push of {holder.kind} to {holder.url} is running ({holder.host}, pid "
                    f"{holder.pid}, since {holder.started_at}); waited {wait_s:.0f} s: push again when "
                    "it has finished, or wait longer with --wait"
                )
            if on_wait and not told:
                on_wait(holder)
                told = True
            time.sleep(min(LEASE_POLL_S, left))
        self.renewed = time.monotonic()
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_RENEW_S):
            try:
                if not self.store.renew_push_lease(self.lease):
                    self.lost = True
                    return
                self.renewed = time.monotonic()
            except Exception:  # the database is busy or away: check() stops the push if it lasts
                continue

    def check(self) -> None:
        """Raise when this push may no longer send: its lease was taken over, or has gone unrenewed
        so long that another push may take it."""
        if self.lost or time.monotonic() - self.renewed > LEASE_STALE_S - 2 * LEASE_RENEW_S:
            raise LabelStudioError(
                f"this push of {self.lease.kind} to {self.lease.url} could not keep its lease (the "
                "store did not answer, or another push took over); stopped before sending more: push again"
            )

    def release(self) -> None:
        """Give the lease back. Never raises (it runs after the push, maybe after its error): a
        lease the store could not take back is taken over once this process is gone."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with contextlib.suppress(Exception):
            self.store.release_push_lease(self.lease)


def _stopped(holder: LSPushLease) -> bool:
    """True when the push holding a lease has stopped: not renewed for ``LEASE_STALE_S``, or its
    process no longer exists on this host."""
    renewed = parse_utc(holder.renewed_at)
    if (datetime.now(UTC) - renewed).total_seconds() > LEASE_STALE_S:
        return True
    if holder.host != socket.gethostname():
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def push(
    project: Project,
    kind: str,
    url: str,
    api_key: str | None = None,
    chunk: int = IMPORT_CHUNK,
    batch: int = BATCH,
    wait_s: float = PUSH_WAIT_S,
    on_wait: Callable[[LSPushLease], None] | None = None,
) -> PushReport:
    """Create or update the Label Studio project of ``kind`` and import the tasks it lacks.

    One push of ``kind`` to ``url`` runs at a time: while another holds the lease this one waits (up
    to ``wait_s`` seconds, telling ``on_wait`` once who holds it), then starts from what that one
    stored and imported, or fails with a :class:`LabelStudioError` naming the holder.

    Each task is built once and stored a part at a time (``batch`` tasks first, then parts twice as
    large); the import requests (at most ``chunk`` tasks each; ``return_task_ids`` maps them to Label
    Studio's ids without listing anything) run in a background thread while the next tasks are built,
    and each request's id map is written in one transaction while the next request runs. A failed request stops the push; what was imported before
    it stays mapped, and the next push imports only the rest (or maps, from the tasks' data, a request
    whose answer was lost)."""
    ls_kind(kind)  # an unknown kind or one without a config is refused before anything else
    if first_target(project.config.annotation.overlap) < 1:
        raise LabelStudioError("overlap must be at least 1")
    client = connect(url, api_key or project.env.label_studio_api_key)
    lease = _PushLease(project, url, kind)
    lease.acquire(wait_s, on_wait)
    try:
        return _push(project, kind, url, client, lease, chunk, batch)
    finally:
        lease.release()


def _push(
    project: Project, kind: str, url: str, client: LabelStudio, lease: _PushLease, chunk: int, batch: int
) -> PushReport:
    lsk = ls_kind(kind)
    setting = project.config.annotation.overlap
    overlap = first_target(setting)  # the project's maximum_annotations; audit items get theirs per task
    pid, created = ensure_project(client, project, kind, url, overlap)
    report = PushReport(kind, url, pid, created)
    mapped = project.store.labelstudio.task_ids(url, pid)
    if not created:  # a project made just now holds no task: nothing to reconcile, no request
        report.reconciled = _reconcile(client, project, url, pid, mapped)
    report.already = len(mapped)
    new_ids: set[str] = set()
    unfit: list[AnnotationTask] = []

    def fitting() -> Iterator[AnnotationTask]:
        for task in _tasks_to_push(project, kind, url, pid, setting, new_ids):
            if task.task_id in mapped:  # reconciled just now
                continue
            why = lsk.fits(task)
            if why:
                report.not_pushed.append(f"{task.task_id}: {why}")
                unfit.append(task)
            else:
                yield task

    importer = _Importer(client, pid, chunk, lease.check)
    shown = _exposures(project, kind)
    try:
        version = current_version(project, project.store, kind)  # the text ensure_project sent
        for part in _parts(fitting(), batch, chunk, shown=shown, version=version):
            # Stored before they are sent: a task in Label Studio is always one the store holds, so a
            # lost answer can be reconciled.
            if fresh := [t for t in part.tasks if t.task_id in new_ids]:
                project.store.labels.add_tasks(fresh)
            importer.put(part)
            for tasks, ids in importer.answers(wait=False):
                _mapped(project, client, report, url, pid, tasks, ids, shown)
        importer.close()
        for tasks, ids in importer.answers(wait=True):
            _mapped(project, client, report, url, pid, tasks, ids, shown)
    finally:
        importer.stop()
    if fresh_unfit := [t for t in unfit if t.task_id in new_ids]:
        project.store.labels.add_tasks(fresh_unfit)  # stored like every task; labelled in the prefkit app
    lease.check()
    _add_suggestions(project, client, report, url, pid, kind, shown)
    return report


def _add_suggestions(
    project: Project,
    client: LabelStudio,
    report: PushReport,
    url: str,
    pid: int,
    kind: str,
    shown: Callable[[AnnotationTask], Exposure | None],
) -> None:
    """Suggestions newer than what a pushed task was given (``prefkit suggest`` after the push): on a
    task nobody has answered or skipped, the old prediction out, the new one in (assisted arm) and
    the task's data naming the arm; a task with answers keeps what its annotators saw. Label Studio
    is listed only when some task has a newer suggestion than the store says it handled."""
    latest = project.store.suggestions.latest(kind)
    handled = project.store.labelstudio.suggestions_handled(url, pid)
    pending = {
        ls_id: tid
        for tid, (ls_id, had) in handled.items()
        if tid in latest and latest[tid].suggestion_id != had
    }
    if not pending:
        return
    tasks = {t.task_id: t for t in project.store.labels.tasks(kind=kind)}
    http = client._client_wrapper.httpx_client
    done: dict[str, str] = {}
    listing = _call("listing Label Studio tasks", client.tasks.list, project=pid, fields="all", page_size=500)
    for t in listing:
        tid = pending.get(int(t.id))
        if tid is None or tid not in tasks:
            continue
        want = shown(tasks[tid])
        if want is None:
            continue
        data = dict(t.data or {})
        if (data.get(ASSIST_KEY) or {}).get("suggestion_id") == want.suggestion_id:
            done[tid] = want.suggestion_id  # already there (an earlier push's bookkeeping was lost)
            continue
        done[tid] = want.suggestion_id
        if (t.total_annotations or 0) or (t.cancelled_annotations or 0):
            report.suggestions_withheld += 1
            continue
        for old in t.predictions or []:
            old_id = old["id"] if isinstance(old, dict) else old.id
            _call("removing an older prediction", client.predictions.delete, id=old_id)
        if want.arm == "assisted" and want.values is not None:
            result = ls_kind(kind).results(want.values, tasks[tid])
            _call(
                "adding a suggestion",
                client.predictions.create,
                task=int(t.id),
                result=result,
                model_version=f"{want.model} {want.suggestion_id}",
            )
        data[ASSIST_KEY] = {"arm": want.arm, "suggestion_id": want.suggestion_id}
        resp = _call(
            f"naming the arm of Label Studio task {t.id}",
            http.request,
            f"api/tasks/{int(t.id)}",
            method="PATCH",
            json={"data": data},
        )
        if resp.status_code >= 300:
            raise LabelStudioError(
                f"updating Label Studio task {t.id}: Label Studio answered {resp.status_code}"
            )
        report.suggestions_added += 1
    project.store.labelstudio.set_suggestions(url, pid, done)


def set_overlap(client: LabelStudio, ls_task_id: int, overlap: int) -> None:
    """Ask Label Studio for ``overlap`` distinct annotators on one task: its ``overlap`` field, and
    ``is_labeled`` false (it is only raised above the annotators it had), so /next serves it again."""
    http = client._client_wrapper.httpx_client
    resp = _call(
        f"setting the overlap of Label Studio task {ls_task_id}",
        http.request,
        f"api/tasks/{ls_task_id}",
        method="PATCH",
        json={"overlap": overlap, "is_labeled": False},
    )
    if resp.status_code >= 300:
        raise LabelStudioError(
            f"setting the overlap of Label Studio task {ls_task_id}: Label Studio answered {resp.status_code}"
        )


def _mapped(
    project: Project,
    client: LabelStudio,
    report: PushReport,
    url: str,
    pid: int,
    tasks: list[AnnotationTask],
    ids: list[int],
    shown: Callable[[AnnotationTask], Exposure | None] = lambda task: None,
) -> None:
    """Record one answered import request's id map (one transaction), and the suggestions it sent."""
    project.store.labelstudio.add_tasks(url, pid, {t.task_id: i for t, i in zip(tasks, ids, strict=True)})
    sent = {t.task_id: e.suggestion_id for t in tasks if (e := shown(t)) is not None}
    project.store.labelstudio.set_suggestions(url, pid, sent)
    # Label Studio gives every imported task the project's maximum_annotations (the first target);
    # an audit item, or a stored task whose target went up, gets its own.
    base = first_target(project.config.annotation.overlap)
    for t, i in zip(tasks, ids, strict=True):
        if t.overlap != base:
            set_overlap(client, i, t.overlap)
    report.imported += len(tasks)
    report.requests += 1
    report.gold += sum(1 for t in tasks if t.is_gold and t.gold_answer)


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
    raised: list[str] = field(default_factory=list)  # adaptive overlap: items handed to one more annotator
    beyond: list[str] = field(default_factory=list)  # items past their overlap (their labels recorded)


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
    task: AnnotationTask,
    ann: dict[str, Any],
    annotators: AnnotatorMap,
    url: str,
    prev: LSAnnotation | None,
    assist: dict[str, Any] | None = None,
    version: Any = None,
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
        assist_arm=(assist or {}).get("arm"),
        suggestion_id=(assist or {}).get("suggestion_id"),
        # the version pushed with the task (None: pushed before versions were recorded)
        guidelines_version=version if isinstance(version, str) and VERSION.fullmatch(version) else None,
    )


def _record(
    project: Project,
    report: PullReport,
    pid: int,
    task: AnnotationTask,
    ann: dict,
    annotators: AnnotatorMap,
    prev: LSAnnotation | None,
    data: dict[str, Any],
) -> None:
    try:
        event = _label_event(
            task, ann, annotators, report.url, prev, data.get(ASSIST_KEY), data.get(GUIDELINES_KEY)
        )
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
    client = connect(url, api_key or project.env.label_studio_api_key)
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
            _record(project, report, pid, task, ann, annotators, prev, ls_task.get("data") or {})
    for ann_id, row in known.items():
        if ann_id not in seen and not row.withdrawn:
            _withdraw(project, report, pid, ann_id, row)
    _adapt(project, client, report, url, pid, kind)
    report.beyond = adaptive.beyond_overlap(project.store, kind)
    return report


def _adapt(project: Project, client: LabelStudio, report: PullReport, url: str, pid: int, kind: str) -> None:
    """Adaptive overlap after a pull: every item of the kind that could still get an annotator is
    decided as a submit in the app decides it, and Label Studio is asked for one more annotator on
    each item whose labels are uncertain."""
    store = project.store
    candidates = store.submits.adaptive_tasks(kind)
    if not candidates:
        return
    raised = adaptive.review_tasks(
        store, candidates, project.config.annotation.overlap, adaptive.model_method(store)
    )
    ls_ids = store.labelstudio.task_ids(url, pid)
    for task_id in raised:
        if task_id in ls_ids:
            set_overlap(client, ls_ids[task_id], store.labels.task(task_id).overlap)
    report.raised = raised


# -- status ---------------------------------------------------------------------------------------
def status(project: Project, url: str | None = None, api_key: str | None = None) -> list[dict[str, Any]]:
    """Per Label Studio project: tasks, annotations, annotators, completion (tasks with k annotations)."""
    rows = []
    for p in project.store.labelstudio.projects(url):
        client = connect(p.url, api_key or project.env.label_studio_api_key)
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
