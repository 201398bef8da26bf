"""Shared pieces of the maintainer's console pages (People, Work, Release): running one library call
as a maintainer's action, and the page's share of the audit log.

Render only. Every action is one call into the library function its ``prefkit`` command makes
(:mod:`prefkit.curation.annotation.people`, :mod:`~prefkit.curation.annotation.work`,
:mod:`prefkit.exports.release`); a refusal is the library's own sentence, shown on one line, and
nothing is written; a success is flashed at the top of the next run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st
from prefkit.annotate_app import ui
from prefkit.curation.store import ProjectStore
from prefkit.schemas.common import PrefkitError


def act(action: Callable[[], Any], done: Callable[[Any], str], refused: str = "Not done") -> Any:
    """Run a maintainer's ``action``: on success flash ``done(result)`` and rerun (the tables show
    the change); a refusal (:class:`PrefkitError`) is one line in words here, and the page goes on."""
    try:
        result = action()
    except PrefkitError as exc:
        st.error(ui.safe(refused + ": {}", str(exc).splitlines()[0]))
        return None
    ui.flash(done(result))
    st.rerun()


def when(iso: str | None) -> str:
    """A stored UTC time as the tables show it (to the minute), or a dash."""
    return iso[:16].replace("T", " ") if iso else "–"


def audit_table(store: ProjectStore, families: tuple[str, ...], limit: int = 10) -> None:
    """The newest audited actions of ``families`` (``user``, ``tasks``, ...), as ``prefkit audit list``
    shows them, under a heading."""
    rows = sorted(
        (e for f in families for e in store.audit.events(action=f, limit=limit)), key=lambda e: -e.seq
    )[:limit]
    st.subheader("Recent changes")
    if not rows:
        st.caption("Nothing changed here yet (`prefkit audit list` shows every change).")
        return
    st.dataframe(
        pd.DataFrame(
            [{"when": when(e.created_at), "who": e.actor, "what": e.action, "on": e.target,
              "details": ", ".join(f"{k}={v}" for k, v in e.detail.items() if v is not None)} for e in rows]
        ),
        hide_index=True, width="stretch",
        column_config={"details": st.column_config.TextColumn(width="large")},
    )  # fmt: skip
    st.caption("Every change, from these pages and from commands: `prefkit audit list`.")
