"""Suggestions for a declared kind: the prompt and the answer's schema made from its declaration,
offline and through the real openai client, shown on the assisted arm only, measured by arm."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from declaredkind import ITEMS, NAME, declare, write_items
from fakeopenai import fake_openai_fixture  # noqa: F401 - the fixture
from prefkit.cli import cli
from prefkit.curation.annotation import work, workflow
from prefkit.curation.annotation.declared import use_project_kinds
from prefkit.curation.annotation.suggestions import exposure
from prefkit.curation.quality.suggestions import assist_report
from prefkit.pipelines.llm import LLMLayer
from prefkit.pipelines.suggestions import make_run, suggest
from test_release_support import add_users


@pytest.fixture
def declared(project, tmp_path):
    declare(project.root)
    use_project_kinds(project.root, project.store)
    assert work.create(project, "t", NAME, overlap="3", items=write_items(tmp_path / "items.jsonl")) == 2
    return project


def test_offline_suggestions_of_a_declared_kind_answer_every_required_question(declared):
    with LLMLayer(declared.store, backend="offline", progress=False) as layer:
        report = suggest(declared.store, layer, NAME)
    assert (report.suggested, report.offline, report.failed) == (2, True, [])
    made = declared.store.suggestions.latest(NAME)
    assert len(made) == 2
    for s in made.values():
        assert s.values["better"] in ("A", "B", "tie") and s.values["strength"] in range(1, 6)
        assert sorted(s.values["order"]) == ["m1", "m2", "m3"] and "why" not in s.values
    assert declared.store.count("label_events") == 0


def test_suggest_through_the_real_openai_client_sends_the_declarations_schema(
    declared, fake_openai, monkeypatch
):
    answer = {
        "reason": "A names the preference",
        "better": "A",
        "strength": 4,
        "tags": None,
        "order": ["m2", "m1", "m3"],
        "why": None,
    }
    server = fake_openai(lambda body: answer)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-assist")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    args = f"suggest --kind {NAME} --backend openai --model judge-model -p {declared.root}".split()
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    assert "2 new suggestion(s)" in out.output and server.count() == 2
    prompts = sorted(r.body["messages"][0]["content"] for r in server.chat_requests())
    assert [item["response_a"] in p for item, p in zip(ITEMS, prompts, strict=True)] == [True, True]
    body, prompt = server.chat_requests()[0].body, prompts[0]
    assert "Which response follows the user better?" in prompt
    assert '"better"' in prompt and '["A", "B", "tie"]' in prompt
    schema = json.dumps(body.get("response_format") or body.get("tools") or body)
    assert '"tie"' in schema and '"strength"' in schema
    values = {s.values["better"] for s in declared.store.suggestions.latest(NAME).values()}
    assert values == {"A"}
    got = next(iter(declared.store.suggestions.latest(NAME).values()))
    assert got.values == {"better": "A", "strength": 4, "order": ["m2", "m1", "m3"]}
    assert got.detail == {"reason": "A names the preference"}


def test_a_changed_question_is_another_prompt_and_another_run(declared):
    with LLMLayer(declared.store, backend="offline", progress=False) as layer:
        before = make_run(layer, NAME, False)
        path = declared.root / "kinds" / f"{NAME}.toml"
        path.write_text(path.read_text().replace('"Order the models"', '"Rank the models"'))
        use_project_kinds(declared.root)
        after = make_run(layer, NAME, False)
    assert before.prompt_hash != after.prompt_hash and before.run_id != after.run_id


def test_a_kind_without_suggestions_is_refused_in_one_line(declared, monkeypatch):
    from prefkit.curation.annotation.task_kinds import get_kind

    monkeypatch.setattr(type(get_kind(NAME)), "suggestions", None)
    out = CliRunner().invoke(cli, ["suggest", "--kind", NAME, "-p", str(declared.root)])
    assert out.exit_code == 1 and f"task kind '{NAME}' has no suggestions" in out.output


def test_the_assisted_arm_sees_the_suggestion_the_control_arm_does_not_and_the_arms_are_measured(declared):
    add_users(declared.store, "ann1", "ann2")
    with LLMLayer(declared.store, backend="offline", progress=False) as layer:
        suggest(declared.store, layer, NAME)
    for who, share in (("ann1", 0.0), ("ann2", 1.0)):
        for _ in range(2):
            item = workflow.current_item(declared, who, NAME)
            sugg = declared.store.suggestions.for_task(item.task.task_id)
            shown = exposure(sugg, who, item.task, share)
            assert shown.shown == (share == 0.0) and (shown.values is None) == (share == 1.0)
            values = shown.values or {"better": "tie", "strength": 3, "order": ["m3", "m2", "m1"]}
            workflow.submit(declared, who, item, values, assist=shown)
    arms = {ev.annotator: ev.assist_arm for ev in declared.store.labels.events()}
    assert arms == {"ann1": "assisted", "ann2": "control"}
    report = assist_report(declared.store, n_boot=20, seed=1)
    k = report.kinds[NAME]
    assert (k.arms["assisted"].n_labels, k.arms["control"].n_labels) == (2, 2)
    out = CliRunner().invoke(cli, ["agreement", "--assist", "--boot", "20", "-p", str(declared.root)])
    assert out.exit_code == 0, out.output
    assert f"{NAME}  assisted" in out.output and f"{NAME}  control" in out.output


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_the_app_prefills_the_assisted_arm_and_leaves_the_control_arm_empty(declared, monkeypatch, share):
    from appkit import ALICE, app, with_share

    monkeypatch.setenv("PREFKIT_PROJECT", str(declared.root))
    add_users(declared.store, "alice")
    with_share(declared, share, NAME)
    at = app(ALICE, NAME)
    item = workflow.current_item(declared, "alice", NAME)
    sugg = declared.store.suggestions.for_task(item.task.task_id)
    assisted = share == 0.0
    shown = at.button_group(key=f"{item.event_id}:q:better").value
    assert shown == (sugg.values["better"] if assisted else None)
    assert any("Suggestion by" in m.value for m in at.markdown) == assisted
    if not assisted:
        for q in ("better", "strength"):
            at.button_group(key=f"{item.event_id}:q:{q}").set_value(sugg.values[q])
        at.multiselect(key=f"{item.event_id}:q:order").set_value(sugg.values["order"])
    at.button(key=f"{item.event_id}:submit").click().run()
    ev = declared.store.labels.event(item.event_id)
    want = ("assisted" if assisted else "control", sugg.suggestion_id)
    assert (ev.values, ev.assist_arm, ev.suggestion_id) == (sugg.values, *want)
