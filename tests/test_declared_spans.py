"""Span questions of declared kinds: the declaration's checks, answers held to whole characters of the
field, agreement per word and label pinned to a hand-computed alpha, and decisions by the words most
answers mark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakeopenai import fake_openai_fixture  # noqa: F401 - the fixture
from prefkit.cli import cli
from prefkit.curation.annotation import work
from prefkit.curation.annotation.declared import use_project_kinds
from prefkit.curation.annotation.task_kinds import LabelError, get_kind
from prefkit.curation.project import Project
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.quality.consensus import final_labels
from spankind import ANSWERS, DECIDED, ITEMS, NAME, TOML, declare, labelled, write_items


def _labelled(project: Project, tmp_path: Path) -> Project:
    assert labelled(project, tmp_path) == (1, 3)  # tasks made, labels imported
    return project


def test_a_span_declaration_checks_and_lists_its_questions(project):
    declare(project.root)
    result = CliRunner().invoke(cli, ["kinds", "check", "-p", str(project.root)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"kinds/{NAME}.toml: ok ({NAME}: marks (span), said (span))"


BAD = [
    (
        'field = "response"\n',
        'field = "nowhere"\n',
        "key questions[1].field: a span question names a text or chat field of the kind (history, response)",
    ),
    ('field = "response"\n', "", "key questions[1].field: a span question names a text or chat field"),
    (
        'field = "response"\n',
        'field = "prefs"\n',
        "key questions[1].field: a span question names a text or chat field",
    ),
    ('labels = ["pref", "bad"]\n', "", "key questions[1].labels: a span question needs at least one label"),
    (
        'labels = ["pref", "bad"]\n',
        "labels = []\n",
        "key questions[1].labels: a span question needs at least one label",
    ),
    (
        'labels = ["pref", "bad"]\n',
        'labels = ["pref", "pref"]\n',
        "key questions[1].labels: a span question needs at least one label, each distinct",
    ),
    ('labels = ["pref", "bad"]\n', 'labels = ["a:b"]\n', "without ':'"),
    (
        'labels = ["pref", "bad"]\n',
        'labels = ["pref"]\nvalues = [1, 2]\n',
        "key questions[1].values: a span question takes no values",
    ),
    (
        'title = "Earlier conversation"\n',
        'title = "Earlier conversation"\n[[questions]]\nname = "r"\ntype = "rating"\nvalues = [1, 2]\nfield = "response"\n',
        "key questions[1].field: a rating question takes no field",
    ),
]


@pytest.mark.parametrize(("old", "new", "line"), BAD)
def test_a_bad_span_question_is_one_line_naming_file_and_key(project, old, new, line):
    toml = TOML.replace(old, new, 1) + '[[fields]]\nname = "prefs"\ntype = "list"\n'
    declare(project.root, toml)
    result = CliRunner().invoke(cli, ["kinds", "check", "-p", str(project.root)])
    assert result.exit_code == 1, result.output
    errors = [x for x in result.stderr.splitlines() if x]
    assert len(errors) == 1 and errors[0].startswith(f"kinds/{NAME}.toml: ") and line in errors[0], errors


TEXT = "nice \U0001f44d\U0001f3fd cafe\u0301"  # a thumb with its skin tone (5-7), e with its accent (11-13)


def _kind(project):
    declare(project.root)
    use_project_kinds(project.root)
    return get_kind(NAME)


def test_span_answers_are_sorted_and_kept_exactly(project):
    kind = _kind(project)
    payload = {**ITEMS[0], "response": TEXT}
    marks = [{"start": 8, "end": 13, "label": "bad"}, {"start": 5, "end": 7, "label": "pref"}]
    said = [{"turn": 1, "start": 0, "end": 2, "label": "pref"}]
    got = kind.answers({"marks": [*marks, marks[0]], "said": said}, payload)
    assert got == {"marks": [marks[1], marks[0]], "said": said}
    assert kind.answers({"marks": marks, "said": []}, payload) == {"marks": [marks[1], marks[0]]}


@pytest.mark.parametrize(
    ("values", "line"),
    [
        ({"marks": [{"start": 5, "end": 6, "label": "pref"}]}, "marks.0: characters 5-6 split a character"),
        ({"marks": [{"start": 8, "end": 12, "label": "pref"}]}, "marks.0: characters 8-12 split a character"),
        ({"marks": [{"start": 6, "end": 7, "label": "pref"}]}, "marks.0: characters 6-7 split a character"),
        (
            {"marks": [{"start": 0, "end": 99, "label": "pref"}]},
            "marks.0: characters 0-99 are not in response",
        ),
        ({"marks": [{"start": 4, "end": 4, "label": "pref"}]}, "marks.0: characters 4-4 are not in response"),
        ({"marks": [{"start": 0, "end": 4, "label": "nice"}]}, "marks.0: 'nice' is not one of pref, bad"),
        ({"marks": [{"start": "0", "end": 4, "label": "pref"}]}, "marks.0: turn, start and end are integers"),
        (
            {"marks": [{"start": True, "end": 4, "label": "pref"}]},
            "marks.0: turn, start and end are integers",
        ),
        (
            {"marks": [{"turn": 0, "start": 0, "end": 4, "label": "pref"}]},
            "marks.0: a span is {start, end, label}",
        ),
        ({"marks": {"start": 0}}, "marks: expected a list of spans {start, end, label}"),
        ({"marks": [], "said": []}, "marks: required"),
        (
            {
                "marks": [{"start": 0, "end": 4, "label": "pref"}],
                "said": [{"turn": 2, "start": 0, "end": 1, "label": "pref"}],
            },
            "said.0: history has no turn 2",
        ),
        (
            {
                "marks": [{"start": 0, "end": 4, "label": "pref"}],
                "said": [{"start": 0, "end": 1, "label": "pref"}],
            },
            "said.0: a span is {turn, start, end, label}",
        ),
    ],
)
def test_a_bad_span_answer_is_one_line_naming_the_question(project, values, line):
    kind = _kind(project)
    with pytest.raises(LabelError) as exc:
        kind.answers(values, {**ITEMS[0], "response": TEXT})
    assert str(exc.value).startswith(line), str(exc.value)


def test_a_gold_answer_with_spans_is_held_to_the_item(project, tmp_path):
    _kind(project)
    bad = {**ITEMS[0], "id": "g1", "gold": {"marks": [{"start": 0, "end": 40, "label": "pref"}]}}
    from prefkit.curation.annotation.task_admin import TaskFileError

    with pytest.raises(TaskFileError, match="key gold.marks.0: characters 0-40 are not in response"):
        work.create(project, "t", NAME, items=write_items(tmp_path / "items.jsonl", [bad]))
    good = {**bad, "gold": DECIDED}
    assert work.create(project, "t", NAME, items=write_items(tmp_path / "items.jsonl", [good])) == 1


def test_agreement_is_per_word_and_label_pinned_to_hand_computed_alpha(project, tmp_path):
    rows = {r["field"]: r for r in agreement_rows(_labelled(project, tmp_path).store, kind=NAME, n_boot=50)}
    assert list(rows) == ["marks:pref", "marks:bad", "said:pref"]
    assert {rows[f]["level"] for f in rows} == {"nominal"}
    # marks:pref, 4 words x 3 annotators: ride nnn, the nnn, bike yny, lane yyn.
    # o_nn = 6, o_yy = 2, o_yn = o_ny = 2; n_n = 8, n_y = 4, n = 12: 1 - 11 * 4 / (2 * 8 * 4)
    assert rows["marks:pref"]["alpha"] == pytest.approx(1 - 44 / 64)
    assert rows["marks:pref"]["n_units"] == 4
    # marks:bad: ride nyn, the rest nnn: n_n = 11, n_y = 1: 1 - 11 * 2 / (2 * 11 * 1)
    assert rows["marks:bad"]["alpha"] == pytest.approx(0.0)
    # said:pref, 6 words (5 in turn 0, 1 in turn 1) x the 2 who answered: only 'answers' differs (yn);
    # o_nn = 8, o_yy = 2, o_yn = o_ny = 1; n_n = 9, n_y = 3, n = 12: 1 - 11 * 2 / (2 * 9 * 3)
    assert rows["said:pref"]["alpha"] == pytest.approx(1 - 22 / 54)
    assert rows["said:pref"]["n_units"] == 6


def test_decisions_keep_the_words_most_answers_mark_as_spans_again(project, tmp_path):
    finals = final_labels(_labelled(project, tmp_path).store, NAME)
    (final,) = finals.values()
    assert final.values == DECIDED
    assert final.decided_by == "majority"


def _imported(project, tmp_path, items=None):
    declare(project.root)
    use_project_kinds(project.root, project.store)
    assert work.create(project, "t", NAME, overlap="3", items=write_items(tmp_path / "i.jsonl", items)) == 1


def test_offline_suggestions_mark_the_words_a_label_shares_deterministically(project, tmp_path):
    from prefkit.pipelines.llm import LLMLayer
    from prefkit.pipelines.suggestions import suggest

    item = {**ITEMS[0], "response": "a bad route, no pref: bad 👍🏽 bike"}
    _imported(project, tmp_path, [item])
    with LLMLayer(project.store, backend="offline", progress=False) as layer:
        report = suggest(project.store, layer, NAME)
    assert (report.suggested, report.offline, report.failed) == (1, True, [])
    (made,) = project.store.suggestions.latest(NAME).values()
    # 'bad' twice, 'pref:' once (its word is the label's); nothing of the history shares a word
    assert made.values == {
        "marks": [
            {"start": 2, "end": 5, "label": "bad"},
            {"start": 16, "end": 21, "label": "pref"},
            {"start": 22, "end": 25, "label": "bad"},
        ]
    }


def test_suggested_words_become_spans_through_the_real_openai_client(
    project, tmp_path, fake_openai, monkeypatch
):
    _imported(project, tmp_path)
    answer = {
        "reason": "r",
        "marks": [{"words": "bike lane", "label": "pref"}, {"words": "nowhere", "label": "bad"}],
        "said": [{"turn": 0, "words": "short answers", "label": "pref"}],
    }
    server = fake_openai(lambda body: answer)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-assist")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    args = ["suggest", "--kind", NAME, "--backend", "openai", "--model", "m", "-p", str(project.root)]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    prompt = server.chat_requests()[0].body["messages"][0]["content"]
    assert (
        "[turn 0] user: I like short answers please" in prompt
        and '"words": the words copied exactly' in prompt
    )
    schema = json.dumps(server.chat_requests()[0].body)
    assert '"words"' in schema and '"turn"' in schema and '"bad"' in schema
    (got,) = project.store.suggestions.latest(NAME).values()
    assert got.values == {
        "marks": [{"start": 9, "end": 18, "label": "pref"}],
        "said": [{"turn": 0, "start": 7, "end": 20, "label": "pref"}],
    }


def test_a_reliability_model_decides_span_words_too(project, tmp_path):
    store = _labelled(project, tmp_path).store
    store.consensus_method = "dawid_skene"
    (final,) = final_labels(store, NAME).values()
    # one item is too little for the model to settle any word: every word-label waits for a maintainer
    # (never left out of the final label)
    assert final.values is None and {f for _, f in final.tied} == {"marks:pref", "marks:bad", "said:pref"}
    from prefkit.curation.annotation.annotator_model import fit_kind

    model = fit_kind(store, NAME)
    assert {"marks:pref", "marks:bad", "said:pref"} <= set(model.fields)
    assert {u for u, f in final.tied if f == "marks:pref"} == {":0:0:4", ":1:5:8", ":2:9:13", ":3:14:18"}


def test_a_gold_items_spans_are_scored_per_word_and_label(project, tmp_path):
    declare(project.root)
    use_project_kinds(project.root, project.store)
    gold = {**ITEMS[0], "id": "g1", "gold": DECIDED}
    assert work.create(project, "t", NAME, items=write_items(tmp_path / "i.jsonl", [gold])) == 1
    project.store.accounts.add_user("ann1", "annotator", "a-long-password")
    from prefkit.curation.annotation import workflow

    item = workflow.current_item(project, "ann1", NAME)
    workflow.submit(project, "ann1", item, ANSWERS["ann1"])
    # 4 words x 2 labels of marks and 6 words of said: all as the gold answer but 'answers' (said:pref)
    (row,) = workflow.gold_accuracy(project.store, NAME)
    assert (row["annotator"], row["n_gold"], row["accuracy"]) == ("ann1", 1, round(13 / 14, 4))


def test_pairwise_span_f1_counts_the_words_both_mark_with_one_label(project, tmp_path):
    from prefkit.curation.quality.agreement import span_f1

    _labelled(project, tmp_path)
    kind, task = get_kind(NAME), project.store.labels.task(get_kind(NAME).task_id("s1"))
    # marks: ann1 bike, lane (pref); ann2 ride (bad), lane (pref); ann3 bike (pref): by hand
    assert span_f1(kind, task, "marks", ANSWERS["ann1"], ANSWERS["ann2"]) == pytest.approx(2 * 1 / (2 + 2))
    assert span_f1(kind, task, "said", ANSWERS["ann1"], ANSWERS["ann2"]) == pytest.approx(2 * 1 / (2 + 1))
    assert span_f1(kind, task, "said", ANSWERS["ann1"], ANSWERS["ann1"]) == 1.0
    assert span_f1(kind, task, "said", {}, {}) is None  # nothing marked: nothing to compare
