"""A prefkit project on disk and the composed :class:`ProjectStore`.

Layout of a project directory::

    prefkit.toml          configuration (see curation/templates/prefkit.toml)
    project.db            the working database (SQLite, WAL)
    guidelines/<kind>.md  annotation guidelines per task kind
    releases/X.Y.Z/       immutable releases
"""

from __future__ import annotations

import copy
import os
import tomllib
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from curation.store import StoreError
from curation.store_alpsbench import AlpsTaskStore
from curation.store_app import AppStore
from curation.store_content import ContentStore
from curation.store_eval import EvalStore
from curation.store_generation import GenerationStore
from curation.store_labels import LabelStore
from curation.store_labelstudio import LabelStudioStore
from curation.store_llm import LLMStore
from curation.store_release import ReleaseStore

CONFIG_NAME = "prefkit.toml"
ENV_PROJECT = "PREFKIT_PROJECT"


class ProjectStore(
    ContentStore,
    AppStore,
    LabelStore,
    ReleaseStore,
    LLMStore,
    LabelStudioStore,
    GenerationStore,
    EvalStore,
    AlpsTaskStore,
):
    """The project's working database. One instance per process is enough; it is thread-safe."""


def _template() -> str:
    return resources.files("curation").joinpath("templates/prefkit.toml").read_text(encoding="utf-8")


def default_config() -> dict[str, Any]:
    return tomllib.loads(_template().replace("{name}", "prefkit-project"))


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = (
            _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


class Project:
    """A project directory: configuration, store, guidelines and releases."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        if not (self.root / CONFIG_NAME).is_file():
            raise StoreError(
                f"{self.root} is not a prefkit project (no {CONFIG_NAME}); run `prefkit init {root}`"
            )

    @classmethod
    def init(cls, root: str | Path, name: str | None = None) -> Project:
        """Create a project directory (idempotent: an existing project is opened, never overwritten)."""
        root = Path(root)
        cfg = root / CONFIG_NAME
        if not cfg.exists():
            root.mkdir(parents=True, exist_ok=True)
            cfg.write_text(_template().replace("{name}", name or root.resolve().name), encoding="utf-8")
        project = cls(root)
        project.guidelines_dir.mkdir(exist_ok=True)
        from curation.guidelines import write_default_guidelines

        write_default_guidelines(project.guidelines_dir)
        project.store  # noqa: B018 - creates the database and applies migrations
        return project

    @classmethod
    def locate(cls, path: str | Path | None) -> Project:
        """The project named by ``path``, else ``$PREFKIT_PROJECT``, else the current directory."""
        chosen = path or os.environ.get(ENV_PROJECT) or "."
        return cls(chosen)

    @cached_property
    def config(self) -> dict[str, Any]:
        try:
            user = tomllib.loads((self.root / CONFIG_NAME).read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise StoreError(f"{self.root / CONFIG_NAME}: {exc}") from exc
        return _merge(default_config(), user)

    @property
    def name(self) -> str:
        return self.config["project"]["name"]

    @property
    def database(self) -> str:
        db = self.config["project"]["database"]
        return db if "://" in db else str(self.root / db)

    @cached_property
    def store(self) -> ProjectStore:
        return ProjectStore(self.database)

    @property
    def guidelines_dir(self) -> Path:
        return self.root / "guidelines"

    @property
    def releases_dir(self) -> Path:
        return self.root / "releases"

    def guidelines(self, kind: str) -> str:
        path = self.guidelines_dir / f"{kind}.md"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()
