"""A release cannot be altered quietly: 22 tamperings, each caught by `release verify`, which also says
which source it trusted for the manifest; the checksums file beside a release passes `sha256sum -c`;
an OpenSSH signature is made at the cut and required at verification when configured."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from prefkit.cli import cli
from prefkit.curation.project import Project
from prefkit.exports.release import cut_release
from prefkit.exports.release_integrity import checksums_path, verify_release
from prefkit.schemas.common import sha256_file
from test_release_support import labelled_project

VERSION = "1.0.0"


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """One project with release 1.0.0 cut through the CLI (so the project's log records it)."""
    tmp = tmp_path_factory.mktemp("tamper")
    project = Project.init(tmp / "proj", name="tamper-proj")
    labelled_project(project, tmp)
    project.close()
    result = CliRunner().invoke(cli, ["release", "cut", "--version", VERSION, "-p", str(tmp / "proj")])
    assert result.exit_code == 0, result.output
    project = Project(tmp / "proj")
    row = next(r for r in project.store.releases.recorded() if r.version == VERSION)
    project.close()
    return tmp / "proj" / "releases" / VERSION, row


@pytest.fixture
def copy(released, tmp_path):
    """A fresh copy of the release and its checksums file, laid out as in a project."""
    src, row = released
    dest = tmp_path / "releases" / VERSION
    shutil.copytree(src, dest, symlinks=True)
    shutil.copy2(checksums_path(src), checksums_path(dest))
    return dest, row


def _manifest(rel: Path) -> dict:
    return json.loads((rel / "manifest.json").read_text(encoding="utf-8"))


def _write_manifest(rel: Path, m: dict, rehash: bool = False) -> None:
    """Rewrite the manifest; with ``rehash`` also update the checksums file, as a careful forger would."""
    (rel / "manifest.json").write_text(json.dumps(m, indent=2), encoding="utf-8")
    if rehash:
        sums = checksums_path(rel)
        lines = [
            f"{sha256_file(rel / 'manifest.json')}  {VERSION}/manifest.json"
            if line.endswith("/manifest.json")
            else line
            for line in sums.read_text().splitlines()
        ]
        sums.write_text("\n".join(lines) + "\n")


def _data_file(rel: Path) -> str:
    return next(f["path"] for f in _manifest(rel)["files"] if f["path"].startswith("data/"))


#: ``{name: (tampering, what verification must say)}``, each registered where it is defined
TAMPERINGS: dict[str, tuple[Callable[[Path], None], str]] = {}


def tampering(name: str, expected: str):
    def register(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        TAMPERINGS[name] = (fn, expected)
        return fn

    return register


@tampering("byte flipped", "sha256 differs from the manifest")
def _flip_byte(rel):
    p = rel / _data_file(rel)
    raw = bytearray(p.read_bytes())
    raw[5] ^= 1
    p.write_bytes(bytes(raw))


@tampering("file truncated", "in the manifest")
def _truncate(rel):
    p = rel / _data_file(rel)
    p.write_bytes(p.read_bytes()[:-10])


@tampering("row appended", "in the manifest")
def _append_row(rel):
    with (rel / _data_file(rel)).open("a") as f:
        f.write('{"tampered": true}\n')


@tampering("file deleted", "croissant.json: missing")
def _delete_file(rel):
    (rel / "croissant.json").unlink()


@tampering("extra file", "data/notes.txt: not in the manifest")
def _extra_file(rel):
    (rel / "data" / "notes.txt").write_text("hi")


@tampering("extra empty directory", "data/empty/: a directory not in the manifest")
def _extra_empty_dir(rel):
    (rel / "data" / "empty").mkdir()


@tampering("extra hidden file", ".hidden: not in the manifest")
def _extra_hidden_file(rel):
    (rel / ".hidden").write_text("x")


@tampering("README replaced by a symlink", "README.md: a symlink")
def _readme_symlink(rel):
    target = rel.parent / "other-readme.md"
    shutil.copy2(rel / "README.md", target)  # identical bytes: only the link gives it away
    (rel / "README.md").unlink()
    (rel / "README.md").symlink_to(target)


@tampering("extra symlink", "data/link.jsonl: a symlink")
def _extra_symlink(rel):
    (rel / "data" / "link.jsonl").symlink_to("/etc/hostname")


@tampering("directory symlink", "parquet2: a symlink")
def _dir_symlink(rel):
    (rel / "parquet2").symlink_to(rel / "parquet", target_is_directory=True)


@tampering("file renamed", "croissant2.json: not in the manifest")
def _rename_file(rel):
    (rel / "croissant.json").rename(rel / "croissant2.json")


@tampering("gates flipped, override deleted", "manifest.json: sha256 differs from the project's release log")
def _gates_flipped(rel):
    m = _manifest(rel)
    for g in m["gates"]:
        g["passed"] = True
    m["override_reason"] = None
    _write_manifest(rel, m)


@tampering("counts changed", "manifest.json: counts.adjudications is 2, the data holds 1 rows")
def _counts_changed(rel):
    m = _manifest(rel)
    key = next(iter(m["counts"]))
    m["counts"][key] += 1
    _write_manifest(rel, m)


@tampering("name changed", "manifest.json: sha256 differs from the project's release log")
def _name_changed(rel):
    m = _manifest(rel)
    m["name"] = "someone-else"
    _write_manifest(rel, m, rehash=True)  # the checksums file is forged too: the project's log still knows


@tampering("version changed", "version '9.9.9' but the directory is 1.0.0")
def _version_changed(rel):
    m = _manifest(rel)
    m["version"] = "9.9.9"
    _write_manifest(rel, m)


@tampering("row edited, manifest sha and size updated", "differs from the project's release log")
def _row_edited_and_rehashed(rel):
    path = _data_file(rel)
    p = rel / path
    p.write_bytes(p.read_bytes().replace(b'"', b"'", 1))
    m = _manifest(rel)
    entry = next(f for f in m["files"] if f["path"] == path)
    entry["sha256"], entry["size"] = sha256_file(p), p.stat().st_size
    _write_manifest(rel, m, rehash=True)


@tampering("entry ../outside.txt", "../outside.txt: '..' or '.' in the path")
def _entry_outside_parent(rel):
    (rel.parent / "outside.txt").write_text("x")
    m = _manifest(rel)
    m["files"].append(
        {"path": "../outside.txt", "sha256": sha256_file(rel.parent / "outside.txt"), "size": 1}
    )
    _write_manifest(rel, m, rehash=True)


@tampering("entry /etc/hostname", "/etc/hostname: absolute path")
def _entry_absolute(rel):
    host = Path("/etc/hostname")
    m = _manifest(rel)
    m["files"].append({"path": str(host), "sha256": sha256_file(host), "size": host.stat().st_size})
    _write_manifest(rel, m, rehash=True)


@tampering("entry dropped", "croissant.json: not in the manifest")
def _entry_dropped(rel):
    m = _manifest(rel)
    m["files"] = [f for f in m["files"] if f["path"] != "croissant.json"]
    _write_manifest(rel, m)


@tampering("entry duplicated", "listed twice in the manifest")
def _entry_duplicated(rel):
    m = _manifest(rel)
    m["files"].append(m["files"][0])
    _write_manifest(rel, m)


@tampering("manifest not JSON", "not a valid release manifest")
def _manifest_broken(rel):
    (rel / "manifest.json").write_text("{", encoding="utf-8")


@tampering("checksums file forged", "1.0.0.sha256: disagrees with the manifest")
def _checksums_forged(rel):
    sums = checksums_path(rel)
    sums.write_text(sums.read_text().replace(sums.read_text()[:8], "00000000", 1))


def test_the_untouched_release_verifies_against_every_anchor(copy):
    rel, row = copy
    result = verify_release(rel, row)
    assert result.problems == []
    assert result.trusted == ["the project's release log", "1.0.0.sha256"]


@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_every_tampering_is_caught(copy, name):
    rel, row = copy
    tamper, expected = TAMPERINGS[name]
    tamper(rel)
    if name == "manifest not JSON":
        result = CliRunner().invoke(cli, ["release", "verify", str(rel)])
        assert result.exit_code == 1 and expected in result.output
        return
    problems = verify_release(rel, row).problems
    assert problems and any(expected in p for p in problems), problems


def test_the_same_tamperings_fail_without_the_project_when_the_checksums_file_is_kept(copy):
    """Even without the project's log, the file beside the release catches a manifest edit."""
    rel, _ = copy
    _gates_flipped(rel)
    problems = verify_release(rel).problems
    assert "manifest.json: sha256 differs from 1.0.0.sha256" in problems
    assert "manifest.json: gates" not in " ".join(problems)  # flipped to passed: consistent on its own


def test_a_manifest_with_nothing_to_check_it_against_fails(copy):
    rel, _ = copy
    checksums_path(rel).unlink()
    problems = verify_release(rel).problems
    assert problems == [
        "manifest.json: nothing to check it against (no project release log, no 1.0.0.sha256 beside the "
        "release, no --sha256): an altered manifest would go unnoticed"
    ]
    sha = sha256_file(rel / "manifest.json")
    assert verify_release(rel, expected_sha256=sha).trusted == ["the sha256 given with --sha256"]


def test_cli_verify_names_the_sources_it_trusted(released):
    rel, _ = released
    result = CliRunner().invoke(cli, ["release", "verify", str(rel)])
    assert result.exit_code == 0, result.output
    assert "manifest.json matches the project's release log; 1.0.0.sha256" in result.output


def test_cli_verify_reports_a_changed_manifest_and_exits_1(copy):
    rel, _ = copy
    proj_rel = rel  # a copy outside the project: only the checksums file anchors it
    _counts_changed(proj_rel)
    result = CliRunner().invoke(cli, ["release", "verify", str(proj_rel)])
    assert result.exit_code == 1
    assert "FAIL manifest.json: sha256 differs from 1.0.0.sha256" in result.output


def test_checksums_file_passes_sha256sum(released):
    rel, _ = released
    if shutil.which("sha256sum") is None:
        pytest.fail("sha256sum (coreutils) is needed for this test")
    proc = subprocess.run(
        ["sha256sum", "-c", "--strict", f"{VERSION}.sha256"], cwd=rel.parent, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{VERSION}/manifest.json: OK" in proc.stdout


# -- OpenSSH signatures ----------------------------------------------------------------------------------
def _keypair(tmp: Path, name: str) -> tuple[Path, Path]:
    key = tmp / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
    signers = tmp / f"{name}.allowed"
    signers.write_text(f"{name}@example.org {(tmp / (name + '.pub')).read_text()}")
    return key, signers


@pytest.fixture
def signing_project(tmp_path):
    if shutil.which("ssh-keygen") is None:
        pytest.fail("ssh-keygen (OpenSSH) is needed for the signing tests")
    project = Project.init(tmp_path / "proj", name="signed")
    labelled_project(project, tmp_path)
    key, signers = _keypair(tmp_path, "lead")
    cfg = project.root / "prefkit.toml"
    text = cfg.read_text()
    if 'signing_key = ""' not in text:  # labelled_project may have rewritten [release]
        text = text.replace(
            "[release]\n", '[release]\nsigning_key = ""\nallowed_signers = ""\nsigner = ""\n', 1
        )
    cfg.write_text(
        text.replace('signing_key = ""', f'signing_key = "{key}"')
        .replace('allowed_signers = ""', f'allowed_signers = "{signers}"')
        .replace('signer = ""', 'signer = "lead@example.org"')
    )
    project.close()
    project = Project(tmp_path / "proj")
    yield project
    project.close()


def test_a_configured_key_signs_and_verify_requires_the_signature(signing_project, tmp_path):
    cut_release(signing_project, VERSION)
    rel = signing_project.releases_dir / VERSION
    sig = checksums_path(rel).with_name(f"{VERSION}.sha256.sig")
    assert sig.read_text().startswith("-----BEGIN SSH SIGNATURE-----")
    result = CliRunner().invoke(cli, ["release", "verify", str(rel)])
    assert result.exit_code == 0, result.output
    assert "an OpenSSH signature of 1.0.0.sha256 by lead@example.org" in result.output
    # a forger who rewrites the manifest and the checksums file cannot sign them
    _counts_changed(rel)
    _write_manifest(rel, _manifest(rel), rehash=True)
    result = CliRunner().invoke(cli, ["release", "verify", str(rel)])
    assert result.exit_code == 1
    assert "FAIL 1.0.0.sha256.sig: not a valid signature of 1.0.0.sha256 by lead@example.org" in result.output
    sig.unlink()
    result = CliRunner().invoke(cli, ["release", "verify", str(rel)])
    assert (
        "FAIL 1.0.0.sha256.sig: missing, and [release] allowed_signers requires a signature" in result.output
    )


def test_another_key_is_not_trusted(signing_project, tmp_path):
    cut_release(signing_project, VERSION)
    rel = signing_project.releases_dir / VERSION
    _, other = _keypair(tmp_path, "mallory")
    result = CliRunner().invoke(cli, ["release", "verify", str(rel), "--allowed-signers", str(other)])
    assert result.exit_code == 1 and "not a valid signature" in result.output


def test_versions_are_matched_whole(project, tmp_path):
    labelled_project(project, tmp_path)
    result = CliRunner().invoke(cli, ["release", "cut", "--version", "3.0.0\n", "-p", str(project.root)])
    assert result.exit_code == 1 and "is not a semantic version" in result.output
    assert not project.releases_dir.exists() or not any(project.releases_dir.iterdir())
    assert os.listdir(project.root).count("releases") <= 1
