"""Cut, verify and compare releases: ``<project>/releases/X.Y.Z/``.

A release directory holds ``data/<config>/<split>.jsonl`` (what identifies the release: byte-identical
when re-cut from the same state), the same rows as ``parquet/<config>/<split>.parquet`` (what the card's
configs point to: a Parquet column keeps its type, where ``datasets``' JSON reader turns a date-like string
into a timestamp), ``prefkit-X.Y.Z.duckdb`` for analysis, ``croissant.json``, the ``README.md`` dataset card and
``manifest.json`` (sha256 and size of every other file, counts, gates, agreement, provenance). Beside
the directory, ``X.Y.Z.sha256`` (``sha256sum -c`` format) anchors the manifest, optionally signed with
OpenSSH (:mod:`prefkit.exports.release_integrity`, which also verifies releases).

A cut is staged in a hidden directory and renamed into place, so a failed cut leaves nothing and an
existing version is never overwritten. This module reads the store and never writes it; the caller
logs the cut with ``store.releases.record``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefkit.curation.project import Project
from prefkit.curation.project_dir import CONFIG_NAME
from prefkit.curation.quality.agreement import agreement_rows
from prefkit.curation.quality.cost import cost_report
from prefkit.curation.quality.gates import GateResult, format_report, run_gates
from prefkit.curation.quality.suggestions import assist_report
from prefkit.curation.quality.verification import remembering_gold
from prefkit.curation.store import ReleaseRecord, StoreError
from prefkit.exports import alpsbench_public as alps_layout
from prefkit.exports.card import SOURCE_DATASETS, TEXT, card, hf_licence, size_category
from prefkit.exports.croissant import croissant
from prefkit.exports.cupid import INSTANCE_DIR, write_instance_files
from prefkit.exports.declared import declared_kinds
from prefkit.exports.duckdb_export import copy_out, load_tables, save_database
from prefkit.exports.private_gold import planned_leaks, release_leaks
from prefkit.exports.private_gold import secrets as test_gold_secrets
from prefkit.exports.release_data import build_configs, row_key
from prefkit.exports.release_integrity import (
    VERSION_RE,
    ReleaseError,
    Verification,
    checksums_text,
    load_manifest,
    sign_file,
    verify_release,
)
from prefkit.exports.writers import atomic_write_bytes, write_json
from prefkit.schemas import ALL_SCHEMAS
from prefkit.schemas.common import sha256_file, utcnow
from prefkit.schemas.config import KIND_CONFIGS, LABEL_CONFIGS
from prefkit.schemas.curation import (
    ProvenanceSummary,
    ReleaseFile,
    ReleaseManifest,
    SourceSummary,
    canary_sentence,
)
from prefkit.schemas.safe_text import shown_text

LEVELS = ("patch", "minor", "major")
LICENCE_URLS = {
    "cc-by-4.0": "https://creativecommons.org/licenses/by/4.0/",
    "mit": "https://opensource.org/licenses/MIT",
    "odc-by": "https://opendatacommons.org/licenses/by/1-0/",
    "cc0-1.0": "https://creativecommons.org/publicdomain/zero/1.0/",
}


@dataclass
class CutResult:
    path: Path
    manifest: ReleaseManifest
    gates_passed: bool
    data_sha256: str
    bump: str | None  # required bump against the previous release, None for the first
    manifest_sha256: str


def parse_version(version: str) -> tuple[int, int, int]:
    m = VERSION_RE.fullmatch(version)
    if not m:
        raise ReleaseError(f"version {version!r} is not a semantic version X.Y.Z")
    return int(m[1]), int(m[2]), int(m[3])


def releases(releases_dir: Path) -> list[str]:
    """Versions present (with a manifest), oldest first."""
    found = [
        p.parent.name for p in releases_dir.glob("*/manifest.json") if VERSION_RE.fullmatch(p.parent.name)
    ]
    return sorted(found, key=parse_version)


def data_digest(files: list[ReleaseFile]) -> str:
    """The identity of a release's data: a hash over the paths and digests of its data/ files."""
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.path):
        if f.path.startswith("data/"):
            h.update(f"{f.path}\0{f.sha256}\n".encode())
    return h.hexdigest()


# -- writing ----------------------------------------------------------------------------------------
def _file_entries(stage: Path, skip: set[str], known: dict[str, dict] | None = None) -> list[ReleaseFile]:
    """Every file under ``stage`` with its sha256 and size; ``known`` digests are reused, not re-read."""
    out = []
    for p in sorted(stage.rglob("*")):
        rel = p.relative_to(stage).as_posix()
        if p.is_file() and rel not in skip:
            digest = (known or {}).get(rel, {}).get("sha256") or sha256_file(p)
            out.append(ReleaseFile(path=rel, sha256=digest, size=p.stat().st_size))
    return out


def _card_meta(
    project: Project, version: str, released: list, sources: list[SourceSummary], override: str | None
) -> dict[str, Any]:
    cfg, rel = project.config.project, project.config.release
    kinds = sorted({s.kind for s in sources})
    names = {c.name for c in released}
    tasks = [k.declaration.title for k in declared_kinds() if names & {k.name + s for s in KIND_CONFIGS}]
    ours = {k.name + suffix for k in declared_kinds() for suffix in KIND_CONFIGS} | set(LABEL_CONFIGS)
    own = bool(tasks) and names <= ours
    said = {  # the datasheet's answers prefkit.toml leaves out, for a release of declared kinds only
        key: TEXT["declared"][key].format(tasks="; ".join(tasks))
        for key in ("motivation", "uses")
        if own and getattr(rel, key) == type(rel).model_fields[key].default  # prefkit init writes the default
    }
    return {
        "name": project.name,
        "version": version,
        "description": cfg.description,
        "licence": cfg.licence or "other",
        "hf_licence": hf_licence(cfg.licence),
        "task_categories": rel.task_categories,
        "size_categories": [size_category(sum(c.count for c in released))],
        "annotations_creators": rel.annotations_creators,
        "source_datasets": [SOURCE_DATASETS.get(k, f"extended|{k}") for k in kinds] or ["original"],
        "tags": rel.tags,
        "motivation": said.get("motivation", rel.motivation),
        "uses": said.get("uses", rel.uses),
        "maintenance": rel.maintenance,
        "judge_alpha_min": rel.judge_alpha_min,
        "consensus": rel.consensus,
        "overlap": _adaptive_overlap(project),
        "override_reason": override,
        "assist": {"policy": rel.assisted, "report": assist_report(project.store)},
        "guidelines": [v for v in project.store.guidelines.versions() if v.labels],
        "canary": project.canary(),
    }


def _adaptive_overlap(project: Project) -> dict[str, Any] | None:
    """What the card says of adaptive overlap: bounds, items, audit items, mean target (None: fixed)."""
    adaptive = [t for t in project.store.labels.tasks() if t.overlap_max is not None and not t.is_gold]
    if not adaptive:
        return None
    return {
        "tasks": len(adaptive),
        "min": min(t.overlap_min or t.overlap for t in adaptive),
        "max": max(t.overlap_max or t.overlap for t in adaptive),
        "audit": sum(t.audit for t in adaptive),
        "mean_target": sum(t.overlap for t in adaptive) / len(adaptive),
    }


def _describe(
    project: Project, stage: Path, version: str, configs, gates, agreement, override
) -> tuple[dict[str, Any], ProvenanceSummary]:
    """Hash the data files and write ``croissant.json`` and the ``README.md`` card; returns the data
    files' digests and the provenance summary."""
    data_files = {
        f"data/{f.path}": {"sha256": f.sha256, "size": f.size} for f in _file_entries(stage / "data", set())
    }
    provenance = project.store.releases.provenance_summary()
    released = [c for c in configs if c.count]
    meta = _card_meta(project, version, released, provenance.sources, override)
    licence_url = LICENCE_URLS.get(meta["hf_licence"], meta["licence"])
    doc = croissant(
        project.name, meta["description"], version, licence_url, released, data_files, meta["canary"]
    )
    write_json(stage / "croissant.json", doc)
    costs = cost_report(project.store, project.config.annotation)
    text = card(meta, configs, gates, agreement, provenance, costs)
    atomic_write_bytes(stage / "README.md", text.encode("utf-8"))
    return data_files, provenance


def plan_configs(project: Project) -> list:
    """Every config the project holds content for (``[release] configs`` narrows them), with the rows
    each dropped; configs whose rows were all dropped are kept so the card can say why. Built in the
    release's view of the labels (:func:`release_view`), as the cut builds them."""
    rel = project.config.release
    with release_view(project):
        return build_configs(
            project.store, rel.configs, rel.alpsbench_reference, rel.min_labels_per_item, rel.splits
        )


@contextmanager
def release_view(project: Project) -> Iterator[None]:
    """The labels a release reads: under ``[release] assisted = "control_only"`` the labels made with
    a suggestion on screen are left out of everything derived from them (final labels, verification,
    agreement, the gates, the ``labels`` config); the event log keeps them."""
    if project.config.release.assisted == "control_only":
        with project.store.labels.leaving_out("assisted"), remembering_gold():
            yield
    else:
        with remembering_gold():
            yield


def check_release(project: Project, agreement=None, planned=None) -> list[GateResult]:
    """Every release gate's result for the release the project would cut now (``prefkit release
    check``). ``agreement`` (agreement rows) and ``planned`` (:func:`plan_configs`) are computed when
    not given."""
    with release_view(project):
        planned = plan_configs(project) if planned is None else planned
        rows = None if agreement is None else (lambda _store: agreement)

        def test_gold() -> tuple[int, list[str]]:
            public, private = layout_of(project, planned)
            found = test_gold_secrets(planned, private)
            return len(found), planned_leaks(planned, public, found)

        return run_gates(
            project.store, project.config.release, planned, agreement_rows=rows, test_gold=test_gold
        )


def plan_and_check(project: Project) -> tuple[list, list[GateResult]]:
    """``prefkit release check`` and the Release page: the planned configs (:func:`plan_configs`) and
    the gates' results on them, in one release view (the verified gold is computed once for both)."""
    with release_view(project):
        planned = plan_configs(project)
        return planned, check_release(project, planned=planned)


def build_release(
    project: Project,
    stage: Path,
    version: str,
    gates: list[dict],
    agreement: list[dict],
    override: str | None,
    planned: list | None = None,
) -> ReleaseManifest:
    """Write every file of a release into ``stage`` and return its manifest (also written)."""
    planned = plan_configs(project) if planned is None else planned
    public_layout, _private = layout_of(project, planned)
    planned = [c for c in planned if not c.private]  # private configs never enter the release
    configs = [c for c in planned if c.count]
    stage.mkdir(parents=True, exist_ok=True)
    alps_layout.write_files(stage, public_layout)  # AlpsBench's own layout, read by its public scorer
    cupid_instance_files(stage, configs)  # CUPID's --data_dir layout, read by its evaluation/run.py
    con = load_tables(stage, configs)
    # The DuckDB file is saved in a thread while the data files are copied out, hashed and described.
    db_path = stage / f"prefkit-{version}.duckdb"
    canary = project.canary()
    metadata = [
        {"key": "name", "value": project.name},
        {"key": "version", "value": version},
        {"key": "canary", "value": canary},
        {"key": "canary_sentence", "value": canary_sentence(canary)},
    ]
    tables = {"gates": gates, "agreement": agreement, "metadata": metadata}
    db = _Background(save_database, con.cursor(), db_path, configs, tables)
    try:
        copy_out(con, stage, configs)
        data_files, provenance = _describe(project, stage, version, planned, gates, agreement, override)
    finally:
        db.result()  # never leave the thread writing into a stage that is being removed
        con.close()
    manifest = ReleaseManifest(
        name=project.name,
        version=version,
        created_at=utcnow(),
        files=_file_entries(stage, {"manifest.json"}, data_files),
        counts={c.name: c.count for c in configs},
        schema_versions={name: model.SCHEMA_VERSION for name, model in sorted(ALL_SCHEMAS.items())},
        gates=gates,
        agreement=agreement,
        provenance=provenance.model_dump(),
        override_reason=override,
        canary=canary,
    )
    write_json(stage / "manifest.json", manifest.model_dump(mode="json"))
    return manifest


def cupid_instance_files(stage: Path, configs: list) -> dict[str, dict[str, Any]]:
    """The released ``cupid`` rows (exactly those, in their order) as one JSON file per instance in
    ``cupid_instances/``, the folder CUPID's ``evaluation/run.py --data_dir`` reads; nothing when the
    release has no ``cupid`` rows. Listed and hashed in the manifest like every other file."""
    cupid = next((c for c in configs if c.name == "cupid" and c.count), None)
    if cupid is None:
        return {}
    rows = [json.loads(line) for line in cupid.splits.get("test", [])]
    return write_instance_files(stage / INSTANCE_DIR, rows)


class _Background:
    """Run ``fn(*args)`` in a thread; :meth:`result` joins it and re-raises its exception."""

    def __init__(self, fn, *args):
        self._out: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._thread.start()

    def _run(self, fn, args) -> None:
        try:
            self._out["value"] = fn(*args)
        except BaseException as exc:  # handed to the caller in result()
            self._out["error"] = exc

    def result(self) -> Any:
        self._thread.join()
        if "error" in self._out:
            raise self._out["error"]
        return self._out["value"]


def _check_bump(releases_dir: Path, previous: str | None, stage: Path, version: str) -> str | None:
    if previous is None:
        return None
    if parse_version(version) <= parse_version(previous):
        raise ReleaseError(f"version {version} is not above the latest release {previous}")
    need = diff_releases(releases_dir / previous, stage)["level"]
    old, new = parse_version(previous), parse_version(version)
    got = "major" if new[0] > old[0] else "minor" if new[1] > old[1] else "patch"
    if LEVELS.index(got) < LEVELS.index(need):
        raise ReleaseError(f"changes since {previous} need a {need} release; {version} is only a {got} bump")
    return need


def inside_project(project: Project, where: Path) -> None:
    """Refuse to write a release through a symbolic link (or a path) that leads out of the project:
    a ``releases/`` linked elsewhere would put the files where nobody reviewed them going."""
    root = project.root.resolve()
    probe = where
    while probe != project.root and not os.path.lexists(probe):
        probe = probe.parent  # the part that exists decides where new directories go
    if not probe.resolve().is_relative_to(root):
        raise ReleaseError(
            f"{where} leads outside the project (to {probe.resolve()}); a release is written inside "
            f"{root}: make {where.name}/ a directory of the project"
        )


def cut_release(
    project: Project,
    version: str,
    override: str | None = None,
    gates=None,
    agreement=None,
    actor: str | None = None,
) -> CutResult:
    """Cut ``version`` from the project's current state and record it in the project's release log
    (``prefkit release list``). Refuses when a gate fails (unless ``override`` gives a reason, recorded
    in the manifest), when the version exists, or when the version bump is smaller than the change
    since the latest release. ``gates`` (results of :func:`run_gates`) and ``agreement`` (agreement
    rows) are computed when not given; agreement is computed once for both. With ``actor`` (who
    cut it: a maintainer of the app, ``shell:<login>``), the cut is an event of the audit log."""
    with release_view(project):
        result = _cut(project, version, override, gates, agreement)
    if actor is not None:
        m = result.manifest
        failed = [g["gate"] for g in m.gates if not g["passed"]]
        project.store.audit.record(
            actor,
            "release.cut",
            version,
            {
                "data_sha256": result.data_sha256,
                "override": m.override_reason,
                "failed_gates": failed,
            },
        )
    return result


def release_project(release_dir: Path) -> Project | None:
    """The project holding ``releases/<release_dir>`` (opened: the caller closes it), else None."""
    parent = Path(release_dir).resolve().parent
    if parent.name == "releases" and (parent.parent / CONFIG_NAME).is_file():
        return Project(parent.parent)
    return None


def verify_in_project(
    release_dir: Path,
    project: Project | None,
    expected_sha256: str | None = None,
    allowed_signers: Path | None = None,
) -> Verification:
    """``prefkit release verify`` and the Release page: :func:`verify_release` anchored in
    ``project``'s release log and its ``[release]`` signing settings (``allowed_signers`` overrides
    the configured file); without a project, only the anchors beside the release."""
    recorded, signers, signer = None, None, None
    if project is not None:
        version = load_manifest(Path(release_dir)).version
        recorded = next((r for r in project.store.releases.recorded() if r.version == version), None)
        cfg = signing_config(project)
        signers, signer = cfg.allowed_signers, cfg.signer
    return verify_release(Path(release_dir), recorded, expected_sha256, allowed_signers or signers, signer)


def previous_version(project: Project, version: str) -> str | None:
    """The release cut before ``version`` in ``releases/`` (what the Release page diffs against)."""
    found = releases(project.releases_dir)
    earlier = [v for v in found if parse_version(v) < parse_version(version)]
    return earlier[-1] if earlier else None


def _cut(project: Project, version: str, override: str | None, gates, agreement) -> CutResult:
    parse_version(version)
    override = shown_text(override).strip() or None  # the reason as every file shows it (no bidi tricks)
    for where in (project.releases_dir, project.root / "releases-private"):
        inside_project(project, where)
    out_dir = project.releases_dir / version
    if out_dir.exists():
        raise ReleaseError(f"release {version} already exists at {out_dir}; releases are never overwritten")
    if any(r.version == version for r in project.store.releases.recorded()):
        raise ReleaseError(f"release {version} is already recorded in the project; releases are never re-cut")
    if agreement is None:
        agreement = agreement_rows(project.store)
    planned = plan_configs(project)
    if gates is None:
        gates = check_release(project, agreement, planned)
    results = gates
    passed = all(r.passed for r in results)
    if not passed and not override:
        raise ReleaseError(
            'gates failed; fix them or cut with --override "reason":\n' + "\n".join(format_report(results))
        )
    found = releases(project.releases_dir)
    previous = found[-1] if found else None
    stage = project.releases_dir / f".staging-{version}-{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    try:
        manifest = build_release(
            project,
            stage,
            version,
            [r.as_dict() for r in results],
            agreement or [],
            override,
            planned,
        )
        _no_public_test_gold(project, planned, stage)
        bump = _check_bump(project.releases_dir, previous, stage, version)
        sums = _stage_checksums(project, stage, manifest, version)
        try:
            os.rename(stage, out_dir)
        except OSError as exc:  # another process cut the same version meanwhile
            raise ReleaseError(
                f"release {version} appeared at {out_dir} during this cut; nothing written"
            ) from exc
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        for leftover in project.releases_dir.glob(f".{version}.sha256.*"):
            leftover.unlink(missing_ok=True)
        raise
    for tmp in sums:  # beside the release: X.Y.Z.sha256 and, when signed, X.Y.Z.sha256.sig
        os.replace(
            tmp,
            project.releases_dir / tmp.name.replace(f".{version}.sha256.{os.getpid()}", f"{version}.sha256"),
        )
    write_private(project, version, planned)
    result = CutResult(
        out_dir, manifest, passed, data_digest(manifest.files), bump, sha256_file(out_dir / "manifest.json")
    )
    project.store.releases.record(
        ReleaseRecord(
            version=version,
            created_at=manifest.created_at,
            path=str(out_dir),
            manifest_sha256=result.manifest_sha256,
            data_sha256=result.data_sha256,
            gates_passed=passed,
            override_reason=manifest.override_reason,
        )
    )
    return result


@dataclass(frozen=True)
class SigningConfig:
    """``[release] signing_key``, ``allowed_signers`` (paths, relative to the project) and ``signer``
    (``None``: not set)."""

    signing_key: Path | None
    allowed_signers: Path | None
    signer: str | None


def _no_public_test_gold(project: Project, planned: list, stage: Path) -> None:
    """The written release, read back file by file (Parquet and DuckDB included): a test-split gold
    object anywhere in it stops the cut, override or not (the gate checked the plan; this checks bytes)."""
    _public, private = layout_of(project, planned)
    found = test_gold_secrets(planned, private)
    if not found:
        return
    leaks = release_leaks(stage, found)
    if leaks:
        raise ReleaseError(
            f"test-split gold is in {len(leaks)} public place(s) of the release ({'; '.join(leaks[:3])}); "
            "nothing written"
        )


def signing_config(project: Project) -> SigningConfig:
    """The project's :class:`SigningConfig`."""
    cfg = project.config.release

    def path(value: str) -> Path | None:
        value = value.strip()
        return (project.root / Path(value).expanduser()) if value else None

    return SigningConfig(path(cfg.signing_key), path(cfg.allowed_signers), cfg.signer.strip() or None)


def _stage_checksums(project: Project, stage: Path, manifest: ReleaseManifest, version: str) -> list[Path]:
    """Write the checksums file (and its signature when a key is configured) under temporary names
    beside the release; the caller renames them into place after the release directory."""
    tmp = project.releases_dir / f".{version}.sha256.{os.getpid()}"
    atomic_write_bytes(tmp, checksums_text(stage, manifest, name=version).encode("utf-8"))
    out = [tmp]
    key = signing_config(project).signing_key
    if key is not None:
        out.append(sign_file(tmp, key))
    return out


def private_dir(project: Project, version: str) -> Path:
    """Where a release's private configs go: beside ``releases/``, never inside a published release."""
    return project.root / "releases-private" / version


def dialogue_lookup(store):
    """``session id -> [{role, text}]`` (the turns as imported; ``[]`` for an id with no dialogue),
    each session read once (its tracks ask for it again and again)."""
    seen: dict[str, list[dict[str, Any]]] = {}

    def turns(session_id: str) -> list[dict[str, Any]]:
        if session_id not in seen:
            try:
                rows = store.content.original_turns(session_id)
                seen[session_id] = [{"role": t.role, "text": t.content} for t in rows]
            except StoreError:
                seen[session_id] = []
        return seen[session_id]

    return turns


#: The last layout made, with the planned configs it was made from: a cut asks for the layout of one
#: plan four times (the gate, the files, the read-back, the private files).
_LAYOUT: list[Any] = [None, None]


def layout_of(project: Project, planned: list) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """AlpsBench's public and private layout files of ``planned`` (made once per plan)."""
    if _LAYOUT[0] is not planned:
        _LAYOUT[:] = [planned, alps_layout.layout_files(planned, dialogue_lookup(project.store))]
    return _LAYOUT[1]


def write_private(project: Project, version: str, planned: list | None = None) -> list[Path]:
    """Write the private configs (AlpsBench test gold, whole packets) as ``<config>/<split>.jsonl`` with a
    ``manifest.json`` of their sha256, for the maintainers' hidden evaluation, and the test references
    of AlpsBench's public layout under ``hidden/private_gold/``, where its maintainers keep them."""
    planned = plan_configs(project) if planned is None else planned
    configs = [c for c in planned if c.private and c.count]
    if not configs:
        return []
    out = private_dir(project, version)
    files: dict[str, dict[str, Any]] = {}
    written = []
    _public, hidden = layout_of(project, planned)
    for rel, data in sorted(hidden.items()):
        atomic_write_bytes(out / rel, data)
        files[rel] = {"rows": data.count(b"\n"), "sha256": hashlib.sha256(data).hexdigest()}
        written.append(out / rel)
    for cfg in configs:
        for split, lines in cfg.splits.items():
            path = out / cfg.name / f"{split}.jsonl"
            data = "".join(line + "\n" for line in lines).encode("utf-8")
            atomic_write_bytes(path, data)
            files[f"{cfg.name}/{split}.jsonl"] = {
                "rows": len(lines),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            written.append(path)
    write_json(
        out / "manifest.json", {"name": project.name, "version": version, "private": True, "files": files}
    )
    return written


# -- reading ------------------------------------------------------------------------------------------
def _rows(release_dir: Path, config: str) -> dict[str, str]:
    out = {}
    for path in sorted((release_dir / "data" / config).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out[f"{path.stem}/{row_key(row, 'id' if 'id' in row else None)}"] = line
    return out


def diff_releases(a: Path, b: Path) -> dict[str, Any]:
    """What changed from release ``a`` to ``b`` and the semantic-version level that needs:
    ``major`` when released records changed or were removed, ``minor`` when records were only added,
    ``patch`` when the data files are identical (metadata only)."""
    fa = {f.path: f.sha256 for f in load_manifest(a).files if f.path.startswith("data/")}
    fb = {f.path: f.sha256 for f in load_manifest(b).files if f.path.startswith("data/")}
    configs = sorted({p.split("/")[1] for p in fa} | {p.split("/")[1] for p in fb})
    per: dict[str, dict[str, int]] = {}
    for cfg in configs:
        if {p: h for p, h in fa.items() if p.split("/")[1] == cfg} == {
            p: h for p, h in fb.items() if p.split("/")[1] == cfg
        }:
            continue
        ra, rb = _rows(Path(a), cfg), _rows(Path(b), cfg)
        per[cfg] = {
            "added": len(rb.keys() - ra.keys()),
            "removed": len(ra.keys() - rb.keys()),
            "changed": sum(ra[k] != rb[k] for k in ra.keys() & rb.keys()),
        }
    changed = any(v["removed"] or v["changed"] for v in per.values())
    added = any(v["added"] for v in per.values())
    level = "major" if changed else "minor" if added else "patch"
    return {"from": str(a), "to": str(b), "level": level, "configs": per}
