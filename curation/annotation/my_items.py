"""An annotator's own items (the app's *My items*): open, done, skipped and flagged, found by words in
the item's text, its id or reference, or the annotator's comment, and filtered by task kind, batch,
status and day. One function for the page (and any other shell); the query is the store's
(``store.items``), and a match on words is confirmed here on the item's text itself, so a word
that is only a field name of the stored JSON finds nothing. Words match case and width aside, in
every script (NFKC and case-folded, accents kept), the same on SQLite and PostgreSQL.

Never another annotator's: every read names the signed-in user, and an edit of a listed label goes
through :func:`prefkit.curation.annotation.workflow.edit_label` (a new event, the old one kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.annotation.workflow import WorkflowError, undo_depth
from prefkit.curation.store import ITEM_STATUSES, AnnotatorItem, folded

if TYPE_CHECKING:
    from prefkit.curation.project import Project

__all__ = ["ITEM_STATUSES", "AnnotatorItem", "ItemPage", "my_batches", "my_items"]

#: The longest search accepted (a pasted dialogue is not a search).
MAX_SEARCH = 200


@dataclass(frozen=True)
class ItemPage:
    """A page of an annotator's items (open first, then newest event first) and how many match."""

    items: list[AnnotatorItem]
    total: int
    offset: int


def _day_after(day: str) -> str:
    try:
        return (datetime.fromisoformat(day[:10]) + timedelta(days=1)).strftime("%Y-%m-%d")
    except ValueError:
        raise WorkflowError(f"not a day: {day!r} (use YYYY-MM-DD)") from None


def my_items(
    project: Project,
    user: str,
    *,
    kind: str | None = None,
    batch: str | None = None,
    statuses: tuple[str, ...] | list[str] = ITEM_STATUSES,
    search: str | None = None,
    since: str | None = None,
    until: str | None = None,
    page: int = 0,
    per_page: int | None = None,
) -> ItemPage:
    """``user``'s items of ``kind`` in ``batch`` with one of ``statuses`` (open, done, skipped,
    flagged), whose id, reference, text or comment contains ``search``, finished on ``since``..
    ``until`` (UTC days, both included; open items have no day and are left out by either), a page
    of ``per_page`` (default ``annotation.undo_depth``) from page ``page``. Never anyone else's."""
    if kind is not None:
        get_kind(kind)
    wanted = tuple(statuses)
    unknown = [s for s in wanted if s not in ITEM_STATUSES]
    if unknown:
        raise WorkflowError(f"unknown status {unknown[0]!r}: use one of {', '.join(ITEM_STATUSES)}")
    words = (search or "").strip()
    if len(words) > MAX_SEARCH:
        raise WorkflowError(f"a search is at most {MAX_SEARCH} characters")
    per_page = per_page or undo_depth(project)
    if per_page < 1 or page < 0:
        raise WorkflowError("a page is a number from 0 with at least one item on it")
    if since:
        _day_after(since)  # a day, or one clear line
    first, last = (since[:10] if since else None), (_day_after(until) if until else None)

    if not words:
        items, total = project.store.items.items_of(
            user,
            kind=kind,
            batch=batch or None,
            statuses=wanted,
            since=first,
            until=last,
            limit=per_page,
            offset=page * per_page,
        )
        return ItemPage(items, total, page * per_page)
    # The store narrows by the folded words; the item's own text (and the comment) says whether it matches.
    found = project.store.items.search_text(
        user, words, kind=kind, batch=batch or None, statuses=wanted, since=first, until=last
    )
    needle = folded(words)
    hits = [tid for tid, text, comment in found if needle in text or needle in folded(comment or "")]
    shown = project.store.items.items_by_id(user, hits[page * per_page : (page + 1) * per_page])
    return ItemPage(shown, len(hits), page * per_page)


def my_batches(project: Project, user: str) -> list[str]:
    """The batches ``user`` has items in: the choices of the batch filter."""
    return project.store.items.batches_of(user)
