"""prefkit.toml is one typed model: the template's values are the model's defaults, and a bad or
unknown key is one error line naming it."""

from __future__ import annotations

import tomllib

import pytest
from click.testing import CliRunner
from prefkit.curation.project import CONFIG_NAME, Project, _template
from prefkit.schemas.config import ConfigError, ProjectConfig, ProjectSection, ReleasePolicy

from prefkit.cli import cli


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
    with pytest.raises(ConfigError, match=r"annotation.overlap: Input should be a valid integer"):
        ProjectConfig.parse({"annotation": {"overlap": "three"}})


def test_one_policy_answers_every_fields_threshold():
    policy = ReleasePolicy(policy="tentative", alpha_min={"default": 0.8, "preference_match.coverage": 0.7})
    assert policy.alpha_for("preference_match", "coverage") == 0.7
    assert policy.alpha_for("memory_verify", "decision") == policy.default_alpha == 0.8
    assert ReleasePolicy().judge_alpha_min == 0.667
