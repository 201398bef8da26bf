"""A project directory as found on disk, without its store: where it is, its checked ``prefkit.toml``,
the database it names, its guidelines and releases folders.

:class:`prefkit.curation.project.Project` is this plus the store; commands that only need to find a
project and read its configuration (``prefkit status`` on a SQLite project) use this and start without
SQLAlchemy.
"""

from __future__ import annotations

import time
import tomllib
from functools import cached_property
from pathlib import Path
from typing import Self

from prefkit.curation.store import StoreError, is_url
from prefkit.schemas.config import ProjectConfig
from prefkit.schemas.environment import Environment
from prefkit.schemas.reading import read_project_text

CONFIG_NAME = "prefkit.toml"


class ProjectDir:
    """A project directory and the environment it runs in (``env``: read from the process when not
    given). Raises :class:`StoreError` when ``root`` has no ``prefkit.toml``."""

    def __init__(self, root: str | Path, env: Environment | None = None):
        self.env = Environment.read() if env is None else env
        self.root = Path(root).resolve()
        if not (self.root / CONFIG_NAME).is_file():
            raise StoreError(
                f"{self.root} is not a prefkit project (no {CONFIG_NAME}); run `prefkit init {root}`"
            )

    @classmethod
    def locate(cls, path: str | Path | None, env: Environment | None = None) -> Self:
        """The project named by ``path``, else ``$PREFKIT_PROJECT``, else the current directory."""
        env = Environment.read() if env is None else env
        return cls(path or env.project or ".", env)

    @cached_property
    def config(self) -> ProjectConfig:
        """``prefkit.toml``, read and checked once: an unknown or mistyped key is a :class:`ConfigError`."""
        path = self.root / CONFIG_NAME
        try:
            user = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise StoreError(f"{path}: {exc}") from exc
        declared = tuple(p.stem for p in sorted((self.root / "kinds").glob("*.toml")))
        return ProjectConfig.parse(user, str(path), declared)

    @property
    def name(self) -> str:
        return self.config.project.name

    @property
    def configured_database(self) -> str:
        """``[project] database`` as written in ``prefkit.toml``."""
        return str(self.config.project.database)

    @property
    def database(self) -> str:
        """What the store opens: ``$PREFKIT_DATABASE_URL`` when set (it may carry the password),
        else the configured URL, else the configured SQLite file relative to the project root."""
        db = self.env.database_url or self.configured_database
        return db if is_url(db) else str(self.root / db)

    @property
    def guidelines_dir(self) -> Path:
        return self.root / "guidelines"

    @property
    def releases_dir(self) -> Path:
        return self.root / "releases"

    def guidelines(self, kind: str) -> str:
        """``guidelines/<kind>.md`` ('' when there is none), or one line why it cannot be shown. An
        empty file is read again for half a second: an editor saving in place empties it first."""
        for _ in range(10):
            text = read_project_text(self.root, f"guidelines/{kind}.md")
            if text != "":
                return text or ""
            time.sleep(0.05)
        return ""
