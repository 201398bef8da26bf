"""Sign-in page: the only page a visitor who is not signed in can reach.

The inputs carry the ``autocomplete`` tokens password managers look for (``username``,
``current-password``) inside one form, so a saved password fills in and a new one is offered for saving.

A one-time password (made by a maintainer: ``users add --generate-password``, the People page) opens
no session: right after it, the person chooses their own (``new-password``), and only then is signed in.
"""

from datetime import UTC, datetime, timedelta

import streamlit as st
from prefkit.annotate_app import session, ui
from prefkit.curation.annotation import people, workflow
from prefkit.curation.annotation.signin import client_address
from prefkit.schemas.common import PrefkitError

project = ui.open_project()


def _client() -> str:
    # Throttling is per name and per client: the browser's address, or behind a configured proxy
    # the address it forwarded for (a header from anyone else is ignored).
    # Streamlit reports no address for a loopback connection (a proxy on the same host, or a
    # browser there): that peer is 127.0.0.1.
    ip = st.context.ip_address
    return client_address(
        ip if isinstance(ip, str) and ip else "127.0.0.1",
        st.context.headers.get("X-Forwarded-For"),
        project.config.annotation.sign_in.trusted_proxies,
    )


def _choose_own(username: str) -> None:
    """The step after a one-time password: the person's own password, then the session."""
    st.subheader("Choose your own password")
    st.caption(ui.safe("**{}**: the password you were given works once, for this.", username))
    with st.form("choose-password"):
        given = st.text_input(
            "The password you were given",
            type="password",
            autocomplete="current-password",
            key="choose_given",
        )
        first = st.text_input(
            "Your new password (8 characters or more)",
            type="password",
            autocomplete="new-password",
            key="choose_new",
        )
        again = st.text_input(
            "Your new password again", type="password", autocomplete="new-password", key="choose_again"
        )
        done = st.form_submit_button("Set my password and sign in", type="primary")
    if done:
        if first != again:
            st.error("The two new passwords differ")
            return
        try:
            account = people.choose_password(project, username, given, first)
        except PrefkitError as exc:
            st.error(str(exc))
            return
        del st.session_state["_choose_for"]
        session.start(account, _client())
        ui.rerun()
    if st.button("Back to sign-in", type="tertiary"):
        del st.session_state["_choose_for"]
        ui.rerun()


if "_choose_for" in st.session_state:
    _, mid, _ = st.columns([1, 2, 1])
    with mid:
        _choose_own(st.session_state["_choose_for"])
    st.stop()
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
        client = _client()
        try:
            account = workflow.sign_in(project, name, password, client=client)
        except workflow.AuthError as exc:
            message = str(exc)
            if exc.retry_after_s > 0:
                until = datetime.now(UTC) + timedelta(seconds=exc.retry_after_s)
                message += f" (the next try is checked from {until:%H:%M:%S} UTC)"
            st.error(message, icon=":material/lock_clock:" if exc.retry_after_s else None)
        else:
            if account.temporary:  # a one-time password: the person's own first, then a session
                st.session_state["_choose_for"] = account.username
            else:
                session.start(account, client)  # signed in, kept across a reload (annotate_app/session.py)
            ui.rerun()
