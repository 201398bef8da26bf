"""A warm ``prefkit`` for the docs' console blocks (tests/consoledocs.py): the same command, without
paying Python's start-up and prefkit's imports (~0.4-1 s of CPU) for each of the pages' ~250 commands.

One server process imports ``prefkit.cli`` and every command module once, then waits on a Unix socket.
``prefkit`` on the pages' PATH is :data:`SHIM`: it sends its argv, working directory and environment
with its standard input, output and error (the descriptors themselves, ``SCM_RIGHTS``); the server
forks, and the child takes them all and runs ``prefkit.cli.main()`` exactly as the installed
``prefkit`` script does, then answers the exit status, which the shim exits with. Nothing in the
library reads the environment at import time (a child starts from the server's imported modules, not
from its environment), and the server starts no thread before it forks. What the installed script
itself does on a fresh start is tested in tests/test_startup.py and the journeys (tests/journeykit.py).
"""

from __future__ import annotations

import array
import atexit
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOCKET_VAR = "CONSOLE_WARM_PREFKIT"
SCRIPT = str(Path(sys.executable).with_name("prefkit"))

SHIM = f"""#!{sys.executable} -IS
import array, json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ.pop({SOCKET_VAR!r}))
msg = json.dumps({{"argv": [{SCRIPT!r}, *sys.argv[1:]], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
fds = array.array("i", [0, 1, 2])
s.sendmsg([len(msg).to_bytes(4, "big") + msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
code = s.recv(16)
sys.exit(int(code) if code else 1)  # no answer: the command died
"""


def _preload() -> None:
    import openai  # noqa: F401  (what a command that calls an endpoint imports)

    for path in sorted((ROOT / "prefkit" / "cli").glob("*_cmds.py")):
        importlib.import_module(f"prefkit.cli.{path.stem}")
    assert threading.active_count() == 1, "a thread before fork: the children would not have it"


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, ancillary, _flags, _addr = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * 4))
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    size = int.from_bytes(data[:4], "big")
    while len(data) < 4 + size:
        data += conn.recv(1 << 20)
    return json.loads(data[4 : 4 + size]), list(fds)


def _child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the command's own subprocesses are its to wait for
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = request["argv"]
    code = 0
    try:
        from prefkit.cli import main

        main()
    except SystemExit as exc:  # as the interpreter turns it into an exit status
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    conn.sendall(str(code).encode())
    os._exit(code)


def serve(path: str) -> None:
    sys.path[0] = str(Path(SCRIPT).parent)  # as for the installed script, not this file's folder
    _preload()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(64)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        request, fds = _receive(conn)
        if os.fork() == 0:
            server.close()
            _child(conn, request, fds)
        conn.close()
        for fd in fds:
            os.close(fd)


class WarmPrefkit:
    """The server, started for a test session: :attr:`bin_dir` holds the shim (put it first on PATH)
    and :attr:`env` the variable that points the shim at the server."""

    def __init__(self, workdir: Path):
        self.bin_dir = workdir / "bin"
        self.bin_dir.mkdir(parents=True)
        shim = self.bin_dir / "prefkit"
        shim.write_text(SHIM, encoding="utf-8")
        shim.chmod(0o755)
        self.socket = str(workdir / "prefkit.sock")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, self.socket], stdout=subprocess.PIPE, cwd=workdir, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"
        self.env = {SOCKET_VAR: self.socket}

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


if __name__ == "__main__":
    serve(sys.argv[1])
