"""Typed option values shared by every command, so the same mistake is refused the same way everywhere.

click checks these before the command body runs: a refused value is one usage line naming the option
and the value (exit 2), and nothing has been read or written yet. Use them instead of ``type=int`` /
``type=float`` for any count, size, rate or duration:

- :data:`POSITIVE_INT` (``>= 1``: counts of things a command makes or takes, ``--limit``, ``--overlap``)
- :data:`NON_NEGATIVE_INT` (``>= 0``)
- :class:`FiniteFloat` (no ``nan``/``inf``, optional bounds: hours, thresholds, rates)
- :class:`DistinctInts` (a comma-separated list of distinct integers in a range)
- :data:`PORT`
"""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloat(click.ParamType):
    """A finite float (``nan``, ``inf`` and numbers too long to be one are refused) within optional
    bounds; ``min_open`` makes the lower bound exclusive (``> 0`` rather than ``>= 0``)."""

    name = "number"

    def __init__(
        self,
        min: float | None = None,
        max: float | None = None,
        min_open: bool = False,
        max_open: bool = False,
    ):
        self.min, self.max, self.min_open, self.max_open = min, max, min_open, max_open

    def _range(self) -> str:
        low = "" if self.min is None else (f"> {self.min:g}" if self.min_open else f">= {self.min:g}")
        high = "" if self.max is None else (f"< {self.max:g}" if self.max_open else f"<= {self.max:g}")
        return " and ".join(x for x in (low, high) if x)

    def convert(self, value: Any, param, ctx) -> float:
        if isinstance(value, bool):
            self.fail(f"{value!r} is not a number", param, ctx)
        if isinstance(value, int | float):
            number = float(value)
        else:
            text = str(value).strip()
            if len(text) > 64:
                self.fail(f"{text[:20]}... is not a number (too long)", param, ctx)
            try:
                number = float(text)
            except ValueError:
                self.fail(f"{text!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        too_low = self.min is not None and (number <= self.min if self.min_open else number < self.min)
        too_high = self.max is not None and (number >= self.max if self.max_open else number > self.max)
        if too_low or too_high:
            self.fail(f"{value!r} is not {self._range()}", param, ctx)
        return number

    def get_metavar(self, param, ctx=None) -> str:  # click 8.1 and 8.2 signatures
        return "NUMBER"


class _BoundedInt(click.IntRange):
    """click's ``IntRange`` with a length cap: a 5,000-digit "number" is refused, not converted."""

    def convert(self, value: Any, param, ctx) -> int:
        if isinstance(value, str) and len(value.strip()) > 32:
            self.fail(f"{value.strip()[:20]}... is not a valid integer (too long)", param, ctx)
        return super().convert(value, param, ctx)


class _AnyInt(click.types.IntParamType):
    """Any integer (a seed), with the same length cap as :class:`_BoundedInt`."""

    def convert(self, value: Any, param, ctx) -> int:
        if isinstance(value, str) and len(value.strip()) > 32:
            self.fail(f"{value.strip()[:20]}... is not a valid integer (too long)", param, ctx)
        return super().convert(value, param, ctx)


POSITIVE_INT = _BoundedInt(min=1)
NON_NEGATIVE_INT = _BoundedInt(min=0)
ANY_INT = _AnyInt()
PORT = _BoundedInt(min=1, max=65535)
FRACTION = FiniteFloat(min=0.0, max=1.0)
#: A share that cannot be everything (a gold rate of 1 would leave no real items).
SHARE_BELOW_ONE = FiniteFloat(min=0.0, max=1.0, max_open=True)
NON_NEGATIVE_FLOAT = FiniteFloat(min=0.0)
POSITIVE_FLOAT = FiniteFloat(min=0.0, min_open=True)


class DistinctInts(click.ParamType):
    """Comma-separated distinct integers within ``[min, max]`` (e.g. ``--distractors 100,300``); a
    repeat, an empty list or a value out of range is refused naming it."""

    name = "list"

    def __init__(self, min: int = 1, max: int | None = None):
        self.min, self.max = min, max

    def convert(self, value: Any, param, ctx) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        parts = [x.strip() for x in str(value).split(",")]
        if not any(parts):
            self.fail("give at least one integer", param, ctx)
        out: list[int] = []
        for part in parts:
            if not part:
                self.fail(f"{value!r} has an empty item", param, ctx)
            if len(part) > 32 or not part.lstrip("+-").isdigit():
                self.fail(f"{part[:20]!r} is not an integer", param, ctx)
            number = int(part)
            if number < self.min or (self.max is not None and number > self.max):
                bound = f">= {self.min}" + ("" if self.max is None else f" and <= {self.max}")
                self.fail(f"{number} is not {bound}", param, ctx)
            if number in out:
                self.fail(f"{number} is given twice", param, ctx)
            out.append(number)
        return tuple(out)

    def get_metavar(self, param, ctx=None) -> str:
        return "N,N,..."


class SafePath(click.Path):
    """``click.Path`` that also refuses what the operating system would raise on instead of answering:
    a NUL byte, or a path longer than any file system takes."""

    def convert(self, value: Any, param, ctx):
        text = value if isinstance(value, str) else str(value)
        if "\x00" in text:
            self.fail(f"{text[:60]!r} contains a NUL byte", param, ctx)
        if len(text) > 4096:
            self.fail(f"{text[:40]!r}... is longer than 4096 characters", param, ctx)
        return super().convert(value, param, ctx)


#: Option types a test checks every numeric and path option uses.
NUMERIC_TYPES = (_BoundedInt, _AnyInt, FiniteFloat, DistinctInts)
