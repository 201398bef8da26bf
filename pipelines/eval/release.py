"""Reading what an evaluation runs on: one config of a release directory (or a bare JSONL file).

A release is ``releases/X.Y.Z/`` as ``prefkit release cut`` writes it: ``data/<config>/<split>.jsonl``
plus ``manifest.json`` (name, version). The digest of the config's files identifies the data a run
saw, so a changed release never resumes an older run. Rows are validated as they are read; a bad row
is one :class:`EvalInputError` naming the file and the line. This module only reads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from prefkit.schemas.common import InputError, validation_line
from prefkit.schemas.cupid import BenchmarkInstance
from prefkit.schemas.reading import iter_jsonl
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

CupidKey = tuple[str, str]  # (persona_id, instance_type)


class EvalInputError(InputError):
    """A release, predictions or labels file cannot be evaluated: names the file, line and field."""


@dataclass
class ReleaseRef:
    """Which data a run evaluates."""

    path: Path
    config: str
    name: str | None
    version: str | None
    digest: str
    files: list[Path] = field(default_factory=list)


def jsonl_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of every non-blank line, read by the one strict reading layer
    (UTF-8, strict JSON); a line that is not a JSON object is an error naming the line."""
    try:
        for lineno, value in iter_jsonl(Path(path)):
            if not isinstance(value, dict):
                raise EvalInputError(f"{path}:{lineno}: expected a JSON object, got {type(value).__name__}")
            yield lineno, value
    except EvalInputError:
        raise
    except InputError as exc:
        raise EvalInputError(str(exc)) from None


def model_lines(path: Path, model: type[M]) -> Iterator[tuple[int, M]]:
    """:func:`jsonl_lines` read as ``model``; a line that is not one is an error naming line and field."""
    for lineno, row in jsonl_lines(path):
        try:
            value = model.model_validate(row)
        except ValidationError as exc:
            raise EvalInputError(f"{path}:{lineno}: field {validation_line(exc, root='<line>')}") from None
        yield lineno, value


def config_files(release: Path, config: str) -> list[Path]:
    """The data files of ``config`` in a release directory (a ``.jsonl`` path is its own config)."""
    release = Path(release)
    if release.is_file():
        return [release]
    if not release.is_dir():
        raise EvalInputError(f"{release}: no such release directory or JSONL file")
    folder = release / "data" / config
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files:
        have = sorted(p.name for p in (release / "data").glob("*") if p.is_dir())
        raise EvalInputError(
            f"{release}: no config {config!r} (data/{config}/*.jsonl); configs here: {', '.join(have) or 'none'}"
        )
    return files


def release_ref(release: Path, config: str, files: list[Path] | None = None) -> ReleaseRef:
    release = Path(release)
    files = files if files is not None else config_files(release, config)
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode())
        digest.update(hashlib.sha256(f.read_bytes()).digest())
    name = version = None
    manifest = release / "manifest.json" if release.is_dir() else None
    if manifest is not None and manifest.is_file():
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        name, version = meta.get("name"), meta.get("version")
    return ReleaseRef(release.resolve(), config, name, version, digest.hexdigest()[:16], files)


def load_cupid(release: Path, config: str = "cupid") -> tuple[ReleaseRef, dict[CupidKey, BenchmarkInstance]]:
    """The CUPID instances of a release config, keyed by (persona_id, instance_type).

    Keying by persona alone would collapse a persona's three instances into one, so a repeated key is
    an error naming both lines."""
    ref = release_ref(release, config)
    out: dict[CupidKey, BenchmarkInstance] = {}
    where: dict[CupidKey, str] = {}
    for path in ref.files:
        for lineno, inst in model_lines(path, BenchmarkInstance):
            key = (inst.persona_id, inst.instance_type)
            if key in out:
                raise EvalInputError(
                    f"{path}:{lineno}: instance ({key[0]}, {key[1]}) repeats {where[key]}; "
                    "results are keyed by (persona_id, instance_type)"
                )
            out[key] = inst
            where[key] = f"line {lineno}"
    if not out:
        raise EvalInputError(f"{release}: config {config!r} holds no CUPID instances")
    return ref, out


def relevant_positions(inst: BenchmarkInstance) -> list[int]:
    """Indexes of the prior sessions that share the current context factor (oldest first)."""
    return [
        i for i, p in enumerate(inst.prior_interactions) if p.context_factor == inst.current_context_factor
    ]


def sessions_ago(inst: BenchmarkInstance) -> int | None:
    """How many sessions back the most recent relevant session is (1 = the last session before the
    request); ``None`` when no prior session is relevant."""
    positions = relevant_positions(inst)
    return len(inst.prior_interactions) - positions[-1] if positions else None


def check_line_protocol(where: str, made: str | None, scoring: str | None) -> None:
    """A prediction line that names the protocol its run was made with (``eval export`` writes it) is
    scored only by that protocol: one protocol's predictions under another's arithmetic would give a
    number neither protocol defines."""
    if made is not None and scoring is not None and made != scoring:
        raise EvalInputError(
            f"{where}: this prediction was made under protocol {made}; score it with --protocol {made} "
            f'(not {scoring}), or remove the line\'s "protocol" field to score it as a plain predictions file'
        )
