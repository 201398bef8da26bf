"""People (maintainers only): every account with its role, state, last sign-in and failed sign-ins,
and the changes ``prefkit users ...`` makes: add (with a generated password shown once), disable and
enable, unlock a name or a client address, set a password, change a role.

Each change is one call into :mod:`prefkit.curation.annotation.people` (what the commands call), an
audited event, and refused in the library's words: the last active maintainer can be neither disabled
nor demoted.
"""

import pandas as pd
import streamlit as st
from prefkit.annotate_app import console, ui
from prefkit.curation.annotation import people

me = ui.require("maintainer").username
project = ui.open_project()
st.title("People")

made = st.session_state.pop("_people_made", None)  # a generated password: this run shows it, no other
if made:
    st.success(
        ui.safe(
            "Added **{}**. Their one-time password, shown only this once: hand it over privately. "
            "It is stored only as a hash and signs in once, to choose their own, until {}.",
            made[0],
            people.one_time_until(project, made[0]),
        )
    )
    st.code(made[1], language=None)

rows = people.people(project)
ui.table(
    pd.DataFrame(
        [
            {
                "user": p.username,
                "role": p.role,
                "state": p.state,
                "last sign-in": console.when(p.last_sign_in),
                "failed sign-ins since": p.failures,
                "e-mail": p.email or "",
                "added": console.when(p.created_at),
            }
            for p in rows
        ]
    )
)
st.caption(
    "State: locked or backing off after failed sign-ins ([annotation.sign_in]); failures count since the "
    "last sign-in or unlock. Same as `prefkit users status`."
)
names = [p.username for p in rows]


def _add_form() -> None:
    with st.form("people_add", clear_on_submit=True, border=False):
        c1, c2 = st.columns(2)
        name = c1.text_input("New user name", key="people_add_name")
        new_role = c2.selectbox("Role", ["annotator", "maintainer"], key="people_add_role")
        email = c1.text_input("E-mail (optional)", key="people_add_email")
        how = c2.radio("Password", ["One-time password (shown once)", "Type one"], key="people_add_how")
        typed = st.text_input(
            "Password (only when typing one; 8 characters or more)",
            type="password",
            key="people_add_password",
        )
        if st.form_submit_button("Add user", type="primary"):
            given = typed if how == "Type one" else None

            def _add() -> str | None:
                made = people.add(project, me, name, new_role, email=email or None, password=given)
                if made:
                    st.session_state["_people_made"] = (name.strip(), made)
                return made

            console.act(_add, lambda _: f"Added {new_role} {name.strip()}")


def _access_form() -> None:
    c1, c2, c3 = st.columns([3, 1, 1], vertical_alignment="bottom")
    who = c1.selectbox("Account to disable or enable", names, key="people_access_who")
    if c2.button("Disable", key="people_disable"):
        console.act(
            lambda: people.disable(project, me, who), lambda n: f"Disabled {who}; {n} open session(s) ended"
        )
    if c3.button("Enable", key="people_enable"):
        console.act(lambda: people.enable(project, me, who), lambda _: f"Enabled {who}")
    st.caption("A disabled account cannot sign in and its open sessions end; its labels stay.")


def _unlock_form() -> None:
    with st.form("people_unlock", border=False):
        c1, c2 = st.columns(2)
        locked = [p.username for p in rows if p.failures]
        who = c1.selectbox(
            "User name to unlock",
            locked,
            index=None,
            placeholder="a name with failed sign-ins",
            key="people_unlock_who",
        )
        client = c2.text_input("Or a client address to unlock", key="people_unlock_client").strip()
        if st.form_submit_button("Unlock"):
            console.act(
                lambda: people.unlock(project, me, who, client or None),
                lambda _: "Unlocked " + " and ".join(x for x in (who, client) if x),
            )


def _password_form() -> None:
    with st.form("people_password", clear_on_submit=True, border=False):
        who = st.selectbox("Account to give a new password", names, key="people_pw_who")
        c1, c2 = st.columns(2)
        first = c1.text_input("New password (8 characters or more)", type="password", key="people_pw_1")
        again = c2.text_input("The new password again", type="password", key="people_pw_2")
        st.caption("Every open session of the account ends: each browser signed in as them is signed out.")
        if st.form_submit_button("Set password"):
            if first != again:
                st.error("Not done: the two passwords differ")
            else:
                console.act(
                    lambda: people.set_password(project, me, who, first),
                    lambda n: f"Set a new password for {who}; {n} open session(s) ended",
                )


def _role_form() -> None:
    with st.form("people_role", border=False):
        c1, c2 = st.columns(2)
        who = c1.selectbox("Account whose role changes", names, key="people_role_who")
        to = c2.radio("New role", ["annotator", "maintainer"], horizontal=True, key="people_role_to")
        st.caption(
            "Their open sessions end: the new role holds from their next sign-in. The last active "
            "maintainer cannot be demoted."
        )
        if st.form_submit_button("Change role"):
            console.act(
                lambda: people.set_role(project, me, who, to),
                lambda n: f"{who} is now a {to}; {n} open session(s) ended",
            )


FORMS = {
    "Add": _add_form,
    "Disable or enable": _access_form,
    "Unlock": _unlock_form,
    "Password": _password_form,
    "Role": _role_form,
}
console.forms(FORMS, "people_action")

console.audit_table(project.store, ("user",))
