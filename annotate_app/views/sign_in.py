"""Sign-in page: the only page a visitor who is not signed in can reach.

The inputs carry the ``autocomplete`` tokens password managers look for (``username``,
``current-password``) inside one form, so a saved password fills in and a new one is offered for saving.
"""

from datetime import UTC, datetime, timedelta

import streamlit as st
from prefkit.annotate_app import session, ui
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.signin import client_address

project = ui.open_project()
_, mid, _ = st.columns([1, 2, 1])
with mid:
    st.title("prefkit annotate")
    st.caption(ui.safe("project **{}**", project.name))
    with st.form("sign-in"):
        name = st.text_input("User name", key="signin_user", autocomplete="username")
        password = st.text_input(
            "Password", type="password", key="signin_password", autocomplete="current-password"
        )
        go = st.form_submit_button("Sign in", type="primary")
    if go:
        # Throttling is per name and per client: the browser's address, or behind a configured proxy
        # the address it forwarded for (a header from anyone else is ignored).
        # Streamlit reports no address for a loopback connection (a proxy on the same host, or a
        # browser there): that peer is 127.0.0.1.
        ip = st.context.ip_address
        client = client_address(
            ip if isinstance(ip, str) and ip else "127.0.0.1",
            st.context.headers.get("X-Forwarded-For"),
            project.config.annotation.sign_in.trusted_proxies,
        )
        try:
            account = workflow.sign_in(project, name, password, client=client)
        except workflow.AuthError as exc:
            message = str(exc)
            if exc.retry_after_s > 0:
                until = datetime.now(UTC) + timedelta(seconds=exc.retry_after_s)
                message += f" (the next try is checked from {until:%H:%M:%S} UTC)"
            st.error(message, icon=":material/lock_clock:" if exc.retry_after_s else None)
        else:
            session.start(account, client)  # signed in, and kept across a reload (annotate_app/session.py)
            st.rerun()
