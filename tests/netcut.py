"""A TCP proxy on 127.0.0.1 in front of the test PostgreSQL server whose link can be cut.

``cut()`` closes every open connection (the client sees the server vanish mid-session, as in a
restart or a network cut) and refuses new ones until ``restore()``. Used by the connection-failure
tests; no test helper here patches the driver.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading


class CuttableLink:
    def __init__(self, target_host: str, target_port: int):
        self.target = (target_host, target_port)
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = self._server.getsockname()[1]
        self._up = threading.Event()
        self._up.set()
        self._closed = False
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self._up.is_set():
                client.close()  # the server is "down": connection refused (well, closed at once)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
                self.accepted += 1
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        socks = [a, b]
        try:
            while True:
                ready, _, _ = select.select(socks, [], [], 0.5)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for s in socks:
                with contextlib.suppress(OSError):
                    s.close()

    def cut(self) -> None:
        self._up.clear()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self._closed = True
        self.cut()
        with contextlib.suppress(OSError):
            self._server.close()
