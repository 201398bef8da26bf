"""Cost per verified unit: the report ``prefkit cost``, the dataset card and the dashboard show, checked
against ledger rows and label events summed by hand on a demo project with labels."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.annotation.labels_io import import_labels
from prefkit.curation.quality.cost import cost_report, stage_group
from prefkit.curation.store import LLMCallRecord
from prefkit.demo import build_demo
from prefkit.exports.release import cut_release

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
CAP = 600.0


def _at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _call(stage: str, item: str, cost: float, tokens: tuple[int, int]) -> LLMCallRecord:
    return LLMCallRecord(
        stage=stage,
        items=[item],
        key=f"k-{stage}-{item}",
        model="gpt-4o-mini",
        ok=True,
        text="{}",
        error=None,
        meta={"host": "127.0.0.1"},
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        cost_usd=cost,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo project (generated offline) with priced calls and every task kind labelled by alice
    and bob: times chosen so that one is capped and one is missing."""
    project = build_demo(tmp_path_factory.mktemp("cost") / "demo", personas=1, seed=0, log=lambda m: None)
    store = project.store
    store.llm.commit(
        [
            _call("dialogues", "sess_x#retry1", 0.25, (1000, 200)),  # repair
            _call("dialogues", "sess_y#attempt1", 0.5, (2000, 300)),  # repair
            _call("memories.candidates", "d1", 0.125, (500, 100)),  # extraction
            _call("eval.cupid.match_gold", "i1", 0.0625, (300, 10)),  # evaluation judges
            _call("eval.cupid.infer", "i1", 1.0, (4000, 500)),  # evaluation (the model under test)
        ]
    )
    rows, times = [], {}
    minute = 0.0
    for t in store.labels.tasks():
        if t.kind == "preference_expressed":
            values = {"items": [{"item": i, "expressed": True} for i in range(len(t.payload["checklist"]))]}
        elif t.kind == "memory_verify":
            values = {"decisions": [{"key": c["key"], "decision": "accept"} for c in t.payload["candidates"]]}
        else:
            values = {"coverage": "fully"}
        for who in ("alice", "bob"):
            n = len(rows)
            secs = 3600.0 if n == 3 else None if n == 5 else 10.0 + n % 7  # one tab left open, one untimed
            times.setdefault(t.kind, []).append(secs)
            minute += 1
            rows.append(
                {
                    "annotator": who,
                    "task_kind": t.kind,
                    "item_id": t.item_ref,
                    "values": values,
                    "time_spent_s": secs,
                    "timestamp": _at(minute),
                }
            )
    path = project.root / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_labels(store, path)
    yield project, times, minute
    project.close()


def test_llm_dollars_and_tokens_per_stage_equal_the_ledger_summed_by_hand(demo):
    project, _, _ = demo
    report = cost_report(project.store, project.config.annotation)
    by = {s.stage: s for s in report.stages}
    assert by["repair"].cost_usd == 0.75 and by["repair"].prompt_tokens == 3000
    assert by["extraction"].cost_usd == 0.125 and by["evaluation judges"].cost_usd == 0.0625
    assert by["evaluation"].cost_usd == 1.0 and by["evaluation"].completion_tokens == 500
    generated = [r for r in project.store.llm.ledger() if stage_group(r.stage, r.item) == "generation"]
    assert by["generation"].calls == len(generated) == by["generation"].offline > 0  # offline: marked, $0
    assert by["generation"].cost_usd == 0.0
    assert report.totals["cost_usd"] == 1.9375


def test_annotator_minutes_are_capped_counted_and_divided_by_what_is_verified(demo):
    project, times, last_minute = demo
    report = cost_report(project.store, project.config.annotation)
    by = {t.kind: t for t in report.times}
    for kind, secs in times.items():
        timed = [min(s, CAP) for s in secs if s is not None]
        assert by[kind].items == len(secs) and by[kind].timed == len(timed)
        assert by[kind].minutes == pytest.approx(sum(timed) / 60, abs=1e-4)
        assert by[kind].capped == sum(s is not None and s > CAP for s in secs)
    assert sum(t.capped for t in report.times) == 1 and sum(t.untimed for t in report.times) == 1
    unit = {v.unit: v for v in report.verified}
    store = project.store
    # every session with a preference_expressed task was labelled "expressed" by both
    sessions = len(store.labels.tasks(kind="preference_expressed"))
    assert unit["sessions"].count == sessions > 0
    assert unit["CUPID instances"].count == store.count("instances") == 3
    assert unit["sessions"].minutes_per_unit == pytest.approx(
        by["preference_expressed"].minutes / sessions, abs=1e-3
    )
    assert unit["CUPID instances"].usd_per_unit == pytest.approx(0.75 / 3, abs=1e-6)
    pairs = [t for t in store.labels.tasks(kind="preference_match") if not t.is_gold]
    assert unit["matching pairs"].count == len(pairs)
    assert unit["matching pairs"].usd_per_unit == pytest.approx(0.0625 / len(pairs), abs=1e-6)
    accepted = sum(len(t.payload["candidates"]) for t in store.labels.tasks(kind="memory_verify"))
    assert 0 < unit["gold memories"].count <= accepted
    assert unit["gold memories"].minutes_per_unit == pytest.approx(
        by["memory_verify"].minutes / unit["gold memories"].count, abs=1e-3
    )
    assert report.paced_until == _at(last_minute)


def test_the_forecast_divides_the_labels_left_by_the_kinds_pace(demo, tmp_path):
    project, _, _ = demo
    report = cost_report(project.store, project.config.annotation)
    submits = project.store.labels.submit_times()
    assert report.forecast and submits
    for f in report.forecast:
        mine = [s for s in submits if s.kind == f.kind]
        span_days = len(mine) and max(1 / 24, (_minute(mine[-1]) - _minute(mine[0])) / 1440)
        assert f.labels_per_day == pytest.approx(len(mine) / span_days, rel=1e-3)
        tasks = [
            t for t in project.store.labels.tasks(kind=f.kind) if not t.is_gold and t.batch == f.batch_id
        ]
        assert f.remaining_labels == sum(max(0, t.overlap - 2) for t in tasks)  # alice and bob did each
        assert f.days_left == pytest.approx(f.remaining_labels / f.labels_per_day, abs=1e-3)


def _minute(s) -> float:
    return (datetime.fromisoformat(s.created_at.replace("Z", "+00:00")) - T0).total_seconds() / 60


def test_cli_text_json_and_the_card_show_the_same_numbers(demo):
    project, _, _ = demo
    report = cost_report(project.store, project.config.annotation)
    unit = {v.unit: v for v in report.verified}
    out = CliRunner().invoke(cli, ["cost", "-p", str(project.root), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert {v["unit"]: v["minutes_per_unit"] for v in data["verified"]} == {
        k: v.minutes_per_unit for k, v in unit.items()
    }
    text = CliRunner().invoke(cli, ["cost", "-p", str(project.root)])
    assert text.exit_code == 0 and "Per verified unit:" in text.output
    assert f"{unit['sessions'].minutes_per_unit:,.2f}" in text.output
    cut = cut_release(project, "0.1.0", override="cost test: offline demo")
    card = (cut.path / "README.md").read_text()
    assert "## Cost" in card and "US$ 1.9375" in card
    line = next(x for x in card.splitlines() if x.startswith("| CUPID instances |"))
    assert f"${unit['CUPID instances'].usd_per_unit:.4f}" in line
    assert f"{unit['CUPID instances'].minutes_per_unit:.2f}" in line
    assert "When this release was cut, no labels remained in any batch." in card  # alice and bob did all


def test_the_card_forecasts_the_batches_still_open_when_the_release_is_cut(tmp_path):
    """A batch added and half labelled before the cut: the card lists its labels left, labels per day
    and days left exactly as `prefkit cost` computes them."""
    from prefkit.curation.annotation.task_admin import create_tasks
    from prefkit.curation.store import PreferencePair
    from prefkit.schemas.curation import Provenance

    project = build_demo(tmp_path / "demo", personas=1, seed=0, log=lambda m: None)
    pairs = [PreferencePair(f"extra{i}", f"Checklist item {i}?", f"Statement {i}", "test") for i in range(4)]
    project.store.content.add_preference_pairs(pairs, Provenance(source="test.forecast"))
    assert create_tasks(project, "preference_match", overlap=2, batch="more") == 4
    tasks = [t for t in project.store.labels.tasks(kind="preference_match") if t.batch == "more"]
    rows = [
        {
            "annotator": "alice",
            "task_kind": "preference_match",
            "item_id": t.item_ref,
            "values": {"coverage": "fully"},
            "time_spent_s": 20.0,
            "timestamp": _at(30 * i),
            "action": "label",
        }
        for i, t in enumerate(tasks[:3])
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import_labels(project.store, path)
    report = cost_report(project.store, project.config.annotation)
    (more,) = [f for f in report.forecast if f.batch_id == "more"]
    assert (more.tasks, more.remaining_labels) == (4, 8 - 3)
    card = (
        cut_release(project, "0.1.0", override="forecast test: offline demo").path / "README.md"
    ).read_text()
    assert "Labelling still open when this release was cut" in card
    row = next(x for x in card.splitlines() if x.startswith("| preference_match | more |"))
    assert row == f"| preference_match | more | 4 | 5 | {more.labels_per_day:.3f} | {more.days_left:.3f} |"
    project.close()
