"""Run the ``console`` blocks of a Markdown file as a user would paste them, and compare loosely.

The convention (docs/ARCHITECTURE.md, "Console blocks in the docs"):

- A fence tagged ``console`` is a transcript. A line starting with ``$ `` is a command (a trailing ``\\``
  continues it on the next line); the lines after it, up to the next command, are its output.
- All console blocks of one file run in order, in one bash process started in a fresh empty directory
  that is also ``$HOME`` (so ``~`` in the shown output is that directory), with the checkout's
  ``prefkit`` first on ``PATH`` and stdin empty. ``cd`` and ``export`` carry over to later commands.
- Every command must exit 0, unless its line ends with ``# exit N`` (then exactly N).
- The output is compared loosely: every non-blank shown line must appear in the real output, in order
  (other real lines may come between), after both sides are normalised — numbers become ``0``, hex
  strings of 6+ characters ``h``, ISO timestamps ``T``, runs of spaces one space, runs of ``-`` one
  ``-``. A shown line ``...`` stands for any lines. So counts, hashes and column widths may change;
  the words, the columns and the order may not. A command whose line ends with ``# exact`` (``# exact,
  exit N``) is compared with its numbers, hashes and times as shown: for what the steps determine.
- An HTML comment ``<!-- console: needs labelstudio -->`` right before a fence runs that block only
  where a Label Studio server is configured (CI always has one); nothing else may be skipped.
  ``<!-- console: needs openai -->`` marks a block that calls an OpenAI-compatible endpoint: the test
  starts its loopback server (``tests/fakeopenai.py``) and exports ``OPENAI_BASE_URL`` and
  ``OPENAI_API_KEY`` for the file's commands, as a reader exports their own.
- Fences tagged ``bash``, ``toml``, ``python``, ``text`` or untagged are not run, and must not contain
  ``$ `` prompt lines: a transcript is always tagged ``console``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```(\S*)\s*$")
NEEDS = re.compile(r"<!--\s*console:\s*needs\s+(\w[\w-]*)\s*-->")
EXIT = re.compile(r"#\s*(?:exact,\s*)?exit\s+(\d+)\s*$")
EXACT = re.compile(r"#\s*exact\b")


@dataclass
class Command:
    text: str
    expected: list[str] = field(default_factory=list)
    line: int = 0

    @property
    def status(self) -> int:
        m = EXIT.search(self.text)
        return int(m[1]) if m else 0

    @property
    def exact(self) -> bool:
        """``# exact`` (or ``# exact, exit N``): the output's numbers are compared as shown."""
        return EXACT.search(self.text) is not None


@dataclass
class Block:
    line: int
    needs: str | None
    commands: list[Command]


def fences(text: str) -> list[tuple[int, str, list[str], str | None]]:
    """``(line, tag, body lines, needs)`` of every fenced block."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, tag, body = i + 1, m[1], []
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        needs = NEEDS.search(prev)
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        out.append((start, tag, body, needs[1] if needs else None))
        i += 1
    return out


def blocks(text: str) -> list[Block]:
    found = []
    for start, tag, body, needs in fences(text):
        if tag != "console":
            continue
        commands: list[Command] = []
        continuing = False
        for n, line in enumerate(body, start=start + 1):
            if continuing:
                commands[-1].text += "\n" + line
                continuing = line.endswith("\\")
            elif line.startswith("$ "):
                commands.append(Command(line[2:], line=n))
                continuing = line.endswith("\\")
            elif commands:
                commands[-1].expected.append(line)
            elif line.strip():
                raise ValueError(f"line {n}: output before the first command of a console block")
        found.append(Block(start, needs, commands))
    return found


def prompt_lines_outside_console(text: str) -> list[int]:
    """Lines of ``$ `` prompts in fences not tagged console (transcripts that would escape the test)."""
    return [
        start + 1 + k
        for start, tag, body, _ in fences(text)
        if tag != "console"
        for k, line in enumerate(body)
        if line.startswith("$ ")
    ]


_NORMALISE = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?"), "T"),
    # a hex id reads like a number: one that happens to be all digits (1 in 40 for 8 characters) must
    # compare equal to the lettered one the page shows
    (re.compile(r"(?<![0-9A-Za-z.])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}(?![0-9A-Za-z])"), "0"),
    (re.compile(r"-?\d+(\.\d+)?"), "0"),
    (re.compile(r"-{2,}"), "-"),
    (re.compile(r"\s+"), " "),
]


def normalise(line: str, exact: bool = False) -> str:
    for pattern, repl in _NORMALISE[3:] if exact else _NORMALISE:
        line = pattern.sub(repl, line)
    return line.strip()


def missing_lines(expected: list[str], actual: str, exact: bool = False) -> list[str]:
    """Shown lines not found (in order) in the real output; empty when the shape matches (``exact``:
    numbers, hashes and times as shown)."""
    real = [normalise(a, exact) for a in actual.splitlines() if a.strip()]
    at, missing = 0, []
    for want in expected:
        if not want.strip() or want.strip() in ("...", "…"):
            continue
        w = normalise(want, exact)
        for k in range(at, len(real)):
            if real[k] == w:
                at = k + 1
                break
        else:
            missing.append(want)
    return missing


MARK = "@@console-block@@"


def run_file(
    blocks_: list[Block],
    home: Path,
    timeout: int = 900,
    env_extra: dict[str, str] | None = None,
    bin_first: Path | None = None,
) -> list[tuple[Command, int, str]]:
    """Run every command in one bash process; ``(command, exit status, output)`` per command.
    ``env_extra`` is the environment a reader would have exported (an endpoint and its key);
    ``bin_first`` a folder put first on PATH (tests/warmcli.py's ``prefkit``)."""
    commands = [c for b in blocks_ for c in b.commands]
    script = ["set +e"]
    for i, c in enumerate(commands):
        script.append(f"printf '\\n{MARK} start {i}\\n'")
        script.append(f"eval {shlex.quote(c.text)} </dev/null 2>&1")  # a syntax error stays in its command
        script.append(f"printf '\\n{MARK} end {i} %s\\n' \"$?\"")
    bin_dir = ":".join(str(d) for d in (bin_first, Path(sys.executable).parent) if d)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PREFKIT_", "OPENAI_")) and k not in ("HOME", "PWD", "VIRTUAL_ENV")
    }
    env.update(HOME=str(home), PATH=f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}", COLUMNS="200")
    env.update(env_extra or {})
    proc = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    out = proc.stdout.replace(str(home), "~")
    results = []
    for i, c in enumerate(commands):
        m = re.search(rf"{MARK} start {i}\n(.*?)\n{MARK} end {i} (\d+)\n", out, re.S)
        if not m:
            results.append((c, -1, f"(no output marker; bash stderr: {proc.stderr[-2000:]})"))
            continue
        results.append((c, int(m[2]), m[1]))
    return results


def describe(command: Command, status: int, output: str, missing: list[str]) -> str:
    head = f"line {command.line}: $ {command.text}"
    if status != command.status:
        return f"{head}\n  exit {status}, expected {command.status}\n  output:\n{output[-3000:]}"
    shown = "\n".join(f"    {m}" for m in missing)
    return f"{head}\n  shown lines not in the output:\n{shown}\n  output:\n{output[-3000:]}"


__all__ = [
    "Block",
    "Command",
    "blocks",
    "describe",
    "missing_lines",
    "prompt_lines_outside_console",
    "run_file",
]
