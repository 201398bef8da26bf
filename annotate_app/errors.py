"""An unexpected error on a page: one line and an error id for the annotator, the traceback in the
server log under that id.

Streamlit would draw the exception with its traceback (server paths, code) in the page.
``prefkit annotate serve`` hides those details (``client.showErrorDetails = "none"``,
annotate_app/server.py), and :func:`one_line` catches what a page raises, logs it on the
``prefkit.annotate`` logger with a fresh id (``uuid4().hex[:8]``) and shows::

    Something went wrong (error id 3f9a0c1e); the maintainers can find it in the server log.

A fragment (``@st.fragment``) reruns alone, outside the page's run: put :func:`guarded` under its
decorator. Streamlit's own control flow (``st.stop``, ``st.rerun``: not ``Exception``\\ s) passes through.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import ParamSpec

import streamlit as st

P = ParamSpec("P")

log = logging.getLogger("prefkit.annotate")


def message(error_id: str) -> str:
    return f"Something went wrong (error id {error_id}); the maintainers can find it in the server log."


@contextlib.contextmanager
def one_line() -> Iterator[None]:
    """Run a page's body; an unexpected exception is logged with its id and shown as one line."""
    try:
        yield
    except Exception as exc:  # anything a page did not expect: the annotator gets one line, the log the rest
        error_id = uuid.uuid4().hex[:8]
        log.error("error id %s: %s: %s", error_id, type(exc).__name__, exc, exc_info=exc)
        st.error(message(error_id), icon=":material/error:")


def guarded(fn: Callable[P, None]) -> Callable[P, None]:
    """``fn`` run inside :func:`one_line` (for a fragment, which reruns outside the page's run)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        with one_line():
            fn(*args, **kwargs)

    return run
