"""Issue 32 (reliability round 4), item 1: ``X-Forwarded-For`` counts only from a listed proxy.

uvicorn (the web server under Streamlit) rewrites a loopback connection's address from the header by
default; ``prefkit annotate serve`` turns that off (annotate_app/server.py), so with
``trusted_proxies = []`` a browser that makes up a header is still logged under its real address,
and with the browser's address listed as a proxy the header is what counts. Chromium reaches the
served app through :class:`appkit.ForwardingProxy`, which writes the header into each connection's
first request, the websocket's upgrade that carries the sign-in included (a browser context's
``extra_http_headers`` never reach that upgrade)."""

from __future__ import annotations

import time

import pytest
from appkit import ForwardingProxy, attempt, serve, served_project, settle
from prefkit.annotate_app import server

pytestmark = pytest.mark.browser

MADE_UP = ("198.51.100.1", "198.51.100.2", "203.0.113.9")


def _served(tmp_path_factory, name: str, proxies: str):
    project = served_project(tmp_path_factory, name, ("hank",), n=2, overlap=1)
    config = project.root / "prefkit.toml"
    text = config.read_text()
    assert "trusted_proxies = []" in text
    config.write_text(text.replace("trusted_proxies = []", f"trusted_proxies = {proxies}"))
    yield from serve(project)


@pytest.fixture(scope="module")
def no_proxy(tmp_path_factory):
    yield from _served(tmp_path_factory, "noproxy", "[]")


@pytest.fixture(scope="module")
def local_proxy(tmp_path_factory):
    yield from _served(tmp_path_factory, "localproxy", '["127.0.0.1"]')


def _failed_sign_ins(served, browser, forwarded: tuple[str, ...]) -> set[str]:
    """One failed sign-in per made-up address, each through a proxy on 127.0.0.1 that sends it as
    ``X-Forwarded-For``: the clients the sign-in log recorded."""
    project, served_url, _ = served
    for n, address in enumerate(forwarded, start=1):
        proxy = ForwardingProxy(int(served_url.rsplit(":", 1)[1]), address)
        url = f"http://127.0.0.1:{proxy.port}"
        context = browser.new_context()
        page = context.new_page()
        page.goto(url)
        page.get_by_label("User name").wait_for()
        attempt(page, url, "hank", "not-the-password")
        deadline = time.monotonic() + 30
        while len(project.store.accounts.sign_in_log("hank")) < n and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        settle(page)
        context.close()
        proxy.close()
    log = project.store.accounts.sign_in_log("hank")
    assert len(log) == len(forwarded)
    return {r.client for r in log}


def test_a_made_up_forwarded_for_is_ignored_without_a_listed_proxy(no_proxy, browser):
    assert _failed_sign_ins(no_proxy, browser, MADE_UP) == {"127.0.0.1"}


def test_a_listed_proxy_forwards_for_its_client(local_proxy, browser):
    assert _failed_sign_ins(local_proxy, browser, MADE_UP[:2]) == set(MADE_UP[:2])


def test_the_served_process_turns_uvicorns_proxy_headers_off():
    from streamlit.web.server.starlette import starlette_server

    before = starlette_server._get_uvicorn_config_kwargs
    try:
        server.no_proxy_headers()
        server.no_proxy_headers()  # twice is once
        kwargs = starlette_server._get_uvicorn_config_kwargs()
        assert kwargs["proxy_headers"] is False
        assert kwargs["access_log"] is False  # Streamlit's own options are kept
    finally:
        starlette_server._get_uvicorn_config_kwargs = before
