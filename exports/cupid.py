"""Export benchmark instances in the exact CUPID row format: JSONL or Parquet, or one JSON file per
instance (the ``--data_dir`` layout of CUPID's evaluator)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from prefkit.curation.quality.verification import SessionVerification, instance_verification, session_statuses
from prefkit.exports.release_integrity import load_manifest
from prefkit.exports.writers import atomic_write_bytes, write_jsonl, write_parquet
from prefkit.schemas.common import InputError, content_hash, disk_full, validation_line
from prefkit.schemas.cupid import BenchmarkInstance
from pydantic import ValidationError

if TYPE_CHECKING:
    from prefkit.curation.store import InstanceLink, ProjectStore

CUPID_COLUMNS = tuple(
    """persona_id instance_type current_request current_context_factor current_contextual_preference
    current_checklist prior_interactions""".split()
)


def cupid_arrow_schema():
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    prior = pa.struct(
        [
            ("context_factor", pa.string()),
            ("contextual_preference", pa.string()),
            ("dialogue", pa.list_(message)),
        ]
    )
    return pa.schema(
        [
            ("persona_id", pa.string()),
            ("instance_type", pa.string()),
            ("current_request", pa.string()),
            ("current_context_factor", pa.string()),
            ("current_contextual_preference", pa.string()),
            ("current_checklist", pa.list_(pa.string())),
            ("prior_interactions", pa.list_(prior)),
        ]
    )


def rebuilt_instance(
    instance: BenchmarkInstance, links: list[InstanceLink], sessions: dict
) -> dict[str, Any]:
    """The instance as its sessions stand now: each linked prior interaction takes the session's
    current turns (rewrites applied); the preference and factor texts stay as the instance has them.
    Keys come back in CUPID's order at every level."""
    record = instance.model_dump(mode="json")
    priors = record["prior_interactions"]
    for link in links:
        session = sessions.get(link.session_id)
        if session is not None and link.position < len(priors):
            priors[link.position]["dialogue"] = [
                {"role": t.role, "content": t.content} for t in session.turns
            ]
    return BenchmarkInstance.model_validate({**record, "prior_interactions": priors}).model_dump(mode="json")


@dataclass(frozen=True)
class CupidInstanceRow:
    """One instance as a CUPID row rebuilt from its sessions as they stand now, or (``row`` None) why
    verification left it out."""

    instance_id: str
    row: dict[str, Any] | None
    dropped: str | None = None


def instance_rows(
    store: ProjectStore, verified_only: bool = False, statuses: dict[str, SessionVerification] | None = None
) -> Iterator[CupidInstanceRow]:
    """Every instance, in the store's order, rebuilt from its sessions (rewrites applied); with
    ``verified_only`` an instance whose relevant sessions are not all verified comes without its row,
    with the reason. The one builder of verified CUPID rows: ``prefkit export cupid --verified`` and the
    release's ``cupid`` config both read it (``statuses``: :func:`session_statuses`, when at hand)."""
    links = store.content.instance_links()
    sessions = {s.session_id: s for s in store.content.sessions()} if links else {}
    if verified_only and statuses is None:
        statuses = session_statuses(store)
    for inst in store.content.instances():
        mine = links.get(inst.instance_id, [])
        if verified_only and statuses is not None:
            ok, why = instance_verification(mine, statuses)
            if not ok:
                yield CupidInstanceRow(inst.instance_id, None, why)
                continue
        yield CupidInstanceRow(inst.instance_id, rebuilt_instance(inst.record, mine, sessions))


def cupid_rows(store: ProjectStore, verified_only: bool = False) -> list[dict[str, Any]]:
    """Instances as CUPID rows, rebuilt from their sessions as they stand now (rewrites applied);
    ``verified_only`` keeps the instances whose every relevant session is verified."""
    return [r.row for r in instance_rows(store, verified_only) if r.row is not None]


def export_cupid(store: ProjectStore, out: Path, verified_only: bool = False) -> int:
    rows = cupid_rows(store, verified_only)
    suffix = out.suffix.lower()
    if suffix == ".jsonl":
        return write_jsonl(out, rows, sort_keys=False)
    if suffix == ".parquet":
        return write_parquet(out, rows, schema=cupid_arrow_schema())
    raise InputError(f"{out}: unsupported output type {suffix!r}; use .jsonl or .parquet")


#: The release's folder of CUPID instances, one JSON file each: the ``--data_dir`` of CUPID's
#: ``evaluation/run.py``, which reads every file in it.
INSTANCE_DIR = "cupid_instances"
#: Characters a persona id keeps in a file name. CUPID's evaluator names an instance (and its results
#: file) by the part of its file name before the first ".": no "." may be in it, nor "/", nor "+" (the
#: separator of persona and instance type), nor anything a file system or a shell could stumble on.
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
#: Longest persona part of a name: a longer (or cleaned) id keeps its first characters and a hash of
#: the whole id, so names stay unique and far below the 255 bytes a file name may have.
_STEM_MAX = 96


def persona_stem(persona_id: str) -> str:
    """The persona id as it may stand in a file name: unchanged when it has only letters, digits, ``_``
    and ``-`` and at most 96 characters; else cleaned, cut and given ``_<8 hex>`` of the original id."""
    stem = _SAFE.sub("_", persona_id).strip("_") or "persona"
    if stem != persona_id or len(stem) > _STEM_MAX:
        stem = f"{stem[: _STEM_MAX - 9]}_{hashlib.sha256(persona_id.encode('utf-8')).hexdigest()[:8]}"
    return stem


def instance_file_names(rows: list[dict[str, Any]]) -> list[str]:
    """A unique file name per CUPID row, in the rows' order: ``<persona_id>+<instance_type>.json`` as
    CUPID's synthesis names its instances (the persona id through :func:`persona_stem`). The instances
    of one persona share its id; should two rows share persona and type too, each gets ``-<8 hex>`` of
    its content (and identical rows ``-2``, ``-3``, ... after the first), so a name never depends on
    anything but the rows."""
    bases = [f"{persona_stem(r['persona_id'])}+{r['instance_type']}" for r in rows]
    sharing = Counter(bases)
    names: list[str] = []
    seen: dict[str, int] = {}
    for base, row in zip(bases, rows, strict=True):
        name = f"{base}-{content_hash(row, 8)}" if sharing[base] > 1 else base
        seen[name] = seen.get(name, 0) + 1
        names.append(f"{name}.json" if seen[name] == 1 else f"{name}-{seen[name]}.json")
    return names


def instance_json(row: dict[str, Any]) -> bytes:
    """One instance file's bytes: the row checked as a CUPID instance, keys in CUPID's order at every
    level, indented and ASCII-escaped as CUPID's ``save_json`` writes them (its ``load_json`` opens
    files in the platform's encoding, so ASCII reads back the same everywhere)."""
    record = BenchmarkInstance.model_validate(row).model_dump(mode="json")
    return (json.dumps(record, indent=2) + "\n").encode("ascii")


def write_instance_files(out_dir: Path, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One JSON file per row in ``out_dir`` (the layout CUPID's ``evaluation/run.py --data_dir`` reads:
    every file in the folder is an instance), named by :func:`instance_file_names`; returns ``{file
    name: row}``. The folder must be new or empty, since the evaluator would read any other file in it."""
    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise InputError(f"{out_dir}: not empty; CUPID's evaluator reads every file in it as an instance")
    # Every file's bytes first: a row that is not a CUPID instance (an id imported before ids were
    # checked, a hand-edited release) refuses the export before the folder exists.
    files: dict[str, bytes] = {}
    for i, (name, row) in enumerate(zip(instance_file_names(rows), rows, strict=True), start=1):
        try:
            files[name] = instance_json(row)
        except ValidationError as exc:
            raise InputError(
                f"{out_dir}: row {i} is not a CUPID instance: field {validation_line(exc)}"
            ) from None
    made = not out_dir.exists()
    try:
        for name, data in files.items():
            atomic_write_bytes(out_dir / name, data)
    except OSError as exc:
        # A refused write (disk full, permissions) leaves nothing behind: no half folder for the evaluator.
        for name in files:
            (out_dir / name).unlink(missing_ok=True)
        if made:
            shutil.rmtree(out_dir, ignore_errors=True)
        if disk_full(exc):
            raise  # the CLI's disk-full line says what to do and that nothing was kept
        raise InputError(
            f"{out_dir}: cannot write the instance files ({exc.strerror or exc}); nothing kept"
        ) from None
    return dict(zip(files, rows, strict=True))


def export_per_instance(store: ProjectStore, out_dir: Path, verified_only: bool = False) -> dict[str, dict]:
    """The project's instances (rebuilt from their sessions), one file each: :func:`write_instance_files`."""
    return write_instance_files(out_dir, cupid_rows(store, verified_only))


def release_cupid_rows(release_dir: Path) -> list[dict[str, Any]]:
    """The rows of a release's ``cupid`` config (``data/cupid/test.jsonl``), checked against the sha256
    its ``manifest.json`` lists, in the release's order; the project is not needed."""
    release_dir = Path(release_dir)
    rel = "data/cupid/test.jsonl"
    listed = {f.path: f.sha256 for f in load_manifest(release_dir).files}
    path = release_dir / rel
    if rel not in listed or not path.is_file():
        raise InputError(f"{release_dir}: the release has no `cupid` config ({rel}): no verified instances")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != listed[rel]:
        raise InputError(
            f"{path}: sha256 differs from the manifest; run `prefkit release verify {release_dir}`"
        )
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def export_release_per_instance(release_dir: Path, out_dir: Path) -> dict[str, dict]:
    """A release's verified instances (its ``cupid`` rows), one file each, as the release's own
    ``cupid_instances/`` folder holds them: :func:`write_instance_files`."""
    return write_instance_files(out_dir, release_cupid_rows(release_dir))
