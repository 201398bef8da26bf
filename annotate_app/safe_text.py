"""Untrusted text (dialogue turns, memories, preferences, names, ids, comments) as inert markdown.

``st.markdown`` never renders raw HTML without ``unsafe_allow_html``, but it does render markdown,
math, Streamlit's colour/icon directives and (GitHub-flavoured) bare URLs and e-mail addresses as
links. Backslash-escaping every ASCII punctuation character (CommonMark allows it for all of them)
makes the text display exactly as written: tags, links, images, ``$``, ``:directive[...]`` and
``https://...`` / ``www.`` / ``a@b.org`` all stay literal text (an address is set as inline code:
GitHub-flavoured markdown would link it even with its punctuation escaped).

This is the one helper every page uses for data: :func:`md_escape` for a value, :func:`safe` to put
values into a trusted markdown template (captions, headers, titles). Nothing here imports Streamlit.
"""

from __future__ import annotations

import re

_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_LEADING_SPACES = re.compile(r"^( +)", re.MULTILINE)
# What GitHub-flavoured markdown turns into a link by itself, even with every punctuation escaped.
_AUTOLINK = re.compile(
    r"(?:https?://|ftp://|www\.|mailto:|xmpp:)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE
)


def _code_span(token: str) -> str:
    """``token`` as an inline code span: shown verbatim, never a link (fence longer than any run of
    backticks inside; padded when it starts or ends with one)."""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", token)), default=0) + 1)
    pad = " " if token.startswith("`") or token.endswith("`") else ""
    return f"{fence}{pad}{token}{pad}{fence}"


_PUNCT_RE = re.compile(r"[!-/:-@\[-`{-~]")  # _PUNCT: every ASCII punctuation character, in four ranges
#: A text without any of these holds no autolink (the pattern scans every word for an ``@`` otherwise).
_LINK_MARKS = ("@", "://", "www.", "mailto:", "xmpp:")


def _escape_chars(text: str) -> str:
    return _PUNCT_RE.sub(r"\\\g<0>", text)


def md_escape(text: object) -> str:
    """Markdown source that renders as ``text`` verbatim, line breaks and indentation included;
    bare URLs and e-mail addresses are shown as code (text), never as links."""
    text = "" if text is None else str(text).replace("\r\n", "\n")
    parts, last, lowered = [], 0, text.lower()
    for m in _AUTOLINK.finditer(text) if any(mark in lowered for mark in _LINK_MARKS) else ():
        parts += [_escape_chars(text[last : m.start()]), _code_span(m.group(0))]
        last = m.end()
    escaped = "".join([*parts, _escape_chars(text[last:])])
    # Leading spaces would start a code block; non-breaking spaces keep the indentation visible.
    escaped = _LEADING_SPACES.sub(lambda m: "\u00a0" * len(m.group(1)), escaped)
    return escaped.replace("\n", "  \n")


def safe(template: str, *values: object) -> str:
    """``template`` (trusted markdown written in the code) with each ``{}`` filled by an escaped value:
    ``safe("**{}** · {}", "a*b", "<i>")`` shows **a*b** · <i> (the value's markup stays text)."""
    return template.format(*(md_escape(v) for v in values))
