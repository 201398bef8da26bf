"""A crowd study's page: the only page a participant sees (no sign-in form, no other page).

Opened by the study's entry URL (``?study=<id>.<secret>&PROLIFIC_PID=...&SESSION_ID=...``): the URL is
checked once per browser session (:func:`prefkit.curation.annotation.studies.arrive`) and the
participant's account is signed in with a session of its own (kept in the cookie like anyone's, for
the study's time limit). A URL that opens nothing is one page saying so; nothing is recorded. Then
the guidelines, the items one at a time (the item, its form and the progress line are one fragment,
as on the Annotate page), and at the end the completion code, or the screened-out code, with the
link back to the platform.
"""

import streamlit as st
from prefkit.annotate_app import errors, screen, session, ui
from prefkit.annotate_app.forms import form_for
from prefkit.curation.annotation import studies, workflow
from prefkit.curation.annotation.signin import client_address

project = ui.open_project()
ENTERED = "_study_entered"  # the entry URL this browser session arrived with


def refused(message: str) -> None:
    st.title("This study link cannot be opened")
    st.error(message, icon=":material/link_off:")
    st.caption(
        "Nothing was recorded. If you came from the study's page on the platform, open it from there again."
    )
    st.stop()


def enter() -> None:
    """Arrive through the URL's query parameters, once per browser session and URL."""
    params = {k: st.query_params[k] for k in st.query_params}
    key = repr(sorted(params.items()))
    if st.session_state.get(ENTERED) == key and ui.signed_in() is not None:
        return
    try:
        arrival = studies.arrive(project, params)
    except studies.EntryRefused as exc:
        refused(str(exc))
        return
    ip = st.context.ip_address
    client = client_address(
        ip if isinstance(ip, str) and ip else "127.0.0.1",
        st.context.headers.get("X-Forwarded-For"),
        project.config.annotation.sign_in.trusted_proxies,
    )
    ui.sign_out()  # whoever this browser session was, it is now this participant
    session.start(arrival.account, client, hours=studies.session_hours(arrival.study))
    st.session_state[ENTERED] = key
    if arrival.returning:
        st.session_state["_study_intro"] = True  # they read the guidelines on their first visit


if "study" in st.query_params:
    enter()
user = ui.signed_in()
participant = project.store.studies.participant_by_username(user.username) if user else None
if user is None or participant is None:
    refused("This page is for the participants of a study: open it from the study's page on the platform.")
assert user is not None and participant is not None  # refused() stops the page
study = studies.get_study(project, participant.study_id)
kind, title = study.kind, ui.KIND_TITLES[study.kind]
username = user.username


def ended(view: studies.ParticipantView) -> None:
    """The page of a participant who is done, screened out, out of time or without items."""
    back = studies.PLATFORMS[study.platform].title
    if view.status == "completed":
        st.title("Thank you! You have finished this study")
        st.success(ui.safe("Your completion code: **{}**", view.code), icon=":material/task_alt:")
    elif view.status == "screened_out":
        st.title("This study has ended for you")
        st.warning(
            ui.safe(
                "Some of your answers did not follow the guidelines, so this study stops here for you. "
                "Thank you for your time. Your code: **{}**",
                view.code,
            ),
            icon=":material/block:",
        )
    elif view.status == "incomplete":
        st.title("This study has ended for you")
        st.warning(
            f"Too many items were skipped or reported: the study asks for an answer to at least "
            f"{studies.min_answered(study):.0%} of its items, so it stops here for you. "
            f"Please return the study on {back}.",
            icon=":material/block:",
        )
    elif view.status == "timed_out":
        st.title("The time for this study has passed")
        st.info(
            f"The study's time limit ({study.time_limit_minutes:g} minutes) has passed; your items went back."
        )
    else:
        st.title("No items are left for you")
        st.info(f"Every item of this study has been given out. Please return the study on {back}.")
    if view.back_url:
        st.link_button(f"Back to {back} with the code", view.back_url, type="primary")


def current() -> studies.ParticipantView | None:
    """The participant's view now; None (and the page reloads) when their session ended."""
    try:
        return studies.participant_view(project, study, username, ui.session_token())
    except (workflow.SessionEnded, workflow.AuthError):
        ui.sign_out()
        return None


first = current()
if first is None:
    ui.rerun()
assert first is not None
if first.status != "active":
    ended(first)
    st.stop()
guidelines = ui.guidelines(project, kind)
if not st.session_state.get("_study_intro") and first.done == 0:
    st.title(study.name)
    stated = study.rules.get("too_fast_s")
    st.info(
        f"You will see {first.total} items; it takes about {studies.estimated_minutes(project, study)} "
        f"minutes (at most {study.time_limit_minutes:g}). Read the guidelines once before your first item, "
        "and answer each item as they ask."
        + (
            f" Please take at least {stated:g} seconds per item on average: a submission much faster than "
            "that may not be approved."
            if stated
            else ""
        ),
        icon=":material/menu_book:",
    )
    with st.container(border=True):
        st.markdown(guidelines)
    if st.button("Start", type="primary", shortcut="Enter", key="study_start"):
        st.session_state["_study_intro"] = True
        ui.rerun()
    st.stop()
with st.expander("Guidelines"):  # above the items, not in a sidebar: the participant's page is one column
    st.markdown(guidelines)


@st.fragment
@errors.guarded
def item_panel() -> None:
    ui.run_mark()
    view = current() if ui.signed_in() else None
    if view is None or view.status != "active" or view.item is None:
        ui.rerun()  # done, stopped or signed out: the whole page says so
        return
    item = view.item
    screen.track(kind, item)
    form = form_for(kind)
    session.reopen(item.event_id, lambda: view.draft)
    ui.last_done()
    lead = getattr(form, "lead", None)
    st.markdown(
        f"#### {title} · item {view.done + 1} of {view.total}"
        + ("\n\n" + lead(item.task) if lead is not None else "")
    )
    screen.show_notice()
    screen.take_problem(item.event_id)
    screen.show_problem(item.event_id)
    form.render(project, username, item)
    ui.skip_and_flag(username, item, comment=getattr(form, "COMMENT_IN_PANEL", False))
    session.keep(item.event_id, lambda state: workflow.save_draft(project, username, item, state))


item_panel()
