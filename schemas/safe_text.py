"""Operator and data text made safe for the files prefkit writes for people to open.

Text from ``prefkit.toml``, from command options (``--override``, ``--model``) and from imported data
(licences, model names, comments) ends up in markdown (the dataset card, evaluation reports), in
Croissant JSON-LD and in CSV exports. Each format gets one function here, used by every writer of it:

- Everywhere: no control characters and no invisible ones that reorder or hide text (bidi
  overrides such as U+202E, zero-width spaces, tag characters: :func:`shown_text`).
- :func:`md_text` — markdown: no raw HTML (``<`` ``>`` ``&`` become entities, so a ``<script>`` or
  ``<img>`` shows as text), no link or image syntax (``[`` and ``]`` are escaped, so
  ``![x](https://host/pixel)`` loads nothing), no line breaks or leading markers that could start a
  heading, a list or a table.
- :func:`md_code` — text shown inside a code span.
- :func:`plain_text` — JSON text fields read by renderers (Croissant ``name`` / ``description``):
  markup characters (``< > & [ ]``) as HTML entities, control characters removed.
- :func:`csv_cell` / :func:`csv_value` — OWASP's CSV-injection rule: a cell starting with ``=``
  ``+`` ``-`` ``@``, a tab or a carriage return is prefixed with ``'`` so a spreadsheet shows it as
  text, never as a formula; :func:`csv_value` undoes exactly that on import (a lossless round trip).

This module must never import from the rest of prefkit.
"""

from __future__ import annotations

import re
from typing import Any

#: Characters that make links, images or table cells in CommonMark/GFM inline text, escaped with a
#: backslash (``[`` and ``]`` are enough to keep ``![x](url)`` from being an image or a link; emphasis
#: and code spans are left alone: they style text, they load and run nothing).
_MD_SPECIAL = re.compile(r"([\\\[\]|])")
#: What would start a block at the beginning of a line (heading, list, quote, rule).
_MD_BLOCK_START = re.compile(r"^(?:#{1,6}|[+\-]|\d{1,9}[.)])(?=\s|$)|^-{2,}")
#: Control characters (ESC and the rest; tab and newline are whitespace) and the invisible ones that
#: change how the text around them reads: bidi marks, embeddings, overrides and isolates (U+202E
#: shows ``exe.txt`` for ``txt.exe``), zero-width spaces, the word joiner and invisible operators, the
#: BOM, interlinear annotation and tag characters. The zero-width joiner and non-joiner stay: scripts
#: (Persian, Indic) and emoji need them, and they reorder nothing.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
#: OWASP: cells starting with these are formulas (or become one) in spreadsheet programs.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def shown_text(value: Any) -> str:
    """``value`` without control or invisible characters (:data:`_CONTROL`): what every published
    text (the card, its YAML header, Croissant, the manifest's override reason) starts from."""
    return _CONTROL.sub("", "" if value is None else str(value))


def _entities(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def md_text(value: Any) -> str:
    """``value`` as inert inline markdown: shows as the same characters, renders nothing."""
    text = " ".join(
        shown_text(value).split()
    )  # no newline can start a block (heading, list, table, HTML block)
    text = _MD_SPECIAL.sub(r"\\\1", _entities(text))
    return _MD_BLOCK_START.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], text)


def md_code(value: Any) -> str:
    """``value`` inside a code span (backticks in it lengthen the fence; HTML is inert in code)."""
    text = " ".join(shown_text(value).split())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def plain_text(value: Any) -> str:
    """Text for a JSON field a page may render: markup as entities, control characters removed."""
    text = _entities(shown_text(value))
    return text.replace("[", "&#91;").replace("]", "&#93;")  # no markdown link or image either


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text. A cell already starting with ``'`` before a formula
    character (or another ``'``) gets one more, so :func:`csv_value` gives back exactly the input."""
    if not isinstance(value, str) or not value:
        return value
    if value.startswith(FORMULA_START) or (value[0] == "'" and value[1:2].startswith((*FORMULA_START, "'"))):
        return "'" + value
    return value


def csv_value(cell: str) -> str:
    """The text :func:`csv_cell` was given for ``cell``."""
    if cell[:1] == "'" and cell[1:2].startswith((*FORMULA_START, "'")) and cell[1:2]:
        return cell[1:]
    return cell
