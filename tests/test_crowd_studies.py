"""Crowd studies as library calls: creating a study, arriving through its entry URL, working,
being screened out, completing, timing out (curation/annotation/studies.py)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from appkit import project_fixtures
from conftest import crowd_study
from prefkit.curation.annotation import studies, workflow
from prefkit.curation.annotation.studies import EntryRefused, StudyError
from prefkit.curation.store import NO_PASSWORD

template, project = project_fixtures(n=8, overlap=2)
KIND = "preference_match"


def make_study(project, study_id="pilot", **over):
    codes = {"completion_code": "C0DE1", "screened_out_code": "SCR33N"}
    return crowd_study(project, study_id, **{**codes, "base_url": "http://127.0.0.1:8501", **over})


def params(created, pid="5f1a2b3c4d5e6f7a8b9c0d1e", session="sess1", **extra):
    query = {k: v[0] for k, v in parse_qs(urlsplit(created.entry_url).query).items()}
    return {**query, "PROLIFIC_PID": pid, "SESSION_ID": session, "STUDY_ID": "ps1", **extra}


def answer_all(project, study, username, gold_answer: str, regular: str = "partially"):
    """Label the participant's queue: gold items with ``gold_answer``, others ``regular``."""
    while (view := studies.participant_view(project, study, username)).status == "active":
        item = view.item
        value = gold_answer if item.task.is_gold else regular
        workflow.submit(project, username, item, {"coverage": value})
    return view


def test_entry_url_carries_the_study_secret_and_prolifics_placeholders(project):
    created = make_study(project)
    url = created.entry_url
    assert url.startswith("http://127.0.0.1:8501/?study=pilot.")
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}" in url
    secret = parse_qs(urlsplit(url).query)["study"][0].split(".", 1)[1]
    stored = project.store.studies.study("pilot")
    assert secret not in stored.secret_hash and len(stored.secret_hash) == 64
    assert created.n_gold == 2
    assert created.return_url == "https://app.prolific.com/submissions/complete?cc=C0DE1"


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"items": 0}, "items per participant"),
        ({"batch": "nope"}, "has no preference_match items"),
        ({"gold_share": 0.9, "items": 10}, "gold item(s)"),
        ({"completion_code": "same", "screened_out_code": "same"}, "must differ"),
        ({"completion_code": "has space"}, "completion code"),
        ({"completion_url": "javascript:alert(1)"}, r"http\(s\) URL"),
    ],
)
def test_a_study_with_a_bad_setting_is_refused_and_nothing_is_stored(project, over, message):
    with pytest.raises(StudyError, match=message):
        make_study(project, **over)
    assert project.store.studies.studies() == []


def test_a_participant_arrives_with_an_account_nobody_can_sign_in_to(project):
    created = make_study(project)
    arrival = studies.arrive(project, params(created))
    assert not arrival.returning and arrival.participant.status == "active"
    assert arrival.account.username.startswith("crowd.") and arrival.account.role == "annotator"
    with project.store.read() as conn:
        t = project.store.t["users"]
        stored = conn.execute(t.select().where(t.c.username == arrival.account.username)).mappings().one()
    assert stored["password_hash"] == NO_PASSWORD
    assert project.store.accounts.authenticate(arrival.account.username, NO_PASSWORD) is None
    assert [e.event for e in project.store.studies.events("pilot")] == ["arrived"]


def test_the_same_id_resumes_and_other_ids_get_queues_of_their_own(project):
    created = make_study(project)
    first = studies.arrive(project, params(created, pid="aaaa1111"))
    view = studies.participant_view(project, created.study, first.account.username)
    workflow.submit(project, first.account.username, view.item, {"coverage": "fully"})
    again = studies.arrive(project, params(created, pid="aaaa1111"))
    assert again.returning and again.account.username == first.account.username
    assert studies.participant_view(project, created.study, first.account.username).done == 1
    queues = []
    for pid in ("aaaa1111", "bbbb2222", "cccc3333"):
        who = studies.arrive(project, params(created, pid=pid)).account.username
        studies.participant_view(project, created.study, who)
        queues.append({q.task_id for q in project.store.studies.queue(who, KIND) if not q.is_gold})
    # overlap 2: the second gets the first's items (items complete first), the third other ones
    assert len(queues[0]) == 2 and queues[1] == queues[0] and not queues[2] & queues[0]
    events = [e.event for e in project.store.studies.events("pilot")]
    assert events == ["arrived", "resumed", "resumed", "arrived", "arrived"]


def test_a_participant_id_bound_to_another_session_is_refused(project):
    created = make_study(project)
    studies.arrive(project, params(created, pid="aaaa1111", session="s-one"))
    with pytest.raises(EntryRefused, match="already started this study in another session"):
        studies.arrive(project, params(created, pid="aaaa1111", session="s-two"))
    assert [e.event for e in project.store.studies.events("pilot")] == ["arrived"]


def test_participants_queue_is_one_chunk_of_the_study_batch_with_its_gold(project):
    created = make_study(project)
    who = studies.arrive(project, params(created)).account.username
    studies.participant_view(project, created.study, who)
    queue = project.store.studies.queue(who, KIND)
    assert len(queue) == 4 and sum(q.is_gold for q in queue) == 2
    view = answer_all(project, created.study, who, gold_answer="fully")
    assert view.status == "completed" and view.code == "C0DE1" and view.done == 4
    assert len(project.store.studies.queue(who, KIND)) == 4  # no second chunk after the last item
    assert [e.event for e in project.store.studies.events("pilot")] == ["arrived", "completed"]


def test_a_participant_who_can_no_longer_pass_the_checks_is_screened_out_at_once(project):
    created = make_study(project, screen_below=0.75)  # 2 gold items: one wrong is already 0.5 at best
    who = studies.arrive(project, params(created)).account.username
    while (view := studies.participant_view(project, created.study, who)).item.task.is_gold is False:
        workflow.submit(project, who, view.item, {"coverage": "partially"})
    workflow.submit(project, who, view.item, {"coverage": "not_covered"})
    ended = studies.participant_view(project, created.study, who)
    assert ended.status == "screened_out" and ended.code == "SCR33N"
    assert ended.back_url == "https://app.prolific.com/submissions/complete?cc=SCR33N"
    assert ended.gold.done == 1 and ended.gold.right == 0
    events = project.store.studies.events("pilot")
    assert [e.event for e in events] == ["arrived", "screened_out"] and events[1].detail["gold_total"] == 2
    # stopped: no item is shown to them again, and their unfinished items went back to the pool
    assert project.store.assignments.open_item(who, KIND) is None


def test_past_the_time_limit_a_participant_is_timed_out_and_their_items_go_back(project):
    created = make_study(project)
    who = studies.arrive(project, params(created)).account.username
    studies.participant_view(project, created.study, who)
    with project.store.write() as conn:  # they arrived an hour ago (the limit is 30 minutes)
        p = project.store.t["study_participants"]
        conn.execute(p.update().values(arrived_at="2020-01-01T00:00:00.000000Z"))
    assert studies.release_expired(project, created.study) == ["5f1a2b3c4d5e6f7a8b9c0d1e"]
    assert project.store.studies.queue(who, KIND) == []
    view = studies.participant_view(project, created.study, who)
    assert view.status == "timed_out" and view.code is None


@pytest.mark.parametrize(
    "change",
    [
        {"PROLIFIC_PID": None},
        {"SESSION_ID": None},
        {"PROLIFIC_PID": "a" * 1000},
        {"PROLIFIC_PID": "abc\x00def"},
        {"PROLIFIC_PID": "abc\ndef"},
        {"study": "pilot.wrongsecretwrongsecretwrong"},
        {"study": "pilot"},
        {"study": None},
        {"study": "other." + "x" * 32},
    ],
)
def test_a_forged_or_malformed_entry_url_is_refused_and_records_nothing(project, change):
    created = make_study(project)
    query = params(created)
    for key, value in change.items():
        if value is None:
            query.pop(key)
        else:
            query[key] = value
    before = project.store.studies.counts()
    with pytest.raises(EntryRefused):
        studies.arrive(project, query)
    assert project.store.studies.counts() == before


def test_another_studys_secret_does_not_open_this_study(project):
    one = make_study(project, "one")
    two = make_study(project, "two")
    secret_of_two = params(two)["study"].split(".", 1)[1]
    before = project.store.studies.counts()
    with pytest.raises(EntryRefused, match="not valid"):
        studies.arrive(project, params(one, study="one." + secret_of_two))
    assert project.store.studies.counts() == before


def test_a_new_link_retires_the_old_one(project):
    created = make_study(project)
    url = studies.new_link(project, "pilot", "https://annotate.example.org")
    with pytest.raises(EntryRefused):
        studies.arrive(project, params(created))
    fresh = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    arrived = studies.arrive(project, {**fresh, "PROLIFIC_PID": "abc", "SESSION_ID": "s", "STUDY_ID": "x"})
    assert arrived.participant.status == "active"


def test_nobody_can_take_a_participants_name_with_users_add(project):
    from prefkit.curation.store import StoreError

    with pytest.raises(StoreError, match="reserved for crowd study participants"):
        project.store.accounts.add_user("Crowd.abc", "annotator", "long-enough-1")


def test_a_full_study_refuses_a_newcomer_but_lets_its_participants_back(project):
    from prefkit.curation.annotation.studies import Rules

    created = make_study(project, rules=Rules(places=1))
    studies.arrive(project, params(created, pid="first"))
    before = project.store.studies.counts()
    with pytest.raises(EntryRefused, match="This study is full"):
        studies.arrive(project, params(created, pid="second"))
    assert project.store.studies.counts() == before
    assert studies.arrive(project, params(created, pid="first")).returning
    with project.store.write() as conn:  # the first ran out of time: their place is free again
        p = project.store.t["study_participants"]
        conn.execute(p.update().values(arrived_at="2020-01-01T00:00:00.000000Z"))
    assert not studies.arrive(project, params(created, pid="second")).returning


def test_a_queue_emptied_by_a_release_is_a_time_out_not_a_completion(project):
    created = make_study(project)
    who = studies.arrive(project, params(created)).account.username
    view = studies.participant_view(project, created.study, who)
    workflow.submit(project, who, view.item, {"coverage": "fully"})
    workflow.release_stale(project, 0, annotator=who, kind=KIND)  # idle past stale_after_hours, say
    after = studies.participant_view(project, created.study, who)
    assert after.status == "timed_out" and after.code is None
    assert [e.event for e in project.store.studies.events("pilot")] == ["arrived", "timed_out"]


def work(project, study, username, gold_answer="fully", regular=None):
    """Label gold items with ``gold_answer``; skip every regular item (``regular``: label it so)."""
    while (view := studies.participant_view(project, study, username)).status == "active":
        item = view.item
        if item.task.is_gold:
            workflow.submit(project, username, item, {"coverage": gold_answer})
        elif regular is None:
            workflow.skip(project, username, item, "no time")
        else:
            workflow.submit(project, username, item, {"coverage": regular})
    return view


def test_a_participant_who_skips_every_regular_item_ends_incomplete_without_a_code(project):
    from prefkit.curation.quality.study_report import platform_files, study_report

    created = make_study(project)
    who = studies.arrive(project, params(created)).account.username
    view = work(project, created.study, who)
    assert view.status == "incomplete" and view.code is None and view.back_url is None
    assert project.store.assignments.open_item(who, KIND) is None  # no more items
    [line] = study_report(project, "pilot").participants
    assert (line.status, line.decision, line.skipped, line.flagged) == ("incomplete", "reject", 2, 0)
    assert "answered 0 of 2 regular item(s)" in line.reason and "2 skipped" in line.reason
    assert "reject" in platform_files(study_report(project, "pilot"))["decisions.csv"]
    assert [e.event for e in project.store.studies.events("pilot")] == ["arrived", "incomplete"]


def test_a_study_asking_half_the_items_answered_completes_one_with_a_skip(project):
    from prefkit.curation.annotation.studies import Rules

    created = make_study(project, rules=Rules(min_answered=0.5))
    who = studies.arrive(project, params(created)).account.username
    skipped = False
    while (view := studies.participant_view(project, created.study, who)).status == "active":
        if not view.item.task.is_gold and not skipped:
            workflow.skip(project, who, view.item, "unclear")
            skipped = True
        else:
            workflow.submit(project, who, view.item, {"coverage": "fully"})
    assert skipped and view.status == "completed" and view.code == "C0DE1"


def test_gold_screening_decides_before_the_answered_share(project):
    created = make_study(project, screen_below=0.75)
    who = studies.arrive(project, params(created)).account.username
    view = work(project, created.study, who, gold_answer="not_covered")
    assert view.status == "screened_out" and view.code == "SCR33N"


def test_min_answered_outside_zero_to_one_is_refused(project):
    from prefkit.curation.annotation.studies import Rules

    with pytest.raises(StudyError, match="--min-answered"):
        make_study(project, rules=Rules(min_answered=1.5))


def test_a_click_after_the_time_limit_records_nothing(project):
    created = make_study(project)
    who = studies.arrive(project, params(created)).account.username
    view = studies.participant_view(project, created.study, who)
    with project.store.write() as conn:  # they arrived an hour ago (the limit is 30 minutes)
        p = project.store.t["study_participants"]
        conn.execute(p.update().values(arrived_at="2020-01-01T00:00:00.000000Z"))
    with pytest.raises(workflow.TimeUp, match="time for this study has passed"):
        workflow.submit(project, who, view.item, {"coverage": "fully"})
    with pytest.raises(workflow.TimeUp):
        workflow.skip(project, who, view.item, "no time")
    assert project.store.labels.events(annotator=who) == []
    assert studies.participant_view(project, created.study, who).status == "timed_out"


def test_decisions_csv_quotes_an_id_a_spreadsheet_would_run(project):
    import csv
    import io

    from prefkit.curation.quality.study_report import platform_files, study_report

    created = make_study(project)
    who = studies.arrive(project, params(created, pid="-2-3")).account.username
    work(project, created.study, who)  # incomplete: a rejection with its reason
    text = platform_files(study_report(project, "pilot"))["decisions.csv"]
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1][:2] == ["'-2-3", "reject"]


def test_a_tab_that_checked_before_the_last_item_gets_no_second_share(project):
    from prefkit.curation.annotation.assignment import QueuePolicy

    created = make_study(project)
    who = studies.arrive(project, params(created)).account.username
    answer_all(project, created.study, who, gold_answer="fully")
    # another tab's run passed the "queue done?" check before this tab's last submit: it asks for items
    late = workflow.annotator_view(project, who, KIND, policy=QueuePolicy(4, 0.5), batch="default")
    assert late.item is None and len(project.store.studies.queue(who, KIND)) == 4
