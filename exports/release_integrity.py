"""What makes a release impossible to alter quietly: checksums beside it, an optional OpenSSH signature,
and the verification that checks every byte, path and number against them.

``manifest.json`` lists the sha256 and size of every other file, so a changed file shows; the manifest
itself is anchored outside the release directory:

- the project's release log records its sha256 when the release is cut (``store.releases.record``);
- ``releases/X.Y.Z.sha256``, written beside the release, lists the sha256 of every file and of the
  manifest in the ``sha256sum`` format, so ``cd releases && sha256sum -c 1.0.0.sha256`` checks a
  release with standard tools;
- with ``[release] signing_key`` set, ``ssh-keygen -Y sign`` signs that checksums file
  (``X.Y.Z.sha256.sig``, namespace ``prefkit-release``); with ``allowed_signers`` set, verification
  requires a valid signature (``ssh-keygen -Y verify``): OpenSSH's own format, nothing invented here.

:func:`load_manifest` reads a release's ``manifest.json`` (the cut and the verification share it, with
the version rule ``VERSION_RE``). :func:`verify_release` reports every problem and which of these sources it trusted; a release with no
source at all fails, since a manifest checked only against itself proves nothing. This module never
writes the store.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import yaml
from prefkit.schemas.common import PrefkitError, sha256_file
from prefkit.schemas.curation import ReleaseManifest

if TYPE_CHECKING:
    from prefkit.curation.store import ReleaseRecord

NAMESPACE = "prefkit-release"
MANIFEST = "manifest.json"
VERSION_RE = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")  # always fullmatch: `$` accepts "\n"


class ReleaseError(PrefkitError):
    """A release was refused or a release directory is not what its manifest says."""


class IntegrityError(PrefkitError):
    """Signing or checking a release failed for a reason other than a changed release."""


def load_manifest(release_dir: Path) -> ReleaseManifest:
    path = Path(release_dir) / "manifest.json"
    if not path.is_file():
        raise ReleaseError(f"{release_dir}: no manifest.json (not a prefkit release)")
    try:
        return ReleaseManifest.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise ReleaseError(f"{path}: not a valid release manifest ({str(exc).splitlines()[0]})") from None


def checksums_path(release_dir: Path) -> Path:
    """``releases/X.Y.Z.sha256``: beside the release directory, not inside it."""
    return release_dir.parent / f"{release_dir.name}.sha256"


def checksums_text(release_dir: Path, manifest: ReleaseManifest, name: str | None = None) -> str:
    """``sha256sum`` lines for every file of the release and its manifest, paths under ``name/``."""
    name = name or release_dir.name
    entries = [(f.sha256, f.path) for f in manifest.files]
    entries.append((sha256_file(release_dir / MANIFEST), MANIFEST))
    return "".join(f"{sha}  {name}/{path}\n" for sha, path in sorted(entries, key=lambda e: e[1]))


def read_checksums(path: Path, name: str) -> dict[str, str]:
    """``{path inside the release: sha256}`` from a checksums file; other releases' lines are ignored."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        sha, sep, rel = line.partition("  ")
        if sep and rel.startswith(f"{name}/"):
            out[rel[len(name) + 1 :]] = sha
    return out


# -- signing (OpenSSH) -----------------------------------------------------------------------------------
def _ssh_keygen() -> str:
    exe = shutil.which("ssh-keygen")
    if not exe:
        raise IntegrityError("signing needs ssh-keygen (OpenSSH 8.2 or later) on PATH")
    return exe


def sign_file(path: Path, key: Path) -> Path:
    """Sign ``path`` with the OpenSSH private ``key``: writes ``path.sig`` (namespace prefkit-release)."""
    if not key.is_file():
        raise IntegrityError(f"signing key {key} not found ([release] signing_key)")
    proc = subprocess.run(
        [_ssh_keygen(), "-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE, str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise IntegrityError(f"ssh-keygen could not sign {path.name}: {msg[-1] if msg else proc.returncode}")
    return path.with_name(path.name + ".sig")


def verify_signature(path: Path, sig: Path, allowed_signers: Path, identity: str | None) -> tuple[bool, str]:
    """``(ok, who or why)``: ``ssh-keygen -Y verify`` of ``path`` against ``allowed_signers``."""
    exe = _ssh_keygen()
    if not allowed_signers.is_file():
        raise IntegrityError(f"allowed signers file {allowed_signers} not found")
    if not identity:
        found = subprocess.run(
            [exe, "-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        identity = found.stdout.strip().splitlines()[0] if found.returncode == 0 and found.stdout else None
        if not identity:
            return False, f"{sig.name}: made by no key in {allowed_signers}"
    with path.open("rb") as data:
        proc = subprocess.run(
            [
                exe,
                "-Y",
                "verify",
                "-f",
                str(allowed_signers),
                "-I",
                identity,
                "-n",
                NAMESPACE,
                "-s",
                str(sig),
            ],
            stdin=data,
            capture_output=True,
            text=True,
        )
    if proc.returncode != 0:
        return False, f"{sig.name}: not a valid signature of {path.name} by {identity}"
    return True, identity


# -- verifying -------------------------------------------------------------------------------------------
@dataclass
class Verification:
    """The outcome of :func:`verify_release`: problems (empty = intact) and the sources trusted."""

    name: str = "?"
    version: str = "?"
    files: int = 0
    problems: list[str] = field(default_factory=list)
    trusted: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _unsafe_path(rel: str) -> str | None:
    p = PurePosixPath(rel)
    if not rel or rel != rel.strip() or "\\" in rel or "\x00" in rel:
        return "not a plain relative path"
    if p.is_absolute() or rel.startswith("~"):
        return "absolute path: points outside the release"
    if any(part in ("..", ".", "") for part in rel.split("/")):
        return "'..' or '.' in the path: may point outside the release"
    if rel == MANIFEST:
        return "the manifest cannot list itself"
    return None


def _walk(release_dir: Path) -> tuple[list[str], list[str], list[str]]:
    """Regular files, directories and symlinks/special files under the release (never followed)."""
    files: list[str] = []
    dirs: list[str] = []
    odd: list[str] = []
    for root, dirnames, filenames in os.walk(release_dir, followlinks=False):
        for d in dirnames:
            p = Path(root, d)
            (odd if p.is_symlink() else dirs).append(p.relative_to(release_dir).as_posix())
        for f in filenames:
            p = Path(root, f)
            mode = p.lstat().st_mode
            (files if stat.S_ISREG(mode) else odd).append(p.relative_to(release_dir).as_posix())
    return files, dirs, odd


def _check_files(release_dir: Path, manifest: ReleaseManifest, out: Verification) -> set[str]:
    listed: set[str] = set()
    for f in manifest.files:
        why = _unsafe_path(f.path)
        if why:
            out.problems.append(f"{f.path}: {why}")
            continue
        if f.path in listed:
            out.problems.append(f"{f.path}: listed twice in the manifest")
            continue
        listed.add(f.path)
        p = release_dir / f.path
        if p.is_symlink() or any(q.is_symlink() for q in p.parents if release_dir in q.parents):
            continue  # reported by the walk
        if not p.exists():
            out.problems.append(f"{f.path}: missing")
        elif not stat.S_ISREG(p.lstat().st_mode):
            out.problems.append(f"{f.path}: not a regular file")
        elif p.stat().st_size != f.size:
            out.problems.append(f"{f.path}: size {p.stat().st_size} != {f.size} in the manifest")
        elif sha256_file(p) != f.sha256:
            out.problems.append(f"{f.path}: sha256 differs from the manifest")
    return listed


def _check_tree(release_dir: Path, listed: set[str], out: Verification) -> None:
    files, dirs, odd = _walk(release_dir)
    out.problems += [f"{rel}: a symlink or special file (a release holds regular files only)" for rel in odd]
    out.problems += [f"{rel}: not in the manifest" for rel in sorted(files) if rel not in listed | {MANIFEST}]
    needed = {str(PurePosixPath(p).parent) for p in listed} | {"."}
    needed |= {str(parent) for p in listed for parent in PurePosixPath(p).parents}
    out.problems += [f"{rel}/: a directory not in the manifest" for rel in sorted(dirs) if rel not in needed]


def _check_content(release_dir: Path, manifest: ReleaseManifest, listed: set[str], out: Verification) -> None:
    """What the manifest says about the data must be true of the data."""
    for config, count in sorted(manifest.counts.items()):
        paths = sorted(p for p in listed if p.startswith(f"data/{config}/") and p.endswith(".jsonl"))
        if not paths:
            out.problems.append(f"manifest.json: counts.{config}: no data/{config}/ files in the release")
            continue
        rows = 0
        for rel in paths:
            p = release_dir / rel
            if p.is_file() and not p.is_symlink():
                with p.open("rb") as fh:
                    rows += sum(1 for line in fh if line.strip())
        if rows != count:
            out.problems.append(f"manifest.json: counts.{config} is {count}, the data holds {rows} rows")
    failing = [g.get("gate", "?") for g in manifest.gates if not g.get("passed")]
    if failing and not (manifest.override_reason or "").strip():
        out.problems.append(
            f"manifest.json: gates {', '.join(failing)} failed and no override reason is given"
        )
    if release_dir.name != manifest.version and _is_version(release_dir.name):
        out.problems.append(
            f"manifest.json: version {manifest.version!r} but the directory is {release_dir.name}"
        )


def _check_card(release_dir: Path, listed: set[str], out: Verification) -> None:
    """The card's YAML, as Hugging Face reads it: each config's name is the string of its folder."""
    text = (release_dir / "README.md").read_text(encoding="utf-8") if "README.md" in listed else ""
    try:
        header = yaml.safe_load(text.split("---\n")[1]) if text.startswith("---\n") else None
    except (yaml.YAMLError, IndexError) as exc:
        out.problems.append(f"README.md: the card's YAML does not load: {str(exc).splitlines()[0]}")
        return
    for key in ("configs", "dataset_info"):
        for n, cfg in enumerate((header or {}).get(key) or [], start=1):
            cfg = cfg if isinstance(cfg, dict) else {}
            name, files = cfg.get("config_name"), cfg.get("data_files") or []
            paths = [PurePosixPath(str(f.get("path", ""))) for f in files if isinstance(f, dict)]
            folders = {part for p in paths for part in p.parts[1:2]}
            if not isinstance(name, str) or folders - {name}:
                out.problems.append(
                    f"README.md: {key}[{n}].config_name reads as {name!r} ({type(name).__name__}), not "
                    + (f"its folder's name {', '.join(sorted(folders))!r}" if folders else "a string")
                )


def _is_version(text: str) -> bool:
    return VERSION_RE.fullmatch(text) is not None


def _check_anchors(
    release_dir: Path,
    manifest: ReleaseManifest,
    out: Verification,
    recorded: ReleaseRecord | None,
    expected_sha256: str | None,
    allowed_signers: Path | None,
    identity: str | None,
) -> None:
    actual = sha256_file(release_dir / MANIFEST)
    if expected_sha256:
        if expected_sha256.lower() != actual:
            out.problems.append("manifest.json: sha256 differs from the one given with --sha256")
        else:
            out.trusted.append("the sha256 given with --sha256")
    if recorded is not None:
        if recorded.manifest_sha256 != actual:
            out.problems.append("manifest.json: sha256 differs from the project's release log")
        else:
            out.trusted.append("the project's release log")
    sums = checksums_path(release_dir)
    if sums.is_file() and not sums.is_symlink():
        listed = read_checksums(sums, release_dir.name)
        if MANIFEST not in listed:
            out.problems.append(f"{sums.name}: has no line for {release_dir.name}/{MANIFEST}")
        elif listed[MANIFEST] != actual:
            out.problems.append(f"manifest.json: sha256 differs from {sums.name}")
        else:
            others = {f.path: f.sha256 for f in manifest.files}
            wrong = sorted(p for p, sha in listed.items() if p != MANIFEST and others.get(p) != sha)
            if wrong:
                out.problems.append(f"{sums.name}: disagrees with the manifest on {', '.join(wrong[:3])}")
            else:
                out.trusted.append(sums.name)
    _check_signature(sums, out, allowed_signers, identity)
    if not out.trusted and not any(p.startswith("manifest.json: sha256") for p in out.problems):
        out.problems.append(
            f"manifest.json: nothing to check it against (no project release log, no {sums.name} beside "
            "the release, no --sha256): an altered manifest would go unnoticed"
        )


def _check_signature(
    sums: Path, out: Verification, allowed_signers: Path | None, identity: str | None
) -> None:
    sig = sums.with_name(sums.name + ".sig")
    if allowed_signers is None:
        return
    if not sums.is_file() or not sig.is_file():
        out.problems.append(f"{sig.name}: missing, and [release] allowed_signers requires a signature")
        return
    ok, who = verify_signature(sums, sig, allowed_signers, identity)
    if ok:
        out.trusted.append(f"an OpenSSH signature of {sums.name} by {who}")
    else:
        out.problems.append(who)


def verify_release(
    release_dir: Path,
    recorded: ReleaseRecord | None = None,
    expected_sha256: str | None = None,
    allowed_signers: Path | None = None,
    identity: str | None = None,
) -> Verification:
    """Check a release: every listed file (path inside, regular, size, sha256), nothing unlisted (files,
    directories, symlinks), the manifest's counts, gates and version against the data, and the manifest's
    own sha256 against every available anchor — ``recorded`` (the project's release-log row), the
    checksums file beside the release, ``expected_sha256``, and the OpenSSH signature when
    ``allowed_signers`` is given."""
    release_dir = Path(release_dir)
    out = Verification()
    mpath = release_dir / MANIFEST
    if mpath.is_symlink():
        out.problems.append("manifest.json: a symlink (a release holds regular files only)")
        return out
    manifest = load_manifest(release_dir)
    out.name, out.version, out.files = manifest.name, manifest.version, len(manifest.files)
    listed = _check_files(release_dir, manifest, out)
    _check_tree(release_dir, listed, out)
    _check_content(release_dir, manifest, listed, out)
    _check_card(release_dir, listed, out)
    _check_anchors(release_dir, manifest, out, recorded, expected_sha256, allowed_signers, identity)
    return out
