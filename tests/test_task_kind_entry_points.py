"""A task kind from another distribution: installed (a wheel this test builds, installed with pip into a
temporary directory), it declares an entry point in ``prefkit.task_kinds`` and is then a kind like the
built-in ones for the CLI (``tasks create --kind``, ``labels import``, agreement, adjudication, release),
the app (its own form) and Label Studio (its own config), with no edit to prefkit. A broken one is one
error naming its distribution, and the built-in kinds keep working.

Everything runs in fresh interpreters whose ``PYTHONPATH`` holds the installed distributions, as a
user's environment would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

KIND = "pair_tone"

TONE_KIND = '''
"""A task kind shipped in its own distribution: is a preference pair's candidate worded politely?"""
from typing import Literal

from prefkit.curation.annotation.task_kinds import FieldSpec, TaskKind
from prefkit.schemas.common import Contract
from pydantic import Field


class ToneLabel(Contract):
    tone: Literal["polite", "blunt"] = Field(description="How the candidate is worded.")
    comment: str | None = Field(default=None, description="Optional note.")


class PairTone(TaskKind):
    name = "pair_tone"
    title = "Tone of a candidate (plugin)"
    label_model = ToneLabel
    fields = (FieldSpec("tone", "nominal", ("blunt", "polite")),)
    app_form = "prefkit_pair_tone.form"
    labelstudio_config = "prefkit_pair_tone.labelstudio:CONFIG"

    def build_tasks(self, store, overlap, batch):
        return [self.make_task(f"tone:{p.pair_id}", {"text": p.candidate}, overlap, batch)
                for p in store.content.preference_pairs()]

    def units(self, values):
        return {("", "tone"): values["tone"]} if "tone" in values else {}

    def assemble(self, units, labels):
        return {"tone": units[("", "tone")]}

    def default_guidelines(self):
        return "# Tone\\n\\nAnswer *polite* when the candidate asks rather than orders.\\n"
'''

TONE_FORM = '''
"""The app form of pair_tone: one button per answer."""
import streamlit as st
from prefkit.annotate_app import ui

CHOICES = ("polite", "blunt")


def render(project, user, item):
    st.text("TONE: " + item.task.payload["text"])
    for value in CHOICES:
        st.button(value, key=f"{item.event_id}:{value}", on_click=ui.submit_now,
                  args=(user, item, item.event_id, {"tone": value}))


def edit(project, task, prefix, initial, comment, show_comment=True):
    st.segmented_control("Tone", list(CHOICES), default=initial.get("tone"), key=f"{prefix}:tone")


def read(task, prefix):
    choice = st.session_state.get(f"{prefix}:tone")
    return ({"tone": choice}, "") if choice else (None, "Choose the tone first.")


def unit_title(task, unit, field):
    return "tone of: " + task.payload["text"]
'''

TONE_LABELSTUDIO = """
from prefkit.annotate_app.labelstudio.config import LSConfig, by_control, choice_result, one_choice, tag


class ToneConfig(LSConfig):
    controls = {"tone"}

    def xml(self):
        choices = "".join(tag("Choice", value=c) for c in ("polite", "blunt"))
        return tag("View", tag("Text", name="text", value="$text") + tag("Choices", choices, name="tone", toName="text"))

    def data(self, task):
        return {"text": task.payload["text"]}

    def raw_values(self, results, task):
        return {"tone": one_choice(by_control(results, self.controls), "tone", {"polite", "blunt"})}

    def results(self, values, task):
        return [choice_result("tone", "text", values["tone"])]


CONFIG = ToneConfig()
"""

BROKEN_KIND = """
import prefkit_no_such_dependency  # the distribution forgot a dependency
"""


def build_wheel(dest: Path, dist: str, package: str, files: dict[str, str], entry_points: str) -> Path:
    """A pure-Python wheel: the package's files and a dist-info with its entry points."""
    info = f"{dist.replace('-', '_')}-0.1.0.dist-info"
    members = {f"{package}/{name}": text for name, text in files.items()}
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n"
    members[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    members[f"{info}/entry_points.txt"] = f"[prefkit.task_kinds]\n{entry_points}\n"
    members[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*members, f"{info}/RECORD"])
    wheel = dest / f"{dist.replace('-', '_')}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return wheel


def pip_install(wheel: Path, target: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return target


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, Path]:
    """``good``: prefkit-pair-tone installed; ``both``: it and prefkit-broken-kind."""
    wheels = tmp_path_factory.mktemp("wheels")
    tone = build_wheel(
        wheels,
        "prefkit-pair-tone",
        "prefkit_pair_tone",
        {"__init__.py": TONE_KIND, "form.py": TONE_FORM, "labelstudio.py": TONE_LABELSTUDIO},
        "pair_tone = prefkit_pair_tone:PairTone",
    )
    broken = build_wheel(
        wheels,
        "prefkit-broken-kind",
        "prefkit_broken_kind",
        {"__init__.py": BROKEN_KIND},
        "broken_kind = prefkit_broken_kind:Kind",
    )
    good = pip_install(tone, tmp_path_factory.mktemp("site-good"))
    both = pip_install(broken, pip_install(tone, tmp_path_factory.mktemp("site-both")))
    return {"good": good, "both": both}


def env_with(site: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT / 'tests'}", **extra}


def run_python(code: str, site: Path, cwd: Path, **extra: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env_with(site, **extra),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


CLI_FLOW = r"""
import json, sys
from click.testing import CliRunner
from prefkit.cli import cli

out = {}
def run(*args, input=None):
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input)
    assert result.exit_code == 0, (args, result.output)
    return result.output

run("init", "proj")
pairs = [{"pair_id": f"t{i}", "checklist_item": f"Is request {i} polite?",
          "candidate": ("Could you please " if i % 2 else "Do ") + f"task {i} now"} for i in range(12)]
open("pairs.jsonl", "w").write("".join(json.dumps(p) + "\n" for p in pairs))
run("tasks", "pairs", "import", "pairs.jsonl", "-p", "proj")
out["create"] = run("tasks", "create", "--kind", "pair_tone", "--overlap", "3", "-p", "proj")
out["guidelines"] = open("proj/guidelines/pair_tone.md").read()
run("users", "add", "lead", "--role", "maintainer", "--password-stdin", "-p", "proj", input="long-enough-pass\n")
for who in ("ann1", "ann2", "ann3"):
    run("users", "add", who, "--role", "annotator", "--password-stdin", "-p", "proj", input="long-enough-pass\n")
from prefkit.curation.project import Project
project = Project("proj")
tasks = sorted(project.store.labels.tasks(kind="pair_tone"), key=lambda t: t.item_ref)
project.close()
rows = []
for t in tasks:
    truth = "polite" if "please" in t.payload["text"] else "blunt"
    for who in ("ann1", "ann2", "ann3"):
        tone = truth if not (t.item_ref == "tone:t0" and who != "ann1") else "polite"
        rows.append({"annotator": who, "task_kind": "pair_tone", "item_id": t.item_ref, "values": {"tone": tone},
                     "time_spent_s": 4, "timestamp": "2026-01-05T10:00:00Z"})
open("bad.jsonl", "w").write(json.dumps({**rows[0], "values": {"tone": "rude"}}) + "\n")
refused = CliRunner().invoke(cli, ["labels", "import", "bad.jsonl", "-p", "proj"])
out["refused"] = [refused.exit_code, refused.output]
open("labels.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in rows))
out["import"] = run("labels", "import", "labels.jsonl", "-p", "proj")
out["agreement"] = json.loads(run("agreement", "--kind", "pair_tone", "--boot", "50", "--json", "-p", "proj"))
t0 = next(t.task_id for t in tasks if t.item_ref == "tone:t0")
out["queue"] = json.loads(run("adjudicate", "queue", "--kind", "pair_tone", "--all", "--json", "-p", "proj"))
run("adjudicate", "decide", t0, "--as", "lead", "--values", '{"tone": "blunt"}', "--note", "an order", "-p", "proj")
out["ls_config"] = run("labelstudio", "config", "pair_tone")
toml = open("proj/prefkit.toml").read().replace("require_gold = true", "require_gold = false")
open("proj/prefkit.toml", "w").write(toml.replace("[release]\n", '[release]\nconfigs = ["labels", "final_labels"]\n', 1))
out["check"] = run("release", "check", "-p", "proj")
run("release", "cut", "--version", "1.0.0", "-p", "proj")
out["finals"] = [json.loads(line) for line in open("proj/releases/1.0.0/data/final_labels/pair_tone.jsonl")]
out["t0"] = t0
print(json.dumps(out))
"""


def test_an_installed_kind_goes_from_tasks_through_labels_and_adjudication_to_a_release(sites, tmp_path):
    out = run_python(CLI_FLOW, sites["good"], tmp_path)
    assert "created 12 pair_tone tasks" in out["create"]
    assert out["guidelines"].startswith("# Tone")  # the kind's own guidelines, written for the project
    assert out["refused"][0] == 1 and "tone" in out["refused"][1]  # validated by the kind's label model
    assert "36 new event(s)" in out["import"]
    [row] = out["agreement"]
    assert (row["task_kind"], row["field"], row["n_units"]) == (KIND, "tone", 12)
    assert [(q["task_id"], q["decided_by"]) for q in out["queue"]] == [(out["t0"], "majority")]
    assert 'name="text"' in out["ls_config"] and 'value="polite"' in out["ls_config"]
    assert "FAIL" not in out["check"], out["check"]
    finals = {f["id"]: (json.loads(f["values"])["tone"], f["decided_by"]) for f in out["finals"]}
    assert len(finals) == 12 and finals[out["t0"]] == ("blunt", "adjudicated")
    assert sorted(v for v, _ in finals.values()) == ["blunt"] * 6 + ["polite"] * 6


APP_FLOW = r"""
import json, os
from prefkit.curation.annotation import workflow
from prefkit.curation.annotation.task_admin import create_tasks
from prefkit.curation.project import Project
from prefkit.curation.store import PreferencePair
from prefkit.schemas.curation import Provenance
from streamlit.testing.v1 import AppTest
from prefkit.curation.store import Account
from test_release_support import add_users, label

project = Project.init("proj", name="app")
project.store.content.add_preference_pairs(
    [PreferencePair(f"t{i}", f"Is request {i} polite?", f"Could you please do task {i}", "test") for i in range(2)],
    Provenance(source="test.pairs"))
create_tasks(project, "pair_tone", overlap=2)
add_users(project.store, "alice", "bob")
add_users(project.store, "maya", role="maintainer")
os.environ["PREFKIT_PROJECT"] = str(project.root)
app = os.environ["APP"]
out = {}

at = AppTest.from_file(app, default_timeout=60)
at.session_state["user"] = Account("alice", "annotator", None, True, "2026-01-01T00:00:00Z")
at.session_state["kind"] = "pair_tone"
at.session_state["intro:pair_tone"] = True
at.run()
item = workflow.current_item(project, "alice", "pair_tone")
out["shown"] = [t.value for t in at.text]
at.button(key=f"{item.event_id}:polite").click().run()
event = project.store.labels.event(item.event_id)
out["event"] = [event.annotator, event.kind, event.values]

label(project.store, item.task.task_id, "bob", {"tone": "blunt"}, kind="pair_tone")  # a tie to adjudicate
at = AppTest.from_file(app, default_timeout=60)
at.session_state["user"] = Account("maya", "maintainer", None, True, "2026-01-01T00:00:00Z")
at.run()
at.switch_page("views/adjudicate.py").run()
out["kind_menu"] = list(at.button_group(key="adj_kind").options)
at.button_group(key="adj_kind").set_value("pair_tone").run()
tid = at.session_state["adj_task"]
out["adj_task"] = [tid, item.task.task_id]
out["units"] = list(at.dataframe[0].value["unit"])
at.button_group(key=f"adj:{tid}:tone").set_value("polite").run()
at.button(key=f"adj:{tid}:save").click().run()
out["adjudication"] = [(a.maintainer, a.values) for a in project.store.labels.adjudications(tid)]
print(json.dumps(out))
"""


def test_the_app_shows_and_adjudicates_an_installed_kind_with_its_own_form(sites, tmp_path):
    out = run_python(APP_FLOW, sites["good"], tmp_path, APP=str(ROOT / "annotate_app" / "app.py"))
    assert any("TONE: Could you please do task" in text for text in out["shown"])  # the plugin's form
    assert out["event"] == ["alice", KIND, {"tone": "polite"}]
    assert "Tone of a candidate (plugin)" in out["kind_menu"]  # the app's menu lists it by its title
    assert out["adj_task"][0] == out["adj_task"][1]
    assert out["units"] == [out["units"][0]] and out["units"][0].startswith("tone of: Could you please")
    assert out["adjudication"] == [["maya", {"tone": "polite"}]]


def prefkit(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("prefkit")
    return subprocess.run(
        [str(exe), *args], cwd=cwd, env=env_with(site), capture_output=True, text=True, timeout=300
    )


def test_a_broken_plugin_is_one_error_naming_its_distribution_and_the_other_kinds_keep_working(
    sites, tmp_path
):
    assert prefkit(sites["both"], tmp_path, "init", "proj").returncode == 0
    refused = prefkit(sites["both"], tmp_path, "tasks", "create", "--kind", "broken_kind", "-p", "proj")
    assert refused.returncode == 1
    [line] = [x for x in refused.stderr.splitlines() if x.startswith("error:")]
    assert "'broken_kind' from distribution prefkit-broken-kind 0.1.0" in line
    assert "ModuleNotFoundError" in line and "prefkit_no_such_dependency" in line
    assert "Traceback" not in refused.stderr
    for kind in ("preference_match", KIND):  # a built-in kind and the other plugin's
        done = prefkit(sites["both"], tmp_path, "tasks", "create", "--kind", kind, "-p", "proj")
        assert done.returncode == 0, done.stderr
        assert "prefkit-broken-kind" in done.stderr  # one warning line, so the broken plugin is not silent


def test_without_the_distribution_its_kind_is_unknown(sites, tmp_path):
    done = prefkit(tmp_path, tmp_path, "labelstudio", "config", KIND)
    assert done.returncode == 2 and f"'{KIND}' is not one of" in done.stderr
