"""An HTTP proxy on 127.0.0.1 in front of the real Label Studio server that can fail one import.

Every request is forwarded as it is, except the ``n``-th ``POST /api/projects/{id}/import``: with
``mode="refused"`` it is answered 503 without reaching Label Studio (the server was overloaded or
restarting); with ``mode="answer_lost"`` Label Studio imports the tasks but the client gets a 502
(the connection dropped after the server committed). Used to test that a push resumes.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

_IMPORT = re.compile(r"^/api/projects/\d+/import")
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


class FailingProxy:
    def __init__(self, target: str, fail_import: int, mode: str):
        assert mode in ("refused", "answer_lost")
        self.target, self.fail_import, self.mode = target.rstrip("/"), fail_import, mode
        self.imports = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                failing = False
                if self.command == "POST" and _IMPORT.match(self.path):
                    with proxy._lock:
                        proxy.imports += 1
                        failing = proxy.imports == proxy.fail_import
                if failing and proxy.mode == "refused":
                    return self._answer(503, b'{"detail": "refused by the test proxy"}')
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                resp = httpx.request(
                    self.command, proxy.target + self.path, content=body, headers=headers, timeout=300
                )
                if failing:
                    return self._answer(502, b'{"detail": "answer lost by the test proxy"}')
                self._answer(resp.status_code, resp.content, resp.headers.get("content-type"))

            def _answer(self, code: int, body: bytes, ctype: str | None = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype or "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
