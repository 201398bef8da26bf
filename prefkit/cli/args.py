"""CLI arguments that load prefkit's library: ``--project`` opening the project and its store, and
task kinds as a choice (the registry). Kept apart from :mod:`prefkit.cli.common` so that a command that
needs neither (``prefkit status`` on a SQLite project) starts without them."""

from __future__ import annotations

import contextlib
import functools

import click
from prefkit.cli.common import project_path_option
from prefkit.curation.annotation.declared import use_project_kinds
from prefkit.curation.annotation.task_kinds import TASK_KIND_REGISTRY, kind_names
from prefkit.curation.project import Project
from prefkit.curation.project_dir import ProjectDir
from prefkit.schemas.common import PrefkitError


class KindChoice(click.Choice):
    """``--kind`` / ``KIND``: the registered task kinds, read when the command runs (so a kind a
    plugin registers is a valid choice too). A plugin kind that failed to load is refused with the
    error that names its distribution."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return kind_names()

    @choices.setter
    def choices(self, _value) -> None:  # click sets it in __init__; the registry is the source
        pass

    def convert(self, value, param, ctx):
        if value not in TASK_KIND_REGISTRY and ctx is not None and "project_path" in ctx.params:
            # A kind the project declares (kinds/NAME.toml): --project is read first (eager). Not a
            # project: the choice below says which kinds there are.
            with contextlib.suppress(PrefkitError):
                use_project_kinds(ProjectDir.locate(ctx.params["project_path"]).root)
        broken = TASK_KIND_REGISTRY.broken().get(value)
        if broken is not None:  # a plugin kind that did not load: say why, naming its distribution
            raise broken
        return super().convert(value, param, ctx)


def project_option(fn):
    """``--project PATH`` (or ``$PREFKIT_PROJECT``, else the current directory); passes ``project``."""

    @project_path_option
    @functools.wraps(fn)
    def wrapper(*args, project_path: str, **kwargs):
        project = Project.locate(project_path)
        try:
            return fn(*args, project=project, **kwargs)
        finally:
            project.close()

    return wrapper
