"""prefkit annotation app (Streamlit entry point): sign-in gate and role-based navigation.

Served by ``prefkit annotate serve``. Nothing but the sign-in page exists for a visitor who is not
signed in; maintainer pages are only registered for maintainers (and check the role again). A crowd study's
entry link, and a participant's browser, reach the study's page alone (views/study_entry.py).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from prefkit.annotate_app import errors, page_script, session, ui
from prefkit.curation.annotation.studies import is_participant
from prefkit.curation.store import DatabaseUnavailable

# A local icon: a Material-symbol page icon would be fetched from Google's servers by every browser.
st.set_page_config(
    page_title="prefkit annotate", page_icon=str(Path(__file__).with_name("icon.png")), layout="wide"
)


def _database_down(exc: DatabaseUnavailable) -> None:
    """A shared database that stopped answering (after the store's retries): one line, no traceback.
    Submits already acknowledged are stored; the item on screen keeps its submit id for the retry."""
    st.error(f"{exc}. Labels you already submitted are safe; reload the page in a moment to go on.")
    st.stop()


ui.begin_run()  # whether the page started this run itself (ui.rerun: at most once per action)
user = ui.signed_in()
try:
    if user is None:
        user = session.resume()  # a reload: the browser's signed session token, when it still holds
    elif not ui.still_signed_in(user):  # signed out in another tab, expired, revoked or disabled
        ui.sign_out()
        user = None
except DatabaseUnavailable as exc:
    _database_down(exc)

if "study" in st.query_params or (user is not None and is_participant(user.username)):
    # a crowd study's entry link, or a participant's browser: their study's page and nothing else
    page = st.navigation(
        [st.Page("views/study_entry.py", title="Study", icon=":material/assignment_ind:")], position="hidden"
    )
elif user is None:
    page = st.navigation(
        [st.Page("views/sign_in.py", title="Sign in", icon=":material/login:")], position="hidden"
    )
else:
    maintainer = user.role == "maintainer"  # maintainers land on the dashboard
    pages = {
        "Annotate": [
            st.Page(
                "views/annotate.py", title="Annotate", icon=":material/edit_note:", default=not maintainer
            ),
            st.Page("views/my_items.py", title="My items", icon=":material/checklist:"),
            st.Page("views/guidelines.py", title="Guidelines", icon=":material/menu_book:"),
        ]
    }
    if maintainer:
        pages["Maintain"] = [
            st.Page("views/dashboard.py", title="Dashboard", icon=":material/monitoring:", default=True),
            st.Page("views/adjudicate.py", title="Adjudication", icon=":material/balance:"),
            st.Page("views/item.py", title="Item", icon=":material/article:"),
            st.Page("views/people.py", title="People", icon=":material/group:"),
            st.Page("views/work.py", title="Work", icon=":material/assignment:"),
            st.Page("views/release.py", title="Release", icon=":material/new_releases:"),
            st.Page("views/studies.py", title="Studies", icon=":material/groups:"),
        ]
    page = st.navigation(pages)
    with st.sidebar:
        st.caption(
            ui.safe("signed in as **{}** ({})", user.username, user.role)
            + "  \npress **?** for every keyboard shortcut"
        )
        if st.button("Sign out", key="signout", type="tertiary"):
            session.end()
            ui.rerun()
        page_script.theme_switch(st)  # light, dark or the system's, for this browser
ui.run_mark(full=True)  # counts the runs, for the page scripts (hidden)
ui.show_flash()
page_script.draw()  # the item-top script, the keys, the layout and the keyboard help, in one element
session.cookie_script()  # after a sign-in or sign-out: write or forget the session cookie
with errors.one_line():  # an unexpected error: one line and an id here, the traceback in the server log
    try:
        page.run()
    except DatabaseUnavailable as exc:
        _database_down(exc)
