"""The process ``prefkit annotate serve`` runs: Streamlit's own CLI and server, with each script run
sent to the browser in one piece.

:class:`OnePieceClient` is Streamlit's websocket client with ``TCP_NODELAY`` and, from a run's first
message to its last, ``TCP_CORK``: the run's frames leave together instead of waiting for the
browser's delayed acknowledgement (``docs/annotation.md`` says why; ``bench/bench_browser.py``
measures it). Messages are sent in the same order, unchanged. Where this cannot apply the app is
served exactly as ``streamlit run`` would, with one line on stderr saying so.

:func:`no_proxy_headers` stops uvicorn rewriting a loopback connection's address from its
``X-Forwarded-For`` header: :func:`prefkit.curation.annotation.signin.client_address` believes the
header only from a proxy listed in ``[annotation.sign_in] trusted_proxies``. Where it cannot be turned
off the server refuses to start, saying why.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from typing import Any

from streamlit.web.cli import main as streamlit_main

_RUN_START = "new_session"
_RUN_END = "script_finished"


def _transport_socket(websocket: Any) -> Any | None:
    """The TCP socket under a Starlette websocket (uvicorn's protocol object is the owner of the
    ``receive`` callable Starlette was given), or None when it cannot be reached."""
    protocol = getattr(getattr(websocket, "_receive", None), "__self__", None)
    transport = getattr(protocol, "transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return None
    return sock


def _starlette_modules() -> tuple[Any, Any]:
    """Streamlit's Starlette server and websocket modules; ImportError on a Streamlit without them."""
    # Here, not at the top: Streamlit's server internals, feature-detected by the callers.
    from streamlit.web.server.starlette import starlette_server, starlette_websocket

    return starlette_server, starlette_websocket


def _client_class() -> type | None:
    """Streamlit's websocket client class with each run sent in one piece, or None (and why, on
    stderr) when this Streamlit or platform does not have what it relies on."""
    why = None
    try:  # inside the check, not at the top: without these the app is still served, as `streamlit run`
        from starlette.websockets import WebSocketDisconnect
        from streamlit.runtime.runtime_util import serialize_forward_msg
        from streamlit.runtime.session_manager import SessionClientDisconnectedError

        _, ws_module = _starlette_modules()
    except ImportError as exc:
        why = f"Streamlit's Starlette server is not there ({exc})"
    base = getattr(ws_module, "StarletteSessionClient", None) if why is None else None
    if why is None and not hasattr(socket, "TCP_CORK"):
        why = "this platform has no TCP_CORK"
    elif why is None and not all(hasattr(base, a) for a in ("write_forward_msg", "_sender", "aclose")):
        why = "Streamlit's websocket client is not the one this was written for"
    if why is not None:
        print(f"prefkit: each run is sent as Streamlit sends it ({why})", file=sys.stderr)
        return None

    class OnePieceClient(base):  # type: ignore[misc, valid-type]
        """Streamlit's client; its queue holds ``(message kind, bytes)`` and its sender corks the
        socket for the length of a run."""

        def __init__(self, websocket: Any) -> None:
            self._sock = _transport_socket(websocket)
            self._corked = False
            if self._sock is not None:
                try:
                    self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    self._sock = None
            super().__init__(websocket)  # starts the sender task (ours)

        def write_forward_msg(self, msg: Any) -> None:
            if self._closed.is_set():
                raise SessionClientDisconnectedError
            try:
                self._send_queue.put_nowait((msg.WhichOneof("type"), serialize_forward_msg(msg)))
            except asyncio.QueueFull as exc:  # the browser stopped reading: drop it, as Streamlit does
                self._closed.set()
                raise SessionClientDisconnectedError from exc

        def _cork(self, on: bool) -> None:
            if self._sock is None or self._corked == on:
                return
            try:
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1 if on else 0)
                self._corked = on
            except OSError:  # the connection is gone; the send below reports it
                self._sock = None

        async def _sender(self) -> None:
            ended = False
            try:
                while True:
                    kind, payload = await self._send_queue.get()
                    if kind == _RUN_START:
                        self._cork(True)
                        ended = False
                    await self._websocket.send_bytes(payload)
                    ended = ended or kind == _RUN_END
                    if ended and self._send_queue.empty():
                        await asyncio.sleep(0)  # the status message that follows the end, if queued now
                        if self._send_queue.empty():
                            self._cork(False)  # the run leaves now, in one piece
            except WebSocketDisconnect:
                pass
            except Exception:  # as Streamlit's own sender: log, and mark the client closed
                logging.getLogger("streamlit").exception("Error sending websocket payload")
            finally:
                self._closed.set()

    return OnePieceClient


def no_proxy_headers() -> None:
    """Serve with uvicorn's ``proxy_headers`` off (Streamlit passes uvicorn the keyword arguments of
    ``starlette_server._get_uvicorn_config_kwargs``; this wraps it). Raises RuntimeError when this
    Streamlit has no such function: serving would believe any loopback client's header."""
    try:
        starlette_server, _ = _starlette_modules()
    except ImportError as exc:
        raise RuntimeError(f"Streamlit's Starlette server is not there ({exc})") from exc
    kwargs_of = getattr(starlette_server, "_get_uvicorn_config_kwargs", None)
    if kwargs_of is None:
        raise RuntimeError("Streamlit's server does not pass uvicorn its options the way prefkit expects")
    if getattr(kwargs_of, "prefkit_no_proxy_headers", False):
        return

    def kwargs() -> dict[str, Any]:
        return {**kwargs_of(), "proxy_headers": False}

    kwargs.prefkit_no_proxy_headers = True  # type: ignore[attr-defined]
    starlette_server._get_uvicorn_config_kwargs = kwargs


def install() -> bool:
    """Make Streamlit's websocket endpoint use :class:`OnePieceClient` (it looks the class up by
    name on each connection). True when installed."""
    client = _client_class()
    if client is None:
        return False
    # the module that defines the client Streamlit subclasses (its starlette_websocket) is the one
    # whose name the endpoint reads
    setattr(sys.modules[client.__bases__[0].__module__], "StarletteSessionClient", client)  # noqa: B010
    return True


def hide_error_details(argv: list[str]) -> list[str]:
    """``argv`` of ``... run app.py [options]`` with ``--client.showErrorDetails none`` unless given:
    an error in a page shows no traceback or server path to the browser (annotate_app/errors.py
    shows one line with an error id; the traceback is in the server log)."""
    if argv[1:2] != ["run"] or any(a.startswith("--client.showErrorDetails") for a in argv):
        return argv
    return [*argv, "--client.showErrorDetails", "none"]


def main() -> None:
    """``python -m prefkit.annotate_app.server run app.py [streamlit options]``: Streamlit's CLI, after
    no_proxy_headers() and install(), with error details hidden (:func:`hide_error_details`)."""
    try:
        no_proxy_headers()
    except RuntimeError as exc:
        why = f"X-Forwarded-For would be believed from any local client ({exc})"
        print(f"prefkit: not serving: {why}", file=sys.stderr)
        raise SystemExit(1) from exc
    install()
    sys.argv = hide_error_details(sys.argv)
    streamlit_main(prog_name="streamlit")  # exits with Streamlit's own code


if __name__ == "__main__":
    main()
