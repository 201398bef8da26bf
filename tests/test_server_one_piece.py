"""``prefkit.annotate_app.server``: each script run reaches the browser in one piece.

On a real loopback TCP connection (the socket options are the kernel's), and end to end: Streamlit
served by ``python -m prefkit.annotate_app.server`` to Chromium, which records when each websocket message
arrives.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import subprocess
from types import SimpleNamespace

from appkit import LAUNCH, free_port, require_chromium, wait_healthy
from conftest import require
from prefkit.annotate_app import server
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg


def _msg(kind: str) -> ForwardMsg:
    msg = ForwardMsg()
    if kind == "new_session":
        msg.new_session.name = "app"
    elif kind == "delta":
        msg.delta.new_element.markdown.body = "#### item"
    elif kind == "script_finished":
        msg.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    elif kind == "session_status_changed":
        msg.session_status_changed.script_is_running = False
    return msg


class _Transport:
    def __init__(self, sock: socket.socket):
        self.sock = sock

    def get_extra_info(self, name: str):
        return self.sock if name == "socket" else None


class _Protocol:
    """What uvicorn's websocket protocol offers: its transport, and the ``receive`` it hands Starlette."""

    def __init__(self, sock: socket.socket):
        self.transport = _Transport(sock)

    async def receive(self):  # never called here
        raise AssertionError


def _websocket(receive, send_bytes) -> SimpleNamespace:
    """The parts of a Starlette websocket Streamlit's client reads."""
    return SimpleNamespace(_receive=receive, send_bytes=send_bytes, headers={}, cookies={}, client=None)


def _cork(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK)


#: The messages of one script run, first to last.
A_RUN = (
    "new_session",
    "session_status_changed",
    "delta",
    "delta",
    "script_finished",
    "session_status_changed",
)


def test_a_run_is_corked_from_its_first_message_to_its_last():
    require(hasattr(socket, "TCP_CORK"), "TCP_CORK is Linux's (the app falls back without it)")
    client_cls = server._client_class()
    assert client_cls is not None  # this Streamlit has the client it was written for
    listener = socket.create_server(("127.0.0.1", 0))
    browser_side = socket.create_connection(listener.getsockname())
    server_side, _ = listener.accept()
    sent: list[tuple[bytes, int]] = []  # each frame with the cork state at the moment it was written

    async def send_bytes(payload: bytes) -> None:
        server_side.sendall(payload)
        sent.append((payload, _cork(server_side)))

    websocket = _websocket(_Protocol(server_side).receive, send_bytes)

    async def run() -> list[int]:
        client = client_cls(websocket)
        assert server_side.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        states = []
        for kind in A_RUN:
            client.write_forward_msg(_msg(kind))
        for _ in range(20):
            await asyncio.sleep(0.01)
            states.append(_cork(server_side))
        client.write_forward_msg(_msg("session_status_changed"))  # between runs: sent at once
        await asyncio.sleep(0.01)
        await client.aclose()
        return states

    states = asyncio.run(run())
    kinds = [ForwardMsg.FromString(p).WhichOneof("type") for p, _ in sent]
    assert kinds == [*A_RUN, "session_status_changed"]
    assert [c for _, c in sent[:6]] == [1] * 6  # every frame of the run written while corked
    assert states[-1] == 0 and sent[-1][1] == 0  # uncorked when the run ended: it left in one piece
    browser_side.settimeout(5)
    got = b""
    while len(got) < sum(len(p) for p, _ in sent):
        got += browser_side.recv(65536)
    assert got == b"".join(p for p, _ in sent)  # unchanged, in order
    for s in (browser_side, server_side, listener):
        s.close()


def test_a_connection_whose_socket_cannot_be_reached_is_served_as_streamlit_would():
    client_cls = server._client_class()
    sent: list[bytes] = []

    async def send_bytes(payload: bytes) -> None:
        sent.append(payload)

    websocket = _websocket(lambda: None, send_bytes)  # no transport behind it

    async def run() -> None:
        client = client_cls(websocket)
        for kind in ["new_session", "delta", "script_finished"]:
            client.write_forward_msg(_msg(kind))
        await asyncio.sleep(0.05)
        await client.aclose()

    asyncio.run(run())
    assert [ForwardMsg.FromString(p).WhichOneof("type") for p in sent] == [
        "new_session",
        "delta",
        "script_finished",
    ]


APP = """
import time

import streamlit as st

if "n" not in st.session_state:
    st.session_state["n"] = 0


def _next():
    st.session_state["n"] += 1


@st.fragment
def item():
    time.sleep(0.08)  # a run that takes a while: its start message exists 80 ms before its elements
    st.markdown(f"#### item {st.session_state['n'] + 1}")
    st.button("Next", shortcut="1", key=f"item{st.session_state['n']}", on_click=_next)


st.sidebar.caption("a page with more than the fragment")
item()
"""


def test_each_submit_reaches_the_browser_in_one_piece(tmp_path):
    """When the browser's network stack receives each frame of a run (Chromium's own timestamps, not
    the page's, so the page's work does not count): together, although the run's first message was
    written 80 ms before its elements. As Streamlit sends them, they are at least 80 ms apart."""
    require_chromium()
    from playwright.sync_api import sync_playwright
    from prefkit.cli.annotate_cmds import streamlit_argv

    app = tmp_path / "app.py"
    app.write_text(APP, encoding="utf-8")
    port = free_port()
    cmd = streamlit_argv(port, "127.0.0.1")
    assert cmd[1:4] == ["-m", "prefkit.annotate_app.server", "run"]  # what `prefkit annotate serve` runs
    cmd[cmd.index("run") + 1] = str(app)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc)
        spreads, frames = [], []
        idle = "() => document.querySelector('[data-testid=stApp]').getAttribute('data-test-script-state') === 'notRunning'"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(**LAUNCH)
            page = browser.new_page()
            cdp = page.context.new_cdp_session(page)
            cdp.send("Network.enable")
            cdp.on("Network.webSocketFrameReceived", lambda e: frames.append(e["timestamp"]))
            page.goto(url)
            page.get_by_text("item 1", exact=True).wait_for()
            for n in range(2, 10):
                page.wait_for_function(idle)
                page.wait_for_timeout(100)  # nothing else on its way
                frames.clear()
                page.keyboard.press("1")
                page.get_by_text(f"item {n}", exact=True).wait_for()
                page.wait_for_function(idle)
                page.wait_for_timeout(100)
                assert len(frames) >= 5  # start, status, the elements, end, status
                spreads.append((max(frames) - min(frames)) * 1000)
            browser.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert b"is sent as Streamlit sends it" not in err
    assert statistics.median(spreads) < 40, spreads  # in one piece (split: >= 80 ms)
