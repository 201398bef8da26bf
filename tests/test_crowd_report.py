"""A crowd study's review (curation/quality/study_report.py): every figure of ``prefkit crowd
report`` checked against values worked out by hand from a scripted study, the platform files, the
bonus rule, and the study on the card's Cost section."""

from __future__ import annotations

import json

import pytest
from appkit import project_fixtures
from click.testing import CliRunner
from conftest import crowd_study
from prefkit.cli import cli
from prefkit.curation.annotation import studies
from prefkit.curation.annotation.annotator_model import annotator_reliability, fit_kind
from prefkit.curation.annotation.studies import Rules
from prefkit.curation.quality.study_report import platform_files, study_report
from prefkit.schemas.curation import LabelEvent

template, project = project_fixtures(n=8, overlap=2)
KIND = "preference_match"
T0 = "2026-11-20T10:00:00.000000Z"


def at(minute: float) -> str:
    m, s = int(minute), round((minute - int(minute)) * 60)
    return f"2026-11-20T10:{m:02d}:{s:02d}.000000Z"


def scripted(project, scale: str = "flat", stated: float | None = None):
    """Five participants on 2 gold items (g1, g2: "fully") and 6 regular items (r1..r6):

    ======  ============  ===========================================  ==================
    pA      completed     g1 fully, g2 fully, r1 partially, r2 fully   12 min, 8/12/10/20 s
    pB      completed     g1 fully, g2 partially, r1 partially, r2 p.  6 min, 1 s each
    pC      screened out  g1 not_covered, g2 not_covered, r3 not_cov.  3 min
    pD      active        nothing yet
    pE      completed     g1, g2, r3, r4, r5 all fully                 10 min, 5 s each
    ======  ============  ===========================================  ==================
    """
    ids = [t.task_id for t in project.store.labels.tasks(kind=KIND)]
    g1, g2, r1, r2, r3, r4, r5 = ids[:7]
    for tid in (g1, g2):
        project.store.labels.set_gold(tid, {"coverage": "fully"})
    rules = Rules(reward=1.5, bonus_per_item=0.1, bonus_scale=scale, too_fast_s=stated)
    created = crowd_study(
        project, gold=0, completion_code="DONE1", screened_out_code="OUT1", time_limit_minutes=60, rules=rules
    )
    script = {
        "pA": (
            "completed",
            12,
            [(g1, "fully", 8), (g2, "fully", 12), (r1, "partially", 10), (r2, "fully", 20)],
        ),
        "pB": (
            "completed",
            6,
            [(g1, "fully", 1), (g2, "partially", 1), (r1, "partially", 1), (r2, "partially", 1)],
        ),
        "pC": (
            "screened_out",
            3,
            [(g1, "not_covered", 30), (g2, "not_covered", 30), (r3, "not_covered", 30)],
        ),
        "pD": ("active", None, []),
        "pE": ("completed", 10, [(t, "fully", 5) for t in (g1, g2, r3, r4, r5)]),
    }
    store = project.store
    token = created.entry_url.split("study=")[1].split("&")[0]
    # every participant arrives first (a newcomer's arrival times out those past the limit)
    who = {
        pid: studies.arrive(
            project, {"study": token, "PROLIFIC_PID": pid, "SESSION_ID": "s" + pid}
        ).account.username
        for pid in script
    }
    for pid, (status, minutes, labels) in script.items():
        with store.write() as conn:
            for i, (tid, value, secs) in enumerate(labels):
                store.labels.insert_event(
                    conn,
                    LabelEvent(
                        event_id=f"ev_{pid}_{i}",
                        task_id=tid,
                        kind=KIND,
                        annotator=who[pid],
                        action="label",
                        values={"coverage": value},
                        time_spent_s=secs,
                        created_at=at(i + 1),
                    ),
                )
            p = store.t["study_participants"]
            conn.execute(
                p.update()
                .where(p.c.platform_id == pid)
                .values(arrived_at=T0, status=status, finished_at=None if minutes is None else at(minutes))
            )
    return created, {"r1": r1, "r2": r2}


def test_each_participants_figures_are_the_ones_worked_out_by_hand(project):
    scripted(project)
    report = study_report(project, "pilot")
    rows = {r.platform_id: r for r in report.participants}
    a, b, c, d, e = (rows[p] for p in ("pA", "pB", "pC", "pD", "pE"))
    # pA: 4 items, 12 minutes, median of 8, 10, 12, 20 s = 11; both gold right; r1 is verified
    # (pA and pB both said partially: 2 labels, overlap 2) and agrees; r2 is a tie (not verified).
    assert (a.items, a.labels, a.minutes, a.median_s, a.gold_n, a.gold_accuracy, a.agreed) == (
        4,
        4,
        12.0,
        11.0,
        2,
        1.0,
        1,
    )
    assert (a.decision, a.flags, a.bonus) == ("approve", (), 0.1)  # flat: 0.10 x 1 agreed item
    # pB: one gold wrong (0.5, not below 0.5), 1 s per item, 6 minutes: no speed was stated on the
    # first page and 6 minutes is no outlier (too few others to tell): approved, with its bonus
    assert (b.gold_accuracy, b.median_s, b.agreed, b.decision, b.bonus) == (0.5, 1.0, 1, "approve", 0.1)
    assert b.flags == () and b.reason == "completed, 1 of 2 gold item(s) right"
    # pC: screened out: 0 of 2 gold; r3 is a tie with pE (not verified)
    assert (c.items, c.minutes, c.gold_accuracy, c.agreed, c.decision) == (3, 3.0, 0.0, 0, "reject")
    assert c.reason == "failed the attention checks: 0 of 2 gold item(s) right (screened out below 0.5)"
    # pD: no submission, no decision; arrived long ago (the limit is 60 minutes)
    assert (d.items, d.minutes, d.decision, d.bonus) == (0, 0.0, "none", 0.0)
    assert d.reason == "past the time limit of 60 minutes (no submission)"
    # pE: the same answer on 5 of 5 items: a note to check, never a reason to reject by itself;
    # r4, r5 have one label of two: not verified
    assert e.flags == () and e.decision == "approve"
    assert e.reason == "completed, 2 of 2 gold item(s) right; check: the same answer on 5 of 5 items"
    assert e.agreed == 0


def test_a_speed_stated_on_the_first_page_is_a_reason_to_reject(project):
    scripted(project, stated=3)
    b = next(r for r in study_report(project, "pilot").participants if r.platform_id == "pB")
    assert (b.decision, b.bonus) == ("reject", 0.0)
    assert b.reason == "faster than stated (median 1.0 s per item < the 3 s its first page states)"


def test_speed_alone_rejects_only_a_statistical_outlier_of_the_study(project):
    """Seven completed submissions: 10-12 minutes, and one of 1 minute (the others' mean 11.0, SD 0.89:
    more than 3 SD below); 9 minutes is 2.2 SD below: approved."""
    codes = {"completion_code": "DONE2", "screened_out_code": "OUT2"}
    created = crowd_study(project, "speed", gold=1, items=2, gold_share=0.0, time_limit_minutes=60, **codes)
    token = created.entry_url.split("study=")[1].split("&")[0]
    minutes = {"p1": 10, "p2": 11, "p3": 12, "p4": 10, "p5": 11, "p6": 12, "p7": 1, "p8": 9}
    p = project.store.t["study_participants"]
    for pid, m in minutes.items():
        studies.arrive(project, {"study": token, "PROLIFIC_PID": pid, "SESSION_ID": "s" + pid})
        with project.store.write() as conn:
            conn.execute(
                p.update()
                .where(p.c.platform_id == pid)
                .values(arrived_at=T0, status="completed", finished_at=at(m))
            )
    rows = {r.platform_id: r for r in study_report(project, "speed").participants}
    assert rows["p7"].decision == "reject" and rows["p7"].reason.startswith(
        "exceptionally fast (1 min, more than 3 SD below the mean of the study's other 7 submissions"
    )
    assert {pid for pid, r in rows.items() if r.decision == "approve"} == set(minutes) - {"p7"}


def test_the_totals_and_the_cost_per_verified_item_are_the_ones_worked_out_by_hand(project):
    scripted(project)
    totals = study_report(project, "pilot").totals
    # 1 approved x 1.50 reward + 0.10 bonus = 1.60 over 1 verified item (r1)
    assert totals == {
        "participants": 5,
        "active": 1,
        "completed": 3,
        "screened_out": 1,
        "incomplete": 0,
        "timed_out": 0,
        "approve": 3,
        "reject": 1,
        "rewards": 4.5,
        "bonuses": 0.2,
        "cost": 4.7,
        "verified_items": 1,
        "cost_per_verified_item": 4.7,
    }


def test_a_bonus_scaled_by_reliability_is_the_items_times_the_reliability(project):
    scripted(project, scale="reliability")
    a = next(r for r in study_report(project, "pilot").participants if r.platform_id == "pA")
    username = studies.username_for("pilot", "pA")
    reliability = annotator_reliability(fit_kind(project.store, KIND))[username]["reliability"]
    assert 0 < reliability < 1 and a.reliability == reliability
    assert a.bonus == round(0.1 * 1 * reliability + 1e-9, 2)


def test_platform_files_have_the_shapes_of_prolifics_bulk_actions(project):
    scripted(project, stated=3)  # pB is faster than the first page says
    files = platform_files(study_report(project, "pilot"))
    assert files["approve.txt"] == "pA\npE\n"
    assert files["bonuses.csv"] == "pA,0.10\n"
    lines = files["decisions.csv"].splitlines()
    assert lines[0] == "participant_id,decision,reason"
    assert [line.split(",")[:2] for line in lines[1:]] == [
        ["pA", "approve"],
        ["pB", "reject"],
        ["pC", "reject"],
        ["pE", "approve"],
    ]


def test_crowd_report_prints_json_and_writes_the_files(project, tmp_path):
    scripted(project, stated=3)
    runner = CliRunner()
    out = tmp_path / "files"
    result = runner.invoke(
        cli, ["crowd", "report", "pilot", "--json", "--out", str(out), "-p", str(project.root)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["totals"]["cost_per_verified_item"] == 3.1  # 2 approved x 1.50 + 0.10 over 1 item
    assert (out / "approve.txt").read_text() == "pA\npE\n" and (
        out / "bonuses.csv"
    ).read_text() == "pA,0.10\n"


def test_crowd_report_of_an_unknown_study_is_one_line(project):
    result = CliRunner().invoke(cli, ["crowd", "report", "nope", "-p", str(project.root)])
    assert result.exit_code != 0 and "no study 'nope'" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("with_study", [True, False])
def test_the_card_cost_section_states_the_study_cost_per_verified_item(project, with_study):
    from prefkit.curation.quality.cost import cost_report
    from prefkit.exports.card import _cost

    if with_study:
        scripted(project, stated=3)
    text = "\n".join(_cost(cost_report(project.store, project.config.annotation)))
    if with_study:
        assert "| pilot | preference_match | default | 5 | 2 | GBP 3.10 | 1 | GBP 3.1000 |" in text
    else:
        assert "Crowd studies" not in text


def test_a_stated_speed_of_zero_seconds_is_refused(project):
    with pytest.raises(studies.StudyError, match="the stated seconds per item must be above 0"):
        crowd_study(project, gold=0, completion_code="D1", screened_out_code="O1", rules=Rules(too_fast_s=0))
    assert project.store.studies.studies() == []
