"""The release and adjudicate commands, called in-process, then checked against the store and disk."""

import json

import pytest
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.cli.adjudicate_cmds import adjudicate
from prefkit.cli.release_cmds import release
from test_release_support import cover, labelled_project, match_tasks


@pytest.fixture
def ready(project, tmp_path):
    labelled_project(project, tmp_path)
    return project


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output


def test_check_prints_numbered_gates_and_exits_1_naming_the_culprit(ready):
    tie = match_tasks(ready.store, 1, prefix="tie")[0]
    cover(ready.store, tie.task_id, ann1="fully", ann2="partially", ann3="not_covered")
    code, out = run("release", "check", "-p", ready.root)
    assert code == 1
    assert (
        "1. PASS  alpha" in out
        and "3. FAIL  adjudicated" in out
        and f"- {tie.task_id} [{tie.item_ref} · Does the answer use metric units? (tie 0)] (preference_match)"
        in out
    )
    code, out = run("release", "check", "-p", ready.root, "--json")
    report = json.loads(out)
    assert [g["gate"] for g in report["gates"] if not g["passed"]] == ["adjudicated"]
    matching = next(c for c in report["configs"] if c["name"] == "matching")
    assert matching["dropped"] == {
        "gold item (used to score annotators)": 1,
        "no final label (unlabelled or a tie not adjudicated)": 1,  # the open tie
    }
    assert "alpha" in matching["gates"] and "configs (rows, dropped)" not in out


def test_cut_verify_list_and_diff_from_the_command_line(ready):
    code, out = run("release", "cut", "--version", "1.0.0", "-p", ready.root)
    assert code == 0 and "released test-proj 1.0.0" in out
    assert run("release", "cut", "--version", "1.0.1", "-p", ready.root)[0] == 0
    rel = ready.root / "releases"
    code, out = run("release", "verify", rel / "1.0.0")
    assert code == 0 and out.startswith("OK test-proj 1.0.0")
    code, out = run("release", "diff", rel / "1.0.0", rel / "1.0.1")
    assert code == 0 and out.startswith("patch: data files identical")
    assert [r.version for r in ready.store.releases.recorded()] == ["1.0.0", "1.0.1"]
    code, out = run("release", "list", "-p", ready.root)
    assert "1.0.1" in out and "pass" in out


def test_a_refused_cut_is_one_error_line_and_writes_nothing(ready):
    assert run("release", "cut", "--version", "1.0.0", "-p", ready.root)[0] == 0
    result = CliRunner().invoke(cli, ["release", "cut", "--version", "1.0.0", "-p", str(ready.root)])
    assert result.exit_code == 1 and "already exists" in result.output
    assert len(ready.store.releases.recorded()) == 1


def test_override_reason_reaches_the_manifest_and_the_release_log(ready):
    tie = match_tasks(ready.store, 1, prefix="tie")[0]
    cover(ready.store, tie.task_id, ann1="fully", ann2="partially", ann3="not_covered")
    assert run("release", "cut", "--version", "1.0.0", "-p", ready.root)[0] == 1
    code, out = run("release", "cut", "--version", "1.0.0", "-p", ready.root, "--override", "pilot tie")
    assert code == 0 and "OVERRIDE  failing gates (adjudicated): pilot tie" in out
    manifest = json.loads((ready.root / "releases/1.0.0/manifest.json").read_text())
    assert manifest["override_reason"] == "pilot tie"
    assert ready.store.releases.recorded()[0].override_reason == "pilot tie"


def test_an_override_reason_with_bidi_and_invisible_controls_is_published_without_them(ready):
    tie = match_tasks(ready.store, 1, prefix="tie")[0]
    cover(ready.store, tie.task_id, ann1="fully", ann2="partially", ann3="not_covered")
    reason = "pilot \u202egnp.exe\u202c tie\u200b\u2066\U000e0041"
    assert run("release", "cut", "--version", "1.0.0", "-p", ready.root, "--override", reason)[0] == 0
    folder = ready.root / "releases/1.0.0"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["override_reason"] == "pilot gnp.exe tie"
    assert ready.store.releases.recorded()[0].override_reason == "pilot gnp.exe tie"
    for name in ("README.md", "croissant.json", "manifest.json"):
        text = (folder / name).read_text(encoding="utf-8")
        assert not any(c in text for c in "\u202e\u202c\u200b\u2066\U000e0041"), name
    assert "pilot gnp.exe tie" in (folder / "README.md").read_text(encoding="utf-8")


def test_verify_exits_1_on_a_flipped_byte(ready):
    run("release", "cut", "--version", "1.0.0", "-p", ready.root)
    card = ready.root / "releases/1.0.0/README.md"
    card.write_bytes(card.read_bytes().replace(b"# test-proj", b"# test-proK", 1))
    code, out = run("release", "verify", ready.root / "releases/1.0.0")
    assert code == 1 and "FAIL README.md: sha256 differs from the manifest" in out


def test_adjudicate_queue_and_decide(ready):
    tie = match_tasks(ready.store, 1, prefix="tie")[0]
    cover(ready.store, tie.task_id, ann1="fully", ann2="partially", ann3="not_covered")
    code, out = run("adjudicate", "queue", "-p", ready.root)
    assert code == 0 and tie.task_id in out and "undecided" in out
    assert f"{tie.item_ref} · Does the answer use metric" in out  # the item by its id and summary
    code, out = run(
        "adjudicate",
        "decide",
        tie.task_id,
        "--as",
        "lead",
        "--values",
        '{"coverage": "fully"}',
        "-p",
        ready.root,
    )
    assert code == 0 and out.startswith(f"adjudicated {tie.task_id}")
    assert run("adjudicate", "queue", "-p", ready.root)[1].strip() == "(none)"
    code, out = run(
        "adjudicate",
        "decide",
        tie.task_id,
        "--as",
        "ann1",
        "--values",
        '{"coverage": "fully"}',
        "-p",
        ready.root,
    )
    assert code == 1 and "only maintainers adjudicate" in out


def test_every_release_command_documents_an_example():
    for group in (release, adjudicate):
        assert group.commands, group.name
        for name, command in group.commands.items():
            assert "Example: prefkit " in (command.help or ""), f"{group.name} {name}"
