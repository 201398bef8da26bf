"""A prefkit project: its directory (:class:`~prefkit.curation.project_dir.ProjectDir`: configuration,
guidelines, releases) and its store (:class:`ProjectStore`).

Layout of a project directory::

    prefkit.toml          configuration (see curation/templates/prefkit.toml)
    project.db            the working database (SQLite, WAL), unless ``[project] database`` (or
                          ``$PREFKIT_DATABASE_URL``) names a PostgreSQL database
    guidelines/<kind>.md  annotation guidelines per task kind
    kinds/<name>.toml     task kinds the project declares (docs/kinds.md)
    releases/X.Y.Z/       immutable releases
"""

from __future__ import annotations

import fcntl
import os
import re
import tomllib
import uuid
from functools import cached_property
from importlib import resources
from pathlib import Path

from prefkit.curation.annotation.declared import KINDS_DIR, use_project_kinds
from prefkit.curation.annotation.guidelines import write_default_guidelines
from prefkit.curation.project_dir import CONFIG_NAME, ProjectDir
from prefkit.curation.store import ProjectStore, StoreError, has_password, is_url, parse_url, redact
from prefkit.schemas.environment import DATABASE_URL, Environment

ENV_DATABASE = DATABASE_URL


def _template() -> str:
    return resources.files("prefkit.curation").joinpath("templates/prefkit.toml").read_text(encoding="utf-8")


class Project(ProjectDir):
    """A project directory (:class:`ProjectDir`: configuration, guidelines, releases, environment)
    with its store. Opening one makes its declared kinds (``kinds/``) the registry's."""

    def __init__(self, root: str | Path, env: Environment | None = None):
        super().__init__(root, env)
        use_project_kinds(self.root)

    @classmethod
    def init(
        cls,
        root: str | Path,
        name: str | None = None,
        database: str | None = None,
        env: Environment | None = None,
    ) -> Project:
        """Create a project directory (idempotent: an existing project is opened, never overwritten).

        ``database`` (default: ``$PREFKIT_DATABASE_URL``, else ``project.db``) is a SQLite file or a
        ``postgresql://user@host/db`` URL; the URL goes into ``prefkit.toml`` without its password."""
        env = Environment.read() if env is None else env
        root = Path(root)
        cfg = root / CONFIG_NAME
        chosen = database or env.database_url
        if database and has_password(database):
            raise StoreError(
                "--database must not carry a password (it would be written to prefkit.toml): "
                f"put it in PGPASSWORD or ~/.pgpass, or pass the whole URL in ${ENV_DATABASE}"
            )
        if not cfg.exists():
            text_ = _template().replace("{name}", name or root.resolve().name)
            if chosen:
                text_ = set_toml_value(text_, "project", "database", config_database(chosen))
            if chosen and is_url(chosen):  # reachable and migrated before anything is written
                ProjectStore(env.database_url or chosen, *_store_options(env)).close()
            root.mkdir(parents=True, exist_ok=True)
            cfg.write_text(text_, encoding="utf-8")
        elif database and cls(root, env).configured_database != config_database(database):
            raise StoreError(
                f"{cfg} already uses {redact(cls(root, env).configured_database)}; "
                "to move an existing project to another database use `prefkit store migrate --to URL`"
            )
        project = cls(root, env)
        project.guidelines_dir.mkdir(exist_ok=True)
        (project.root / KINDS_DIR).mkdir(exist_ok=True)

        write_default_guidelines(project.guidelines_dir)
        project.store  # noqa: B018 - creates the database and applies migrations
        project.canary()
        return project

    def canary(self) -> str:
        """``[release] canary``, made (a random GUID written into ``prefkit.toml``) on first use: once,
        under a lock on the file and by rename, so two first cuts at once both carry the one written."""
        if not self.config.release.canary:
            cfg = self.root / CONFIG_NAME
            with cfg.open("rb") as held:
                fcntl.flock(held, fcntl.LOCK_EX)  # a cut that waited here reads the GUID the other wrote
                self.__dict__.pop("config", None)
                if not self.config.release.canary:
                    text_ = cfg.read_text(encoding="utf-8")
                    tmp = cfg.with_name(f".{cfg.name}.{os.getpid()}.tmp")
                    tmp.write_text(set_toml_value(text_, "release", "canary", str(uuid.uuid4())), "utf-8")
                    os.replace(tmp, cfg)
                    self.__dict__.pop("config", None)
        return self.config.release.canary

    def set_database(self, database: str) -> None:
        """Point ``prefkit.toml`` at ``database`` (its password, if any, is not written)."""
        cfg = self.root / CONFIG_NAME
        text_ = set_toml_value(
            cfg.read_text(encoding="utf-8"), "project", "database", config_database(database)
        )
        cfg.write_text(text_, encoding="utf-8")
        self.__dict__.pop("config", None)

    @cached_property
    def store(self) -> ProjectStore:
        store = ProjectStore(self.database, *_store_options(self.env))
        release = self.config.release
        store.consensus_method, store.consensus_confidence = release.consensus, release.consensus_confidence
        use_project_kinds(self.root, store)  # its declared kinds, held to what their labels were made under
        return store

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()


def _store_options(env: Environment) -> tuple[float | None, int | None]:
    """The store's retry and migration-wait seconds from the environment (``None``: the defaults)."""
    return env.db_retry_s, env.db_migration_wait_s


def config_database(database: str) -> str:
    """The form of ``database`` that goes into ``prefkit.toml``: a URL without its password
    (libpq finds it in PGPASSWORD or ~/.pgpass), with the driver left implicit."""
    if not is_url(database):
        return database
    url = parse_url(database)._replace(password=None)  # URL.set() treats None as "unchanged"
    if url.get_backend_name() == "postgresql":
        url = url.set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def set_toml_value(toml_text: str, section: str, key: str, value: str) -> str:
    """``toml_text`` with ``[section] key`` set to the string ``value``, comments and layout kept."""
    quoted = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    head, sep, rest = toml_text.partition(f"[{section}]\n")
    if not sep:
        return toml_text.rstrip("\n") + f"\n\n[{section}]\n{key} = {quoted}\n"
    section_end = re.search(r"^\[", rest, re.MULTILINE)
    body, tail = (rest[: section_end.start()], rest[section_end.start() :]) if section_end else (rest, "")
    line = re.compile(rf"^{key}\s*=.*$", re.MULTILINE)
    if line.search(body):
        body = line.sub(lambda _m: f"{key} = {quoted}", body, count=1)
    else:
        body = f"{key} = {quoted}\n" + body
    out = head + sep + body + tail
    tomllib.loads(out)  # never write a file that no longer parses
    return out
