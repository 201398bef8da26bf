"""Streamlit's own floor for ``bench_browser.py``: the least an item page can be.

One fragment with the header the benchmark watches and one button bound to the "1" key whose callback
moves to the next "item"; no sign-in, no database, no sidebar. Served with the same options as
``prefkit annotate serve`` and driven by the same harness, its latency and CPU per submit are what any
Streamlit page pays on the machine before prefkit does anything.
"""

import streamlit as st

if "n" not in st.session_state:
    st.session_state["n"] = 0


def _next() -> None:
    st.session_state["n"] += 1


@st.fragment
def item() -> None:
    n = st.session_state["n"]
    st.markdown(f"## Preference matching · {1000 - n} left for you")
    st.button("Fully covered", shortcut="1", key=f"item{n}", on_click=_next)


item()
