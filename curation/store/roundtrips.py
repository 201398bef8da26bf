"""Counting the round trips between a process and its PostgreSQL server, from libpq's own trace.

A round trip is one message the client sends and then waits on: a simple ``Query`` (``BEGIN``,
``COMMIT``) or the ``Sync`` that ends an extended-protocol statement. libpq writes every protocol
message of a traced connection to a file; this module traces each connection an engine hands out
and counts those messages, so a benchmark or a test can say what one submit costs on the wire.
Diagnostics only (Linux): nothing on the serving path uses it.
"""

from __future__ import annotations

import ctypes
import tempfile
import weakref
from pathlib import Path

from psycopg import pq
from sqlalchemy import Engine, event

__all__ = ["RoundTrips"]

_WAITS = ("Query", "Sync")


class RoundTrips:
    """Round trips (and statements) of every connection ``engine`` checks out from now on.

    >>> trips = RoundTrips(store.engine); before = trips.count(); ...; trips.count() - before
    """

    def __init__(self, engine: Engine):
        self.engine = engine
        self._dir = Path(tempfile.mkdtemp(prefix="prefkit-wire-"))
        self._files: list = []
        self._traced: weakref.WeakSet = weakref.WeakSet()
        event.listen(engine, "checkout", self._trace)

    def _trace(self, dbapi_conn, _record, _proxy) -> None:
        pgconn = dbapi_conn.pgconn
        if pgconn in self._traced:
            return
        # One file per connection: libpq buffers each trace stream, and two streams on one file
        # would interleave their buffers mid-line.
        f = (self._dir / f"{len(self._files)}.trace").open("w")
        self._files.append(f)
        pgconn.trace(f.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        self._traced.add(pgconn)

    def messages(self) -> dict[str, int]:
        """Messages sent so far, by protocol message type."""
        ctypes.CDLL(None).fflush(None)  # libpq's trace streams are C stdio buffers
        out: dict[str, int] = {}
        for f in self._files:
            for line in Path(f.name).read_text().splitlines():
                parts = line.split("\t")
                if len(parts) > 2 and parts[0] == "F":
                    kind = parts[2].split(" ", 1)[0]
                    out[kind] = out.get(kind, 0) + 1
        return out

    def count(self) -> int:
        """Round trips so far: the messages after which the client waits for the server."""
        sent = self.messages()
        return sum(sent.get(kind, 0) for kind in _WAITS)

    def close(self) -> None:
        """Stop tracing (the connections stay usable)."""
        event.remove(self.engine, "checkout", self._trace)
        ctypes.CDLL(None).fflush(None)  # nothing left in a stream that outlives its file
        for pgconn in list(self._traced):
            pgconn.untrace()
        for f in self._files:
            f.close()
