"""Untrusted text (dialogue turns, memories, preferences) as inert markdown.

``st.markdown`` never renders raw HTML without ``unsafe_allow_html``, but it does render markdown,
math and Streamlit's colour/icon directives. Backslash-escaping every ASCII punctuation character
(CommonMark allows it for all of them) makes the text display exactly as written: tags, links,
images, ``$`` and ``:directive[...]`` all stay literal text. Nothing here imports Streamlit.
"""

from __future__ import annotations

import re

_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_LEADING_SPACES = re.compile(r"^( +)", re.MULTILINE)


def md_escape(text: str) -> str:
    """Markdown source that renders as ``text`` verbatim, line breaks and indentation included."""
    escaped = "".join("\\" + ch if ch in _PUNCT else ch for ch in text.replace("\r\n", "\n"))
    # Leading spaces would start a code block; non-breaking spaces keep the indentation visible.
    escaped = _LEADING_SPACES.sub(lambda m: "\u00a0" * len(m.group(1)), escaped)
    return escaped.replace("\n", "  \n")
