"""Issue 32: ``eval cupid --prompts DIR`` reads, types and trial-formats every prompt file it uses when
the directory loads. A bad one (binary, not YAML, a non-text prompt, an unknown or non-plain field,
unbalanced braces, a bad examples module) is one line naming the file and what is wrong, never a
traceback, and no run is stored. The property tests go over every step's file (``STEPS``), so a step
added later is fuzzed without a new test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from evalkit import cupid_release
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prefkit.cli import cli
from prefkit.pipelines.eval.cupid_prompts import (
    EXAMPLES_FILE,
    FIELDS,
    MAX_PROMPT_BYTES,
    STEPS,
    checkout_files,
    checkout_prompts,
)
from prefkit.pipelines.eval.release import EvalInputError

ALL = tuple(STEPS)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def good_checkout(root: Path) -> Path:
    """Every step's file, each using all of its step's fields, and the matcher's examples module."""
    for step in STEPS:
        fields = " ".join(f"{{{name}}}" for name in sorted(FIELDS[step]))
        write(
            root, step, {"system_prompt": f"SYSTEM {step} {{{{literal}}}}", "user_prompt": f"USER {fields}"}
        )
    module = root / EXAMPLES_FILE
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text('EXAMPLES = [{"preference": "p", "checklist": {"q?": 1}}]\n', encoding="utf-8")
    return root


def write(root: Path, step: str, data: object) -> Path:
    path = root / "prompts" / STEPS[step][1]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")  # JSON is YAML
    return path


def refused(root: Path, step: str = "match") -> str:
    with pytest.raises(EvalInputError) as caught:
        checkout_prompts(root, ALL)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_good_checkout_loads_and_fills_every_step(tmp_path):
    prompts = checkout_prompts(good_checkout(tmp_path / "CUPID"), ALL)
    for step in ALL:
        messages = dict(prompts.messages(step, **dict.fromkeys(FIELDS[step], "VALUE")))
        assert "VALUE" in messages["user"] and "{" not in messages["user"]
        assert messages["system"].startswith(f"SYSTEM {step}")


@pytest.mark.parametrize(
    "template, says",
    [
        ("{preference.__class__.__mro__}", "is not a plain {name}"),
        ("{preference[0]}", "is not a plain {name}"),
        ("{}", "is not a plain {name}"),
        ("{0}", "is not a plain {name}"),
        ("{preference!r}", "has a conversion or format spec"),
        ("{preference:{checklist.__class__}}", "has a conversion or format spec"),
        ("{preference:>10}", "has a conversion or format spec"),
        ("{persona}", "unknown field {persona}"),
        ("a { b", "unbalanced braces"),
        ("a } b", "unbalanced braces"),
        ("{preference", "unbalanced braces"),
    ],
)
def test_a_template_field_that_is_not_a_plain_known_name_is_one_line_naming_the_file(
    tmp_path, template, says
):
    root = good_checkout(tmp_path / "CUPID")
    path = write(root, "match", {"system_prompt": "s", "user_prompt": f"text {template} text"})
    message = refused(root)
    assert message.startswith(f"{path}: user_prompt") and says in message


def test_a_system_prompt_cupid_formats_is_checked_and_one_it_does_not_keeps_its_braces(tmp_path):
    root = good_checkout(tmp_path / "CUPID")
    write(root, "infer", {"system_prompt": "raw {x.__class__} {", "user_prompt": "{curr_request}"})
    prompts = checkout_prompts(root, ALL)  # CUPID never formats the inferrer's system prompt
    assert (
        dict(prompts.messages("infer", interaction_log="l", curr_request="r"))["system"]
        == "raw {x.__class__} {"
    )
    path = write(root, "judge", {"system_prompt": "{x.__class__}", "user_prompt": "{checklist}"})
    assert refused(root).startswith(f"{path}: system_prompt")


@pytest.mark.parametrize(
    "data, says",
    [
        (
            {"system_prompt": ["a", "list"], "user_prompt": "{preference}"},
            "system_prompt must be text, not list",
        ),
        ({"system_prompt": "s", "user_prompt": 12}, "user_prompt must be text, not int"),
        ({"system_prompt": "s"}, "expected a mapping with user_prompt"),
        (["a", "list"], "expected a mapping with user_prompt"),
        ({"user_prompt": "  "}, "user_prompt is empty"),
        ("user_prompt: [unclosed", "not valid YAML"),
    ],
)
def test_a_prompt_file_of_the_wrong_shape_is_one_line_naming_it(tmp_path, data, says):
    root = good_checkout(tmp_path / "CUPID")
    path = write(root, "match", data)
    message = refused(root)
    assert message.startswith(str(path)) and says in message


@pytest.mark.parametrize(
    "content, says",
    [
        (b"\xff\xfe\x00\x01binary", "not UTF-8 text"),
        (b"user_prompt: \x00\x07", "not valid YAML"),
        (b"x" * (MAX_PROMPT_BYTES + 1), f"more than a prompt file's {MAX_PROMPT_BYTES}"),
        (b"[" * 200_000, "not valid YAML (nested too deeply)"),
        (
            b"user_prompt: !!python/object/apply:os.system ['false']\n",
            "not valid YAML (could not determine a constructor",
        ),
    ],
)
def test_a_binary_or_oversized_prompt_file_is_one_line_naming_it(tmp_path, content, says):
    """``_refused_naming`` asserts the one refusal line naming the prompt file and what is wrong."""
    _refused_naming(tmp_path, Path("prompts") / STEPS["decompose"][1], content, says)


@pytest.mark.parametrize(
    "content, says",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00binary", "not UTF-8 text"),
        (b"EXAMPLES = [1, 2\x00]", "not valid Python"),
        (b"EXAMPLES = [\n", "not valid Python"),
        (b"EXAMPLES = " + b"[" * 5000 + b"]" * 5000, "not valid Python"),
        (b"EXAMPLES = [{'preference': 'p', 'checklist': ['not', 'a', 'mapping']}]", "no EXAMPLES list"),
        (b"EXAMPLES = [{'preference': 3, 'checklist': {}}]", "no EXAMPLES list"),
        (b"EXAMPLES = __import__('os').system('false')", "no EXAMPLES list"),
    ],
)
def test_a_bad_examples_module_is_one_line_naming_it_and_never_runs(tmp_path, content, says):
    """``_refused_naming`` asserts the one refusal line naming the examples module and what is wrong."""
    _refused_naming(tmp_path, EXAMPLES_FILE, content, says)


def _refused_naming(tmp_path, file, content, says):
    """A checkout whose ``file`` holds ``content`` is refused in one line naming that file."""
    root = good_checkout(tmp_path / "CUPID")
    (root / file).write_bytes(content)
    message = refused(root)
    assert message.startswith(str(root / file)) and says in message


def eval_with(release, prompts, project):
    """``prefkit eval cupid`` on ``release`` with the prompt files of ``prompts``, in-process."""
    argv = ["eval", "cupid", "--release", str(release), "--model", "m", "--prompts", str(prompts)]
    return CliRunner().invoke(cli, [*argv, "-p", str(project.root)])


def test_the_cli_prints_a_bad_prompt_file_as_one_line_and_stores_no_run(project, tmp_path):
    rel = cupid_release(tmp_path, personas=1)
    root = good_checkout(tmp_path / "CUPID")
    path = write(
        root, "match", {"system_prompt": "{examples}", "user_prompt": "{preference.__class__.__mro__}"}
    )
    result = eval_with(rel, root, project)
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and str(path) in lines[0] and "is not a plain {name}" in lines[0]
    assert "Traceback" not in result.output and project.store.eval.runs() == []
    root_binary = good_checkout(tmp_path / "CUPID2")
    (root_binary / "prompts" / STEPS["infer"][1]).write_bytes(b"\xff\x00\xfe")
    result = eval_with(rel, root_binary, project)
    assert result.exit_code == 1 and "not UTF-8 text" in result.output and "Traceback" not in result.output


# -- property tests over every step's file ---------------------------------------------------------------------
@SETTINGS
@given(rel=st.sampled_from(checkout_files()), content=st.binary(max_size=400))
def test_any_bytes_in_any_file_the_checkout_is_read_for_load_or_are_one_line_naming_it(
    tmp_path_factory, rel, content
):
    root = good_checkout(tmp_path_factory.mktemp("c"))
    path = root / rel
    path.write_bytes(content)
    try:
        prompts = checkout_prompts(root, ALL)
    except EvalInputError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc)
    else:
        for step in ALL:  # what loads, fills
            prompts.messages(step, **dict.fromkeys(FIELDS[step], "v"))


def test_every_file_read_is_in_the_fuzzed_list(tmp_path):
    root = good_checkout(tmp_path / "CUPID")
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert on_disk == set(checkout_files())
    for rel in checkout_files():  # and each one is read: without it, the load is refused or falls back
        (root / rel).rename(root / (rel + ".away"))
        if rel == EXAMPLES_FILE:  # the matcher then uses prefkit's examples, recorded as such
            assert checkout_prompts(root, ALL).hashes["match_examples"].startswith("prefkit@")
        else:
            with pytest.raises(EvalInputError, match=f"no {rel} "):
                checkout_prompts(root, ALL)
        (root / (rel + ".away")).rename(root / rel)


TEMPLATE = st.lists(
    st.one_of(
        st.text(alphabet="{}!:.[]_0rsa ", max_size=8),
        st.sampled_from(["{", "}", "{{", "}}", "!r", ":", ".__class__", "[0]", "{x}"]),
        st.builds(lambda n: "{" + n + "}", st.sampled_from(sorted(set().union(*FIELDS.values())))),
    ),
    max_size=8,
).map("".join)


@SETTINGS
@given(step=st.sampled_from(ALL), system=TEMPLATE, user=TEMPLATE)
def test_any_template_in_any_steps_file_fills_with_plain_fields_or_is_one_line(
    tmp_path_factory, step, system, user
):
    root = good_checkout(tmp_path_factory.mktemp("c"))
    path = write(root, step, {"system_prompt": system, "user_prompt": user})
    try:
        prompts = checkout_prompts(root, ALL)
    except EvalInputError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc)
        return
    marker = "\u2063FILLED\u2063"
    messages = prompts.messages(step, **dict.fromkeys(FIELDS[step], marker))
    text = "".join(m[1] for m in messages)
    assert "<class" not in text  # no internals reached (the alphabet has no "<")
    for name in FIELDS[step]:
        if "{" + name + "}" in user.replace("{{", "").replace("}}", ""):
            assert marker in text
