"""A check and the write it guards happen in one transaction: processes that race for the last of
something (a study's places, the last active maintainer, a one-time password, the live label an
edit replaces, an item's overlap, a participant's one share of the batch, a user name that looks
like another) never all win, on SQLite
and on PostgreSQL. Each scenario starts its processes at a barrier so they collide."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from appkit import seed_pairs
from conftest import Forked, crowd_study
from prefkit.curation.annotation import people, studies, workflow
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.project import Project
from test_release_support import add_users

KIND = "preference_match"
RACERS = 4

# Processes race on purpose: alone, after the parallel run, so the race is theirs alone.
pytestmark = pytest.mark.serial


def _entry(project: Project, places: int) -> dict[str, str]:
    rules = studies.Rules(places=places)
    created = crowd_study(project, "race", completion_code="DONE1", screened_out_code="OUT1", rules=rules)
    return {**{k: v[0] for k, v in parse_qs(urlsplit(created.entry_url).query).items()}, "STUDY_ID": "ps1"}


def act(project: Project, scenario: str, i: int, setup: dict) -> str:
    """One racer's move; returns what it was told."""
    if scenario == "places":
        studies.arrive(project, {**setup, "PROLIFIC_PID": f"pid{i}", "SESSION_ID": f"s{i}"})
    elif scenario == "share":  # one participant, several tabs: one chunk of the batch
        arrival = studies.arrive(project, {**setup, "PROLIFIC_PID": "pid0", "SESSION_ID": "s0"})
        studies.participant_view(project, arrival.study, arrival.account.username)
    elif scenario == "maintainer":
        people.disable(project, "shell:test", f"boss{i % 2}")
    elif scenario == "otp":
        people.choose_password(project, "newcomer", setup["otp"], f"my-own-password-{i}")
    elif scenario == "edit":
        workflow.edit_label(
            project, "alice", setup["event"], {"coverage": ["partially", "not_covered"][i % 2]}, f"tab {i}"
        )
    elif scenario == "names":  # four names that look alike but are not equal
        people.add(
            project,
            "shell:test",
            ["alice2", "alic\u04352", "\u0430lice2", "\u0430lic\u04352"][i],
            "annotator",
        )
    elif scenario == "overlap":
        while (item := workflow.current_item(project, f"ann{i}", KIND)) is not None:
            workflow.submit(project, f"ann{i}", item, {"coverage": "fully"})
    return "ok"


def warm_up(project: Project) -> None:
    get_kind(KIND)
    project.store.accounts.users()
    if project.store.studies.study("race") is not None:
        studies.release_expired(project, studies.get_study(project, "race"))


def racer(root: str, scenario: str, i: int, setup: dict, barrier, out: str) -> None:
    project = Project(root)
    warm_up(project)  # first-use loading done before the barrier, so the racers' moves overlap
    barrier.wait(timeout=120)
    try:
        told = act(project, scenario, i, setup)
    except Exception as exc:  # what the racer was refused with: the test reads it
        told = f"refused: {type(exc).__name__}: {exc}"
    Path(out).write_text(json.dumps(told))
    project.close()


def race(project: Project, scenario: str, setup: dict, n: int = RACERS) -> list[str]:
    project.close()
    ctx = Forked(__name__)
    barrier = ctx.Barrier(n)
    outs = [project.root / f"racer{i}.json" for i in range(n)]
    procs = [
        ctx.Process(target=racer, args=(str(project.root), scenario, i, setup, barrier, str(outs[i])))
        for i in range(n)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    assert [p.exitcode for p in procs] == [0] * n
    return [json.loads(o.read_text()) for o in outs]


@pytest.fixture
def racing(tmp_path, database):
    project = Project.init(tmp_path / "proj", name="races", database=database)
    add_users(project.store, "alice", *(f"ann{i}" for i in range(RACERS)))
    seed_pairs(project, 12)
    create_tasks(project, KIND, overlap=1, gold_rate=0)
    yield project
    project.close()


def test_four_newcomers_at_once_take_one_place(racing):
    told = race(racing, "places", _entry(racing, places=1))
    store = Project(racing.root).store
    assert len(store.studies.participants("race")) == 1
    assert told.count("ok") == 1
    assert sum("every place has been taken" in t for t in told) == RACERS - 1
    assert [e.event for e in store.studies.events("race")] == ["arrived"]


def test_one_participant_in_four_tabs_gets_one_share_of_the_batch(racing):
    told = race(racing, "share", _entry(racing, places=0))
    store = Project(racing.root).store
    (p,) = store.studies.participants("race")
    queue = store.studies.queue(p.username, KIND)
    assert told.count("ok") == RACERS
    assert len(queue) == 4 and sum(q.is_gold for q in queue) == 2


def test_two_maintainers_disabling_each_other_at_once_leave_one(racing):
    add_users(racing.store, "boss0", "boss1", role="maintainer")
    told = race(racing, "maintainer", {}, n=2)
    store = Project(racing.root).store
    active = [u.username for u in store.accounts.users(role="maintainer") if u.active]
    assert len(active) == 1 and told.count("ok") == 1
    assert sum("last active maintainer" in t for t in told) == 1


def test_a_one_time_password_chosen_over_in_four_tabs_at_once_is_used_once(racing):
    otp = people.add(racing, "shell:test", "newcomer", "annotator")
    told = race(racing, "otp", {"otp": otp})
    store = Project(racing.root).store
    assert told.count("ok") == 1
    winner = told.index("ok")
    assert store.accounts.authenticate("newcomer", f"my-own-password-{winner}") is not None
    assert store.accounts.authenticate("newcomer", otp) is None
    assert sum(a.outcome == "password" for a in store.accounts.sign_in_log("newcomer")) == 1


def test_four_tabs_editing_one_label_at_once_record_one_edit(racing):
    item = workflow.current_item(racing, "alice", KIND)
    workflow.submit(racing, "alice", item, {"coverage": "fully"})
    told = race(racing, "edit", {"event": item.event_id})
    store = Project(racing.root).store
    events = store.labels.events(annotator="alice")
    assert len(events) == 2 and told.count("ok") == 1
    assert sum("changed since you opened it" in t for t in told) == RACERS - 1
    assert store.labels.live_event("alice", item.task.task_id).comment == f"tab {told.index('ok')}"


def test_four_look_alike_names_added_at_once_make_one_account(racing):
    told = race(racing, "names", {})
    store = Project(racing.root).store
    assert (
        len(
            [
                u
                for u in store.accounts.users()
                if u.username.endswith("lice2") or u.username.endswith("lic\u04352")
            ]
        )
        == 1
    )
    assert told.count("ok") == 1 and sum("looks like the existing" in t for t in told) == RACERS - 1


def test_four_annotators_at_once_never_take_an_item_past_its_overlap(racing):
    told = race(racing, "overlap", {})
    store = Project(racing.root).store
    events = store.labels.events(kind=KIND)
    assert told == ["ok"] * RACERS
    assert len(events) == 12 and len({e.task_id for e in events}) == 12
