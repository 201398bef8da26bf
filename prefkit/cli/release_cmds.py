"""``prefkit release``: gates, cut, verify, diff and list releases."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from prefkit.cli.args import project_option
from prefkit.cli.common import echo_json, echo_table, json_option, shell_actor
from prefkit.cli.types import SafePath
from prefkit.curation.project import Project
from prefkit.curation.quality.gates import config_report, format_report
from prefkit.exports.release import (
    cut_release,
    diff_releases,
    plan_and_check,
    release_project,
    verify_in_project,
)


@click.group()
def release() -> None:
    """Gate, cut, verify and compare releases (releases/X.Y.Z/ in the project)."""


@release.command("check")
@project_option
@json_option
def release_check(project: Project, as_json: bool) -> None:
    """Run every release gate; print each with its number and pass/fail, then every config of the
    release with its rows, what it dropped and why, and which gates apply to it (exit 1 when a gate
    fails). A gate with nothing to measure fails unless no config of the release depends on it.

    Example: prefkit release check --project my-bench
    """
    planned, results = plan_and_check(project)
    if as_json:
        echo_json(
            {
                "gates": [r.as_dict() for r in results],
                "configs": [
                    {
                        "name": c.name,
                        "rows": c.count,
                        "dropped": c.dropped,
                        "needs": list(c.needs),
                        "gates": [r.gate for r in results if c.name in r.applies_to],
                    }
                    for c in planned
                ],
            }
        )
    else:
        for line in format_report(results) + [""] + config_report(results, planned):
            click.echo(line)
    if not all(r.passed for r in results):
        sys.exit(1)


@release.command("cut")
@click.option("--version", "version", required=True, help="Semantic version X.Y.Z of the release.")
@click.option("--override", help="Cut despite failing gates; the reason is written into the manifest.")
@project_option
def release_cut(project: Project, version: str, override: str | None) -> None:
    """Write releases/X.Y.Z/ (data, Parquet, DuckDB, card, Croissant, manifest). Refuses when a gate
    fails (unless --override "reason"), when the version exists, or when the bump is too small.

    Example: prefkit release cut --version 1.0.0 --project my-bench
    """
    result = cut_release(project, version, override=override, actor=shell_actor())
    m = result.manifest
    click.echo(f"released {m.name} {version} at {result.path}")
    click.echo(f"  rows      {', '.join(f'{k} {v}' for k, v in m.counts.items())}")
    click.echo(f"  files     {len(m.files) + 1} (manifest.json lists the sha256 of the other {len(m.files)})")
    click.echo(f"  data      sha256 {result.data_sha256[:16]}")
    if result.bump:
        click.echo(f"  change    {result.bump} since the previous release")
    if m.override_reason:
        failed = ", ".join(g["gate"] for g in m.gates if not g["passed"])
        click.echo(f"  OVERRIDE  failing gates ({failed}): {m.override_reason}")


@release.command("verify")
@click.argument("directory", type=SafePath(file_okay=False, exists=True))
@click.option(
    "--project",
    "-p",
    "project_path",
    type=SafePath(file_okay=False),
    help="Project whose release log anchors the manifest (default: the project the release is in).",
)
@click.option("--sha256", "expected", help="The manifest's sha256 as published elsewhere (an extra anchor).")
@click.option(
    "--allowed-signers",
    type=SafePath(dir_okay=False, exists=True),
    help="OpenSSH allowed_signers file: require a valid signature (default: [release] allowed_signers).",
)
def release_verify(directory: str, project_path: str | None, expected: str | None, allowed_signers) -> None:
    """Check a release: every file against the manifest (sha256, size, paths inside, nothing extra, no
    symlinks), the manifest's counts, gates and version against the data, and the manifest itself against
    the project's release log, X.Y.Z.sha256 beside the release, --sha256 and, when configured, an OpenSSH
    signature. Says which of these it trusted; any problem fails (exit 1).

    Example: prefkit release verify my-bench/releases/1.0.0
    """
    release_dir = Path(directory)
    project = Project.locate(project_path) if project_path else release_project(release_dir)
    try:
        result = verify_in_project(
            release_dir, project, expected, Path(allowed_signers) if allowed_signers else None
        )
    finally:
        if project is not None:
            project.close()
    for problem in result.problems:
        click.echo(f"FAIL {problem}")
    trusted = "; ".join(result.trusted) or "nothing"
    if result.problems:
        click.echo(
            f"{result.name} {result.version}: {len(result.problems)} problem(s); trusted {trusted}", err=True
        )
        sys.exit(1)
    click.echo(f"OK {result.name} {result.version}: {result.files} files match the manifest")
    click.echo(f"  manifest.json matches {trusted}")


@release.command("diff")
@click.argument("a", type=SafePath(file_okay=False, exists=True))
@click.argument("b", type=SafePath(file_okay=False, exists=True))
@json_option
def release_diff(a: str, b: str, as_json: bool) -> None:
    """Compare two releases and say which version bump the change needs (major/minor/patch).

    Example: prefkit release diff my-bench/releases/1.0.0 my-bench/releases/1.1.0
    """
    d = diff_releases(Path(a), Path(b))
    if as_json:
        echo_json(d)
        return
    click.echo(
        f"{d['level']}: "
        + {
            "major": "released records changed or were removed",
            "minor": "records were added, none changed",
            "patch": "data files identical (metadata only)",
        }[d["level"]]
    )
    if d["configs"]:
        echo_table(
            [{"config": k, **v} for k, v in d["configs"].items()], ["config", "added", "removed", "changed"]
        )


@release.command("list")
@project_option
@json_option
def release_list(project: Project, as_json: bool) -> None:
    """Releases cut from this project, oldest first, with their data digest and any override.

    Example: prefkit release list --project my-bench
    """
    rows = project.store.releases.recorded()
    if as_json:
        echo_json(rows)
        return
    echo_table(
        [
            {
                "version": r.version,
                "created_at": r.created_at,
                "data_sha256": r.data_sha256[:16],
                "gates": "pass" if r.gates_passed else "overridden",
                "override": r.override_reason,
            }
            for r in rows
        ],
        ["version", "created_at", "data_sha256", "gates", "override"],
    )
