"""Shared fixtures: every test gets its own project directory; real data comes from ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("PREFKIT_SHARED_DATA", ROOT.parent / "shared" / "data"))
ALPS_PACKETS = SHARED_DATA / "alpsbench" / "annotation_packets_sample"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip locally when a resource is absent; in CI the resource is guaranteed, so fail instead."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI must provide this: {reason}")
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """No test reads the user's project, endpoint or key by accident."""
    monkeypatch.delenv("PREFKIT_PROJECT", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture
def project(tmp_path):
    """A fresh, initialised project; closed after the test."""
    from curation.project import Project

    p = Project.init(tmp_path / "proj", name="test-proj")
    yield p
    p.close()


@pytest.fixture(scope="session")
def alps_packets() -> Path:
    require(
        ALPS_PACKETS.is_dir(), f"AlpsBench sample packets not found at {ALPS_PACKETS} (../shared is absent)"
    )
    return ALPS_PACKETS


@pytest.fixture(scope="session")
def alps_project(tmp_path_factory, alps_packets):
    """One project with all 400 sample packets imported, shared read-only across a session."""
    from curation.project import Project
    from pipelines.ingest import alpsbench

    p = Project.init(tmp_path_factory.mktemp("alps") / "proj", name="alps")
    p.store.import_bundle(alpsbench.build_bundle(alps_packets))
    yield p
    p.close()
