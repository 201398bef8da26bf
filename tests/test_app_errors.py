"""Issue 32 (reliability round 4), item 4: an unexpected error on a page shows the annotator one line
with an error id, never Streamlit's traceback with server paths; the traceback goes to the server log
under that id (annotate_app/errors.py). The served process also hides Streamlit's error details
(``client.showErrorDetails = none``, annotate_app/server.py)."""

from __future__ import annotations

import logging
import re

from appkit import ALICE, app, project_fixtures
from prefkit.annotate_app import server

template, project = project_fixtures(env=True, n=2, overlap=1)


def _texts(at) -> list[str]:
    """Every text the page drew (markdown, captions, alerts, exceptions)."""
    out: list[str] = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "exception", "code", "text"):
        for element in getattr(at, kind):
            out.append(
                str(getattr(element, "value", "")) + " ".join(getattr(element, "stack_trace", []) or [])
            )
    return out


def test_an_unexpected_store_error_is_one_line_with_an_id_and_the_traceback_is_logged(
    project, monkeypatch, caplog
):
    secret = f"{project.root}/private/what-went-wrong"

    def broken(self, *args, **kwargs):
        raise RuntimeError(f"the queue at {secret} is unreadable")

    monkeypatch.setattr(type(project.store.assignments), "has_available", broken)
    with caplog.at_level(logging.ERROR, logger="prefkit.annotate"):
        at = app(ALICE)
    assert len(at.exception) == 0  # Streamlit drew no exception (with its traceback)
    (shown,) = [e.value for e in at.error if "Something went wrong" in e.value]
    m = re.fullmatch(
        r"Something went wrong \(error id ([0-9a-f]{8})\); the maintainers can find it in the server log\.",
        shown,
    )
    assert m, shown
    page = "\n".join(_texts(at))
    for leak in (secret, str(project.root), "Traceback", "RuntimeError", ".py"):
        assert leak not in page
    (record,) = [r for r in caplog.records if r.name == "prefkit.annotate"]
    assert m[1] in record.getMessage() and secret in record.getMessage()
    logged = logging.Formatter().format(record)
    assert (
        "Traceback (most recent call last)" in logged and "in broken" in logged and "RuntimeError" in logged
    )


def test_two_errors_get_two_ids(project, monkeypatch, caplog):
    def broken(self, *args, **kwargs):
        raise KeyError("x")

    monkeypatch.setattr(type(project.store.assignments), "has_available", broken)
    with caplog.at_level(logging.ERROR, logger="prefkit.annotate"):
        ids = {re.search(r"error id (\w+)", app(ALICE).error[0].value)[1] for _ in range(2)}
    assert len(ids) == 2 and len([r for r in caplog.records if r.name == "prefkit.annotate"]) == 2


def test_the_served_app_hides_streamlits_error_details():
    argv = ["server.py", "run", "app.py", "--server.port", "8501"]
    assert server.hide_error_details(argv) == [*argv, "--client.showErrorDetails", "none"]
    given = [*argv, "--client.showErrorDetails", "full"]  # an operator's own choice stays
    assert server.hide_error_details(given) == given
    assert server.hide_error_details(["server.py", "version"]) == ["server.py", "version"]


def _fragment_page():
    import streamlit as st
    from prefkit.annotate_app import errors

    @st.fragment
    @errors.guarded
    def panel() -> None:
        if st.button("Break", key="break"):
            raise OSError("/srv/prefkit/project.db: gone")
        st.write("panel")

    panel()


def test_an_error_in_a_fragments_own_rerun_is_one_line_too(caplog):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_fragment_page, default_timeout=30).run()
    with caplog.at_level(logging.ERROR, logger="prefkit.annotate"):
        at.button(key="break").click().run()
    assert len(at.exception) == 0
    assert any(re.match(r"Something went wrong \(error id [0-9a-f]{8}\)", e.value) for e in at.error)
    assert "/srv/prefkit" not in "\n".join(_texts(at))
    (record,) = [r for r in caplog.records if r.name == "prefkit.annotate"]
    assert "/srv/prefkit/project.db: gone" in logging.Formatter().format(record)
