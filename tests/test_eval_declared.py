"""Evaluating a model on a declared benchmark (protocol prefkit-declared-v1): the memory-QA example of
docs/eval.md labelled and released, its ``[evaluation]`` table checked, every metric held to values
worked out by hand and to scikit-learn's and SciPy's, predictions files and their bad lines, reports,
the scripted server's faults, kill -9 and resume, and the real engine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fakeopenai import fake_openai_fixture  # noqa: F401 - the fixture
from prefkit.cli import cli
from prefkit.curation.annotation import work
from prefkit.curation.annotation.declared import DeclaredKind, KindDeclaration, read_declaration
from prefkit.curation.annotation.labels_io import import_labels
from prefkit.curation.project import Project
from prefkit.examples import copy_examples
from prefkit.pipelines.eval import build_report, run_declared
from prefkit.pipelines.eval.declared import declaration_hash, item_record, load_declared
from prefkit.pipelines.eval.declared_metrics import score
from prefkit.pipelines.eval.release import EvalInputError
from prefkit.pipelines.eval.report import check_protocols
from prefkit.pipelines.llm import LLMLayer
from scipy.stats import kendalltau, spearmanr
from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support
from sklearn.preprocessing import MultiLabelBinarizer
from test_release_support import cut

ROOT = Path(__file__).resolve().parent.parent
KIND = "memory_qa"


def labelled_bench(tmp: Path, release: str = "") -> tuple[Project, Path]:
    """The memory-QA kind in a new project (``release``: lines for its ``[release]`` table), its six
    items labelled by three people."""
    Project.init(tmp / "proj", name="memory-qa").close()
    toml = tmp / "proj" / "prefkit.toml"
    toml.write_text(toml.read_text().replace("[release]\n", f"[release]\n{release}", 1), encoding="utf-8")
    ex = copy_examples(tmp / "proj" / "examples")[0].parent.parent / KIND
    (tmp / "proj" / "kinds" / f"{KIND}.toml").write_bytes((ex / f"{KIND}.toml").read_bytes())
    project = Project(tmp / "proj")
    work.create(project, "t", KIND, overlap="3", items=ex / "items.jsonl")
    for who in ("ann1", "ann2", "ann3"):
        project.store.accounts.add_user(who, "annotator", "a-long-password")
    import_labels(project.store, ex / "labels.jsonl")
    return project, ex


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """A project with the memory-QA kind, its six items labelled by three people, released as 0.1.0."""
    project, ex = labelled_bench(tmp_path_factory.mktemp("mqa"))
    rel = cut(project, "0.1.0", override="six items, no gold").path
    yield project, rel, ex
    project.close()


def kind_with(project, **evaluation) -> DeclaredKind:
    """The memory-QA kind with its [evaluation] table changed (the target, the metrics, ...)."""
    decl = read_declaration(project.root / "kinds" / f"{KIND}.toml")
    data = decl.model_dump(mode="json")
    data["evaluation"] |= evaluation
    return DeclaredKind(KindDeclaration.model_validate(data), project.root)


def run_cli(project, *args, code=0):
    result = CliRunner().invoke(cli, [*args, "-p", str(project.root)])
    assert result.exit_code == code, result.output
    return result.output


def rows_of(result) -> dict[tuple[str, str], float | None]:
    return {(r["group"], r["metric"]): r["value"] for r in result.rows}


def records(golds, preds, counts=None):
    return [
        {"gold": g, "prediction": None if p is None else {"answer": p}, **({"counts": c} if c else {})}
        for g, p, c in zip(golds, preds, counts or [None] * len(golds), strict=True)
    ]


# -- the metrics ---------------------------------------------------------------------------------------------
def target(type_, choices, metrics):
    return {"name": "t", "type": type_, "choices": choices, "metrics": metrics}


def test_label_metrics_are_sklearns_and_worked_by_hand():
    gold, pred = ["x", "x", "y", "y", "y"], ["x", "y", "y", "y", "z"]
    rows = score(
        "k", target("label", ["x", "y", "z", "w"], ["accuracy", "macro_f1", "f1"]), records(gold, pred)
    )
    got = {(r["group"], r["metric"]): r["value"] for r in rows}
    # x: tp 1 of 2 gold, 1 predicted -> 2/3; y: tp 2 of 3, 3 predicted -> 2/3; z: only predicted -> 0
    assert got == pytest.approx({("all", "accuracy"): 0.6, ("all", "macro_f1"): 4 / 9, ("x", "f1"): 2 / 3,
                                 ("y", "f1"): 2 / 3, ("z", "f1"): 0.0}, abs=1e-12)  # fmt: skip
    assert abs(got[("all", "accuracy")] - accuracy_score(gold, pred)) < 1e-9
    assert abs(got[("all", "macro_f1")] - f1_score(gold, pred, average="macro")) < 1e-9
    assert len(rows) == 5 and all(
        r["ci_low"] <= r["value"] <= r["ci_high"] and r["n_items"] == 5 for r in rows
    )


def test_multi_label_rating_ranking_and_span_metrics_are_the_libraries_and_worked_by_hand():
    gold, pred = [["a"], ["a", "b"], []], [["a"], ["b"], ["b", "a"]]
    got = rows_of_score("multi_label", ["a", "b", "c"], gold, pred)
    assert got == pytest.approx({"micro_f1": 4 / 7, "macro_f1": 7 / 12}, abs=1e-12)  # a: 1/2, b: 2/3
    y = MultiLabelBinarizer().fit(gold + pred)
    for avg in ("micro", "macro"):
        assert abs(got[f"{avg}_f1"] - f1_score(y.transform(gold), y.transform(pred), average=avg)) < 1e-9

    g, p = [1, 2, 3, 3], [1, 3, 3, 2]  # midranks 1, 2, 3.5, 3.5 and 1, 3.5, 3.5, 2: cov 2.25 / var 4.5
    got = rows_of_score("rating", [1, 2, 3], g, p)
    assert got == pytest.approx({"mae": 0.5, "spearman": 0.5}, abs=1e-12)
    assert abs(got["spearman"] - spearmanr(g, p).statistic) < 1e-9

    g, p = [["A", "B", "C"], ["A", "B", "C"]], [["A", "C", "B"], ["C", "B", "A"]]  # tau 1/3 and -1
    got = rows_of_score("ranking", ["A", "B", "C"], g, p)
    assert got == pytest.approx({"kendall_tau_b": -1 / 3, "top1_accuracy": 0.5}, abs=1e-12)
    taus = [
        kendalltau([x.index(c) for c in "ABC"], [y.index(c) for c in "ABC"]).statistic
        for x, y in zip(g, p, strict=True)
    ]
    assert abs(got["kendall_tau_b"] - np.mean(taus)) < 1e-9

    counts = [[2, 1, 0], [0, 0, 2]]  # (both, answer only, reference only) words
    got = rows_of_score("span", ["e"], [[]] * 2, [[]] * 2, counts)
    assert got == pytest.approx({"precision": 2 / 3, "recall": 0.5, "f1": 4 / 7}, abs=1e-12)
    truth, guess = [1, 1, 0, 1, 1], [1, 1, 1, 0, 0]  # the same words as vectors
    assert np.allclose([got["precision"], got["recall"], got["f1"]],
                       precision_recall_fscore_support(truth, guess, average="binary")[:3], atol=1e-9)  # fmt: skip


def rows_of_score(type_, choices, gold, pred, counts=None):
    from prefkit.curation.annotation.declared import EVAL_METRICS

    rows = score("k", target(type_, choices, list(EVAL_METRICS[type_])), records(gold, pred, counts))
    return {r["metric"]: r["value"] for r in rows}


def test_failures_are_counted_beside_the_score_and_agreement_has_no_spread():
    rows = score("k", target("label", ["x", "y"], ["accuracy"]), records(["x", "y", "x"], ["x", "y", None]))
    assert rows == [{"task": "k.t", "group": "all", "metric": "accuracy", "value": 1.0, "ci_low": 1.0,
                     "ci_high": 1.0, "n_items": 3, "n_scored": 2, "n_failed": 1}]  # fmt: skip
    none = score("k", target("rating", [1, 2], ["mae"]), records([1], [None]))
    assert none[0]["value"] is None and none[0]["n_failed"] == 1


def test_span_words_are_counted_on_the_conversation(bench):
    project, rel, _ = bench
    kind = kind_with(project, target="evidence")
    _ref, items, _split = load_declared(rel, kind, None)
    answer = [{"turn": 0, "start": 10, "end": 28, "label": "evidence"}]  # "Lisbon last spring"
    rec = item_record(kind, items["q1"], answer, None)  # the reference: "moved to Lisbon"
    assert rec["counts"] == [1, 2, 2] and rec["gold"][0]["start"] == 2


# -- the [evaluation] table ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "old, new, line",
    [
        ('"verdict"', '"nope"', "key evaluation.target: 'nope' is not a question of the kind"),
        ('"verdict"', '"answer"', "key evaluation.rubric: a text target is judged: give it (and no other"),
        (
            '"verdict"',
            '"answer"\nrubric = "../r.md"\nscale = [1, 2]',
            "key evaluation.rubric: ../r.md: outside the project",
        ),
        (
            '"verdict"',
            '"answer"\nrubric = "r.md"\nscale = [3, 1]',
            "key evaluation.scale: at least two grades: ascending",
        ),
        (
            '"verdict"',
            '"answer"\nrubric = "r.md"\nscale = ["ok", "ok"]',
            "key evaluation.scale: at least two grades",
        ),
        ('= "history"  #', '= "question"  #', "key evaluation.messages: 'question' is not a chat field"),
        (
            '"verdict"\n',
            '"verdict"\nmetrics = ["mae"]\n',
            "key evaluation.metrics: 'mae' is not a label metric",
        ),
        (
            "Can this",
            "{% for x in candidates %}Can",
            "key evaluation.input: the template does not parse (line 3:",
        ),
        ("{{ question }}", "{{ gold }}", "key evaluation.input: 'gold' is not a field of the kind"),
    ],
)
def test_kinds_check_names_a_bad_evaluation_table(bench, tmp_path, old, new, line):
    _project, _rel, ex = bench
    text = (ex / f"{KIND}.toml").read_text(encoding="utf-8")
    evaluation = text.index("[evaluation]")
    Project.init(tmp_path / "p").close()
    for rubric in (tmp_path / "r.md", tmp_path / "p" / "r.md"):
        rubric.write_text("5: right; 1: wrong\n", encoding="utf-8")
    bad = text[:evaluation] + text[evaluation:].replace(old, new, 1)
    (tmp_path / "p" / "kinds" / f"{KIND}.toml").write_text(bad, "utf-8")
    result = CliRunner().invoke(cli, ["kinds", "check", "-p", str(tmp_path / "p")])
    assert result.exit_code == 1 and f"kinds/{KIND}.toml: {line}" in result.output, result.output


# -- runs on the release ---------------------------------------------------------------------------------------
def test_a_predictions_file_is_scored_reported_listed_and_exported(bench, tmp_path):
    project, rel, ex = bench
    args = [
        "eval",
        "run",
        "--release",
        str(rel),
        "--config",
        KIND,
        "--predictions",
        str(ex / "predictions.jsonl"),
    ]
    out = json.loads(run_cli(project, *args, "--json"))
    got = {(r["group"], r["metric"]): r["value"] for r in out["rows"]}
    # q1, q2, q4 right; q3 (unanswerable) and q5 (answerable) wrong; q6 has no line: failed
    assert got[("all", "accuracy")] == 0.6 and out["model_failures"] == 1
    assert {r["n_failed"] for r in out["rows"]} == {1} and out["protocol"] == "prefkit-declared-v1"
    run_id = out["run"]["run_id"]
    md = run_cli(project, "eval", "report", run_id, "--out", str(tmp_path / "r"))
    decl = declaration_hash(kind_with(project))
    for shown in (
        "prefkit-declared-v1",
        f"declaration={decl}",
        "0.1.0",
        "split=test",
        "| accuracy | 0.600 |",
    ):
        assert shown in md, shown
    assert run_id in run_cli(project, "eval", "list", "--protocol", "prefkit-declared-v1")
    assert 'Evaluation (`prefkit eval run`): {"input":' in (rel / "README.md").read_text(encoding="utf-8")
    run_cli(project, "eval", "export", run_id, str(tmp_path / "again.jsonl"))
    lines = [json.loads(x) for x in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert len(lines) == 5 and lines[0] == {
        "id": "q1",
        "answer": "answerable",
        "protocol": "prefkit-declared-v1",
    }
    again = json.loads(run_cli(project, *args[:-1], str(tmp_path / "again.jsonl"), "--json"))
    assert again["rows"] == out["rows"]  # the same numbers from the exported predictions


@pytest.mark.parametrize(
    "line, error",
    [
        (
            {"id": "q9", "answer": "answerable"},
            "bad.jsonl:2: key id: 'q9' is not an evaluated item of memory_qa",
        ),
        ({"id": "q1", "answer": "answerable"}, "bad.jsonl:2: key id: 'q1' repeats line 1"),
        (
            {"id": "q2", "answer": "maybe"},
            "bad.jsonl:2: key answer: 'maybe' is not one of answerable, unanswerable",
        ),
        ({"id": "q2", "answer": "answerable", "why": 1}, "bad.jsonl:2: key why: not a prediction key"),
    ],
)
def test_a_bad_predictions_line_is_one_error_and_nothing_is_stored(bench, tmp_path, line, error):
    project, rel, _ = bench
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "q1", "answer": "answerable"}) + "\n" + json.dumps(line) + "\n")
    before = len(project.store.eval.runs())
    out = run_cli(
        project, "eval", "run", "--release", str(rel), "--config", KIND, "--predictions", str(bad), code=1
    )
    assert error in out and len(out.strip().splitlines()) == 1 and len(project.store.eval.runs()) == before


def test_every_target_type_scores_its_reference_perfectly_and_reports_refuse_mixing(bench, tmp_path):
    project, rel, _ = bench
    perfect = {"verdict": ("all", "accuracy", 1.0), "topics": ("all", "micro_f1", 1.0),
               "confidence": ("all", "mae", 0.0), "order": ("all", "kendall_tau_b", 1.0),
               "evidence": ("all", "f1", 1.0)}  # fmt: skip
    reports = []
    for name, (group, metric, value) in perfect.items():
        kind = kind_with(project, target=name)
        _ref, items, _split = load_declared(rel, kind, None)
        preds = tmp_path / f"{name}.jsonl"
        preds.write_text("".join(json.dumps({"id": i, "answer": it.gold}) + "\n" for i, it in items.items()))
        with LLMLayer(project.store, backend="offline", progress=False) as layer:
            result = run_declared(project.store, layer, rel, kind, None, preds)
        assert rows_of(result)[(group, metric)] == value and result.model_failures == 0, name
        reports.append(build_report(project.store, result.run.run_id))
    with pytest.raises(EvalInputError, match="different declarations or releases"):
        check_protocols(reports[:2], None, False)
    with pytest.raises(EvalInputError, match="no split 'validation' \\(test\\)"):
        load_declared(rel, kind_with(project), "validation")
    with pytest.raises(EvalInputError, match="no \\[evaluation\\] table"):
        run_declared(
            project.store,
            None,
            rel,
            DeclaredKind(
                kind_with(project).declaration.model_copy(update={"evaluation": None}), project.root
            ),
        )


# -- models: the scripted server, kill -9, the real engine ---------------------------------------------------
def answering(body):
    """Right on q1-q3 and q6, a label outside the target's on q4, malformed JSON on q5 (asked again too)."""
    user = json.dumps(body["messages"])
    if "live now" in user or "steak" in user:
        return {"answer": "answerable"}
    if "bakery" in user or "Where will" in user:
        return {"answer": "perhaps"}
    if "Oslo" in user:
        return "{not json"
    return {"answer": "unanswerable"}


@pytest.mark.slow
def test_the_scripted_server_failures_are_counted_and_a_kill_resumes_without_repeating(
    bench, fake_openai, monkeypatch
):
    project, rel, ex = bench
    server = fake_openai(answering, latency=0.4)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    args = (
        f"eval run --release {rel} --config {KIND} --model scripted --backend openai --json -p {project.root}"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", "from prefkit.cli import main; main()", *args.split()],
                             cwd=ROOT, env=env, stdout=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while (
        not any(r.status == "done" for r in project.store.llm.ledger("eval.declared"))
        and time.monotonic() < deadline
    ):
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    done = {r.item for r in project.store.llm.ledger("eval.declared") if r.status == "done"}
    assert 1 <= len(done) < 6
    server.reset_log()
    out = json.loads(run_cli(project, *args.split()[:-2]))
    questions = {
        json.loads(x)["id"]: json.loads(x)["question"] for x in (ex / "items.jsonl").read_text().splitlines()
    }
    asked = {i for r in server.chat_requests() for i, q in questions.items() if q in json.dumps(r.body)}
    assert asked and not asked & done  # nothing finished before the kill is asked again
    got = rows_of(type("R", (), {"rows": out["rows"]}))
    # q1 q2 answerable (right), q3 q6 unanswerable (right); q4 outside the labels, q5 not JSON: failed
    assert got[("all", "accuracy")] == 1.0 and out["rows"][0]["n_failed"] == 2 and out["model_failures"] == 2
    failed = {
        i.item_key: i.record["error"]
        for i in project.store.eval.items(out["run"]["run_id"])
        if i.record["error"]
    }
    assert sorted(failed) == ["q4", "q5"] and "schema-invalid" in failed["q4"]


@pytest.mark.engine
@pytest.mark.timeout(1200)
def test_the_real_engine_answers_in_the_targets_shape_and_grades_on_the_scale_or_is_counted_failed(
    bench, monkeypatch
):
    from enginekit import ONE_REQUEST, engine
    from prefkit.pipelines.llm.config import with_models

    project, rel, _ = bench
    url, model = engine()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local engine needs none
    (project.root / "rubric.md").write_text(
        "5: says what people said; 1: contradicts it.\n", encoding="utf-8"
    )
    cfg = with_models(project.config.llm, assistant=model, judge=model)
    text = kind_with(project, target="answer", rubric="rubric.md", scale=[1, 2, 3, 4, 5])
    short = {"base_url": url, **ONE_REQUEST, "max_tokens": 96}  # a small model's long answers fail, counted
    with LLMLayer(project.store, cfg.model_copy(update=short), "openai") as layer:
        rating = run_declared(project.store, layer, rel, kind_with(project, target="confidence"))
        graded = run_declared(project.store, layer, rel, text, limit=1)
    for result, n, key, shape in (
        (rating, 6, "prediction", (1, 2, 3)),
        (graded, 1, "grade", (1, 2, 3, 4, 5)),
    ):
        assert {r["n_scored"] + r["n_failed"] for r in result.rows} == {n} and result.run.model == model
        for item in project.store.eval.items(result.run.run_id):
            value = item.record[key]
            value = (value or {}).get("answer") if key == "prediction" else value
            assert value in shape or item.record["error"], item.record


def judging(body):
    """The model answers "Lisbon"; the judge gives 5 when people said Lisbon, else 2, and breaks on Oslo."""
    text = json.dumps(body["messages"])
    if "You grade an answer" not in text:
        return {"answer": "Lisbon"}
    return "{broken" if "Oslo" in text else {"reason": "r", "grade": 5 if "- Lisbon" in text else 2}


def test_a_text_target_is_graded_by_the_judge_on_the_rubric_and_said_not_validated(
    bench, fake_openai, tmp_path
):
    from fakeopenai import openai_layer

    project, rel, _ = bench
    (project.root / "rubric.md").write_text(
        "5: says what people said; 1: contradicts it.\n", encoding="utf-8"
    )
    kind = kind_with(project, target="answer", rubric="rubric.md", scale=[1, 2, 3, 4, 5])
    server = fake_openai(judging)
    with openai_layer(project, server) as layer:
        result = run_declared(project.store, layer, rel, kind)
    got = rows_of(result)
    # q1: 5 (people said Lisbon); q2 q3 q4 q6: 2; q5: the judge's answer is not JSON, twice: failed
    assert got[("all", "mean_grade")] == pytest.approx(13 / 5) and got[("2", "share")] == pytest.approx(0.8)
    assert (
        got[("5", "share")] == pytest.approx(0.2)
        and got[("3", "share")] == 0.0
        and result.model_failures == 1
    )
    assert {r["judge"] for r in result.rows} == {"NOT VALIDATED"} and {
        r["n_failed"] for r in result.rows
    } == {1}
    judged = [r.body for r in server.chat_requests() if "You grade an answer" in json.dumps(r.body)]
    assert any("What people answered:\n- Lisbon\n" in b["messages"][-1]["content"] for b in judged)
    run = result.run
    assert set(run.prompts) == {"declared_answer", "declared_judge"} and run.settings["rubric_sha256"]
    assert run.judge_model and build_report(project.store, run.run_id)["judge"]["status"] == "not validated"
    md = run_cli(project, "eval", "report", run.run_id, "--out", str(tmp_path / "r"))
    assert f"Judge `{run.judge_model}`: **NOT VALIDATED**" in md and "| all | mean_grade | 2.600 |" in md


# -- a private test split ------------------------------------------------------------------------------------
def _public_rows(release: Path):
    """``(file, row)`` of every row a release publishes: JSON Lines, Parquet, the DuckDB tables, Croissant."""
    import duckdb
    import pyarrow.parquet as pq

    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        if path.suffix == ".jsonl":
            yield from ((path.name, json.loads(x)) for x in path.read_text(encoding="utf-8").splitlines())
        elif path.suffix == ".parquet":
            yield from ((path.name, r) for r in pq.read_table(path).to_pylist())
        elif path.suffix == ".json":
            yield path.name, json.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".duckdb":
            con = duckdb.connect(str(path), read_only=True)
            for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
                cur = con.execute(f'SELECT * FROM "{table}"')
                names = [d[0] for d in cur.description]
                yield from (
                    (f"{path.name}:{table}", dict(zip(names, v, strict=True))) for v in cur.fetchall()
                )
            con.close()


def test_a_private_test_split_publishes_no_test_answer_and_eval_reads_the_private_one(tmp_path):
    from prefkit.exports.declared import item_split
    from prefkit.exports.release import check_release
    from prefkit.exports.release_data import build_configs

    shares = {"validation": 0.2, "test": 0.3}
    project, ex = labelled_bench(tmp_path, "splits = { validation = 0.2, test = 0.3 }\n")
    assert project.config.release.splits == shares
    (gate,) = [g for g in check_release(project) if g.gate == "test_gold_private"]
    assert gate.passed and gate.value == 0 and f"{KIND}_test_answers" in gate.applies_to, gate
    first, second = (cut(project, v, override="six items, no gold").path for v in ("0.1.0", "0.2.0"))
    split_of = {  # every item in the split its id hashes to, in both cuts
        rel: {
            json.loads(x)["id"]: f.stem
            for f in (rel / "data" / KIND).glob("*.jsonl")
            for x in f.read_text().splitlines()
        }
        for rel in (first, second)
    }
    assert split_of[first] == split_of[second] == {f"q{n}": item_split(f"q{n}", shares) for n in range(1, 7)}
    test_ids = sorted(i for i, s in split_of[first].items() if s == "test")
    assert test_ids and set(split_of[first].values()) == {"train", "validation", "test"}
    private = project.root / "releases-private" / "0.1.0" / f"{KIND}_test_answers" / "test.jsonl"
    hidden = {r["id"]: r["answers"] for r in map(json.loads, private.read_text().splitlines())}
    assert sorted(hidden) == test_ids and all(a["verdict"] for a in hidden.values())
    only = build_configs(
        project.store, [KIND], splits=project.config.release.splits
    )  # its answers go with it
    assert [c.name for c in only] == [KIND, f"{KIND}_test_answers"] and only[1].private
    tasks = project.store.labels.task_ids_by_ref(KIND, test_ids)
    secret = set(tasks.values()) | {json.dumps(a, sort_keys=True) for a in hidden.values()}
    seen = 0
    for where, row in _public_rows(first):  # every public row: a test item is there without its answer
        text = json.dumps(row, sort_keys=True, default=str)
        assert not any(s in text for s in secret), (where, row)
        if isinstance(row, dict) and row.get("id") in test_ids:
            seen += 1
            assert row.get("answers") is None and row.get("values") is None, (where, row)
    assert seen >= 2 * len(test_ids)  # the JSON Lines and Parquet rows of the test items
    for name in ("README.md", "croissant.json"):
        text = (first / name).read_text(encoding="utf-8")
        assert not any(t in text for t in tasks.values()) and not any(
            json.dumps(a) in text for a in hidden.values()
        )
    # eval run --split test scores against the private answers: the default folder and --private
    args = ["eval", "run", "--release", str(first), "--config", KIND, "--split", "test", "--json"]
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": i, "answer": hidden[i]["verdict"]}) + "\n" for i in test_ids))
    for extra in ([], ["--private", str(private.parent.parent)]):
        out = json.loads(run_cli(project, *args, "--predictions", str(preds), *extra))
        got = {(r["group"], r["metric"]): r["value"] for r in out["rows"]}
        n = {r["n_items"] for r in out["rows"]}
        assert got[("all", "accuracy")] == 1.0 and out["model_failures"] == 0 and n == {len(test_ids)}, out
    (tmp_path / "empty").mkdir()
    said = run_cli(project, *args, "--predictions", str(preds), "--private", str(tmp_path / "empty"), code=1)
    assert said.count("\n") == 1 and "no private test answers of memory_qa" in said, said
    project.close()


@pytest.mark.parametrize(
    "splits, said",
    [
        ({"test": 1.0}, "release.splits.test = 1.0: must be a finite number > 0 and < 1"),
        ({"test": 0.0}, "release.splits.test = 0.0: must be a finite number > 0 and < 1"),
        ({"test": 0.6, "validation": 0.5}, "release.splits: Value error, the split shares sum to 1.1;"),
        ({"train": 0.2}, "release.splits.train.[key]: Input should be 'validation' or 'test'"),
    ],
)
def test_bad_split_shares_are_one_line_naming_the_key(splits, said):
    from prefkit.schemas.config import ConfigError, ProjectConfig

    with pytest.raises(ConfigError) as err:
        ProjectConfig.parse({"release": {"splits": splits}}, "prefkit.toml")
    assert (
        str(err.value).startswith("prefkit.toml: ") and said in str(err.value) and "\n" not in str(err.value)
    )


def test_the_gate_finds_a_test_items_label_by_its_task_not_by_a_common_answer():
    import pyarrow as pa
    from prefkit.exports.private_gold import planned_leaks, secrets
    from prefkit.exports.release_data import ConfigData

    hidden = ConfigData("k_test_answers", "", pa.schema([]), private=True)
    hidden.add("test", {"id": "q1", "task_id": "t-1", "answers": {"verdict": "answerable"}})
    labels = ConfigData("k_labels", "", pa.schema([]))
    labels.add("k", {"id": "t-1:a1", "task_id": "t-1", "values": {"verdict": "answerable"}})
    labels.add("k", {"id": "t-2:a1", "task_id": "t-2", "values": {"verdict": "answerable"}})  # train: no leak
    final = ConfigData("final_labels", "", pa.schema([]))
    final.add("k", {"id": "t-1", "values": None})  # a test task without its answer: no leak
    planned = [hidden.finish(), labels.finish(), final.finish()]
    found = secrets(planned, {})
    assert len(found) == 1 and planned_leaks(planned, {}, found) == [
        "data/k_labels/k.jsonl: test gold of k:q1"
    ]
    assert planned_leaks(planned[:1] + planned[2:], {}, found) == []
