"""Untrusted text becomes markdown that displays it verbatim."""

from __future__ import annotations

import re

from prefkit.annotate_app.safe_text import md_escape, safe


def unescape(md: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", md.replace("  \n", "\n")).replace("\u00a0", " ")


def test_every_markup_character_is_escaped_and_round_trips():
    text = "<script>alert(1)</script> [x](javascript:y) ![i](/e/x.png) $x$ :red[a] **b** `c` # h"
    md = md_escape(text)
    assert unescape(md) == text
    assert re.search(r"(?<!\\)[<>\[\]()$*`#:]", md) is None


def test_line_breaks_and_indentation_survive():
    md = md_escape("a\n    indented code?\nb")
    assert md == "a  \n\u00a0\u00a0\u00a0\u00a0indented code\\?  \nb"


def test_bare_urls_and_addresses_become_code_never_links():
    md = md_escape("see https://evil.example/a`b, www.evil.example and me@evil.example <b>")
    assert md == "see ``https://evil.example/a`b,`` `www.evil.example` and `me@evil.example` \\<b\\>"


def test_safe_fills_a_trusted_template_with_escaped_values():
    assert safe("**{}** · {}", "a*b", "<i>") == "**a\\*b** · \\<i\\>"
