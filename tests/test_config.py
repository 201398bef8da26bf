"""prefkit.toml is one typed model: the template's values are the model's defaults, and a bad or
unknown key is one error line naming it."""

from __future__ import annotations

import re
import tomllib

import pytest
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.project import Project, _template
from prefkit.curation.project_dir import CONFIG_NAME
from prefkit.schemas.config import ConfigError, ProjectConfig, ProjectSection, ReleasePolicy


def test_the_template_holds_exactly_the_model_defaults():
    parsed = ProjectConfig.parse(tomllib.loads(_template().replace("{name}", "x")))
    assert parsed == ProjectConfig(project=ProjectSection(name="x"))


def test_an_unknown_key_is_an_error_naming_it(tmp_path):
    project = Project.init(tmp_path / "p")
    cfg = project.root / CONFIG_NAME
    cfg.write_text(cfg.read_text().replace("[release]\n", "[release]\nalpha_mn = 0.9\n"))
    with pytest.raises(ConfigError, match=r"prefkit.toml: release.alpha_mn: Extra inputs are not permitted"):
        Project(project.root).config  # noqa: B018
    result = CliRunner().invoke(cli, ["agreement", "-p", str(project.root)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"error: {cfg}: release.alpha_mn: Extra inputs are not permitted"
    ]


def test_a_mistyped_value_names_the_key():
    with pytest.raises(ConfigError, match=r"annotation.overlap.number: Input should be a valid integer"):
        ProjectConfig.parse({"annotation": {"overlap": "three"}})


def test_one_policy_answers_every_fields_threshold():
    policy = ReleasePolicy(policy="tentative", alpha_min={"default": 0.8, "preference_match.coverage": 0.7})
    assert policy.alpha_for("preference_match", "coverage") == 0.7
    assert policy.alpha_for("memory_verify", "decision") == policy.default_alpha == 0.8
    assert ReleasePolicy().judge_alpha_min == 0.667


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        ("release", "policy", "finall", "Input should be 'final' or 'tentative'"),
        ("release", "adjudicate", "some", "Input should be 'ties' or 'all'"),
        ("release", "alpsbench_reference", "gold", "Input should be 'verified' or 'imported'"),
        (
            "llm",
            "structured",
            "json",
            "Input should be 'auto', 'json_schema', 'json_object_schema' or 'json_mode'",
        ),
        ("llm", "backend", "anthropic", "Input should be 'offline' or 'openai'"),
        ("release", "consensus", "vote", "Input should be 'majority', 'dawid_skene' or 'mace'"),
        (
            "annotation",
            "repeat_share",
            "0.1",
            "Input should be a valid number",
        ),  # a string, never read as one
        ("llm", "concurrency", "8", "Input should be a valid integer"),
    ],
)
def test_a_closed_choice_is_checked_when_the_file_is_read(tmp_path, section, key, value, expected):
    project = Project.init(tmp_path / "p")
    cfg = project.root / CONFIG_NAME
    cfg.write_text(cfg.read_text().replace(f"[{section}]\n", f'[{section}]\n{key} = "{value}"\n', 1))
    cfg.write_text(_drop_second(cfg.read_text(), key))
    with pytest.raises(ConfigError) as err:
        Project(project.root).config  # noqa: B018
    assert str(err.value) == f"{cfg}: {section}.{key}: {expected}"


def _drop_second(text: str, key: str) -> str:
    """The template with its own line for ``key`` removed (the test's line, written first, stays)."""
    lines = text.splitlines(keepends=True)
    seen = [i for i, line in enumerate(lines) if line.startswith(f"{key} =")]
    return "".join(line for i, line in enumerate(lines) if i not in seen[1:])


def test_release_configs_are_checked_against_the_config_names_when_read():
    ok = ProjectConfig.parse({"release": {"configs": ["cupid*", "alpsbench_task1", "alpsbench_*", "labels"]}})
    assert ok.release.configs == ["cupid*", "alpsbench_task1", "alpsbench_*", "labels"]
    with pytest.raises(
        ConfigError, match=r"^x.toml: release.configs: .*unknown config 'cupd'; the configs are cupid,"
    ):
        ProjectConfig.parse({"release": {"configs": ["cupid", "cupd"]}}, "x.toml")
    for wrong in ("label*s", "xyz*"):  # a pattern must end in * and start some config's name
        with pytest.raises(ConfigError, match=rf"unknown config '{re.escape(wrong)}'"):
            ProjectConfig.parse({"release": {"configs": [wrong]}})


def test_one_list_of_release_configs_builds_every_config(project):
    from prefkit.exports.release_data import build_configs
    from prefkit.schemas.config import RELEASE_CONFIGS, config_selected
    from test_release_support import import_cupid

    import_cupid(project, project.root, 3)
    built = [c.name for c in build_configs(project.store)]
    assert built == ["cupid", "cupid_unverified", "cupid_raw"]  # no labels, no AlpsBench: nothing else
    assert all(any(config_selected(n, [c]) for c in RELEASE_CONFIGS) for n in built)
    assert [c.name for c in build_configs(project.store, ["cupid_r*"])] == ["cupid_raw"]


def test_the_environment_is_read_in_one_place_and_bad_values_name_the_variable():
    from prefkit.schemas.environment import Environment, EnvironmentValueError

    env = Environment.read(
        {
            "PREFKIT_PROJECT": "",
            "PREFKIT_DB_RETRY_S": "2.5",
            "MY_KEY": "sk-1",
            "PREFKIT_DATABASE_URL": "postgresql://u:pw@h/d",
        }
    )
    assert (env.project, env.db_retry_s, env.secret("MY_KEY"), env.secret("OTHER")) == (
        None,
        2.5,
        "sk-1",
        None,
    )
    assert "pw" not in repr(env) and "sk-1" not in repr(env)
    with pytest.raises(
        EnvironmentValueError,
        match=r"^\$PREFKIT_DB_MIGRATION_WAIT_S must be a whole number of seconds, not 'soon'$",
    ):
        Environment.read({"PREFKIT_DB_MIGRATION_WAIT_S": "soon"})


def test_no_library_module_but_the_environment_record_reads_os_environ():
    """The library takes the environment as an argument (``project.env``); only the CLI, a shell,
    also hands it on to the server it starts."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readers = sorted(
        str(p.relative_to(root))
        for pkg in ("schemas", "pipelines", "curation", "annotate_app", "exports", "prefkit")
        for p in (root / pkg).rglob("*.py")
        if "cli" not in p.relative_to(root).parts
        and re.search(r"\bos\.environ\b|\bgetenv\(", p.read_text(encoding="utf-8"))
    )
    assert readers == ["schemas/environment.py"]
    # nor does the CLI through click's own environment lookup: its defaults come from the record too
    envvars = sorted(
        str(p.relative_to(root))
        for p in (root / "prefkit").rglob("*.py")
        if re.search(r"\benvvar\s*=|auto_envvar_prefix", p.read_text(encoding="utf-8"))
    )
    assert envvars == []
