"""Guidelines of every task kind (the project's own markdown files)."""

import streamlit as st
from prefkit.annotate_app import ui

ui.require("annotator")
project = ui.open_project()
st.title("Guidelines")
for tab, kind in zip(st.tabs(list(ui.KIND_TITLES.values())), ui.KIND_TITLES, strict=True):
    with tab:
        st.markdown(project.guidelines(kind) or "_No guidelines written for this task kind yet._")
