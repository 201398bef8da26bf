"""Sign-in page: the only page a visitor who is not signed in can reach."""

import streamlit as st
from prefkit.annotate_app import ui
from prefkit.curation.annotation import workflow

project = ui.open_project()
_, mid, _ = st.columns([1, 2, 1])
with mid:
    st.title("prefkit annotate")
    st.caption(ui.safe("project **{}**", project.name))
    with st.form("sign-in"):
        name = st.text_input("User name", key="signin_user")
        password = st.text_input("Password", type="password", key="signin_password")
        go = st.form_submit_button("Sign in", type="primary")
    if go:
        try:
            ip = st.context.ip_address  # the browser's address: throttling is per name and per client
            client = ip if isinstance(ip, str) and ip else "unknown address"
            st.session_state["user"] = workflow.sign_in(project, name, password, client=client)
        except workflow.AuthError as exc:
            st.error(str(exc))
        else:
            st.rerun()
