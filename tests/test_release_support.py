"""Builders for crafted projects used by the consensus, gate and release tests (no tests here)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from fixtures_alps import write_packets
from prefkit.curation.annotation.task_kinds import get_kind
from prefkit.curation.store import PreferencePair
from prefkit.schemas import LabelEvent, utcnow
from prefkit.schemas.curation import AnnotationTask, Provenance

PASSWORD = "correct-horse-1"


def alps_subset(dest: Path) -> Path:
    """20 AlpsBench packets written by :mod:`fixtures_alps`: every track and split, quick to import."""
    return write_packets(dest, n=20)


def add_users(store, *names: str, role: str = "annotator") -> None:
    """Add users (with the suite's cheap password hash: tests/conftest.py)."""
    for name in names:
        store.accounts.add_user(name, role, PASSWORD)


def match_tasks(
    store, n: int, offline: bool = False, prefix: str = "pair", overlap: int = 3
) -> list[AnnotationTask]:
    """``n`` preference_match tasks over fresh (checklist item, candidate) pairs, made with ``overlap``."""
    pairs = [
        PreferencePair(
            f"{prefix}{i:03d}",
            f"Does the answer use metric units? ({prefix} {i})",
            f"Prefers metric units when cooking ({i})",
            "test",
        )
        for i in range(n)
    ]
    store.content.add_preference_pairs(
        pairs, Provenance(source="generate.pairs" if offline else "test.pairs", offline=offline)
    )
    tasks = [
        t
        for t in get_kind("preference_match").build_tasks(store, overlap, "b1")
        if t.payload["pair_id"].startswith(prefix)
    ]
    store.labels.add_tasks(tasks)
    return tasks


def label(
    store,
    task_id: str,
    annotator: str,
    values: dict | None = None,
    action: str = "label",
    comment: str | None = None,
    kind: str = "preference_match",
    supersedes: str | None = None,
) -> LabelEvent:
    ev = LabelEvent(
        event_id=uuid.uuid4().hex,
        task_id=task_id,
        kind=kind,
        annotator=annotator,
        action=action,
        values=values or {},
        comment=comment,
        supersedes=supersedes,
        created_at=utcnow(),
    )
    assert store.labels.append_event(ev)
    return ev


def cover(store, task_id: str, **by_annotator: str) -> None:
    """Label a preference_match task: ``cover(store, t, ann1="fully", ann2="partially")``."""
    for who, coverage in by_annotator.items():
        label(store, task_id, who, {"coverage": coverage})


def gold_task(store, answer: str = "fully") -> AnnotationTask:
    task = AnnotationTask(
        task_id="preference_match_gold1",
        kind="preference_match",
        item_ref="pair:gold1",
        payload={
            "pair_id": "gold1",
            "checklist_item": "Is it short?",
            "candidate": "Likes short answers",
            "instance_id": None,
            "origin": "gold",
        },
        batch="b1",
        overlap=3,
        is_gold=True,
        gold_answer={"coverage": answer},
        created_at=utcnow(),
    )
    store.labels.add_tasks([task])
    return task


def cupid_row(i: int, persona: str = "p1") -> dict:
    return {
        "persona_id": persona,
        "instance_type": ("consistent", "contrastive", "changing")[i % 3],
        "current_request": f"Plan a weekend trip number {i}.",
        "current_context_factor": "Travelling with kids",
        "current_contextual_preference": "Prefers short drives with breaks",
        "current_checklist": ["Does the plan keep drives short?", "Does it include breaks?"],
        "prior_interactions": [
            {
                "context_factor": "Travelling with kids",
                "contextual_preference": "Prefers short drives with breaks",
                "dialogue": [
                    {"role": "user", "content": f"Drive {i} was too long for the kids."},
                    {"role": "assistant", "content": "Noted: shorter legs next time."},
                ],
            }
        ],
    }


def import_cupid(project, tmp: Path, n: int, start: int = 0, licence: str = "MIT") -> None:
    from prefkit.pipelines.ingest import cupid

    path = tmp / f"cupid_{start}_{n}.jsonl"
    path.write_text(
        "".join(json.dumps(cupid_row(i)) + "\n" for i in range(start, start + n)), encoding="utf-8"
    )
    project.store.content.import_bundle(cupid.build_bundle(path, licence))


def fast_agreement(store):
    from prefkit.curation.quality.agreement import agreement_rows

    return agreement_rows(store, n_boot=50)


#: The configs of the crafted release: every one but the verified ``cupid`` config, whose sessions
#: these projects never verify (tests of verification build their own projects).
UNVERIFIED_CONFIGS = (
    '["cupid_unverified", "cupid_raw", "alpsbench_*", "labels", "final_labels", "matching", "adjudications"]'
)


def release_configs(project, configs: str = UNVERIFIED_CONFIGS) -> None:
    """Write ``[release] configs = ...`` into the project's prefkit.toml (and forget the cached config)."""
    path = project.root / "prefkit.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("[release]\n", f"[release]\nconfigs = {configs}\n", 1), encoding="utf-8")
    project.__dict__.pop("config", None)


def labelled_project(project, tmp: Path) -> dict:
    """A small project that passes every gate: 3 annotators agreeing on 18 tasks, one majority task
    (``tasks[18]``), one tie adjudicated (``tasks[19]``), a gold task answered right, 5 CUPID instances
    (released unverified: the release holds every config but ``cupid``)."""
    from prefkit.curation.quality.consensus import adjudicate

    release_configs(project)
    store = project.store
    add_users(store, "ann1", "ann2", "ann3")
    add_users(store, "lead", role="maintainer")
    tasks = match_tasks(store, 20)
    for i, t in enumerate(tasks[:18]):
        lv = ("fully", "partially", "not_covered")[i % 3]
        cover(store, t.task_id, ann1=lv, ann2=lv, ann3=lv)
    cover(store, tasks[18].task_id, ann1="fully", ann2="fully", ann3="partially")
    cover(store, tasks[19].task_id, ann1="fully", ann2="partially", ann3="not_covered")
    adjudicate(store, tasks[19].task_id, "lead", {"coverage": "partially"}, "checklist asks for units only")
    gold = gold_task(store)
    cover(store, gold.task_id, ann1="fully", ann2="fully", ann3="fully")
    import_cupid(project, tmp, 5)
    return {"tasks": tasks, "gold": gold}


def plan(store, config) -> list:
    """The release configs ``run_gates`` checks, as ``prefkit.exports.release.plan_configs`` plans them."""
    from prefkit.exports.release_data import build_configs

    return build_configs(store, config.release.configs, config.release.alpsbench_reference)


def cut(project, version: str, override: str | None = None):
    """``cut_release`` with the gates run on a quick agreement (50 bootstrap draws)."""
    from prefkit.curation.quality.gates import run_gates
    from prefkit.exports.release import cut_release

    agreement = fast_agreement(project.store)
    gates = run_gates(
        project.store,
        project.config.release,
        plan(project.store, project.config),
        agreement_rows=lambda _store: agreement,
    )
    return cut_release(project, version, override=override, gates=gates, agreement=agreement)


def data_bytes(release_dir: Path) -> dict[str, bytes]:
    """Every file under a release's ``data/`` and ``parquet/``, by relative path."""
    return {
        p.relative_to(release_dir).as_posix(): p.read_bytes()
        for sub in ("data", "parquet")
        for p in sorted((release_dir / sub).rglob("*"))
        if p.is_file()
    }


def with_release(config, **changes):
    """``config`` (a ProjectConfig) with ``[release]`` keys changed, validated like prefkit.toml."""
    release = type(config.release).model_validate({**config.release.model_dump(), **changes})
    return config.model_copy(update={"release": release})


def hub_offline(monkeypatch):
    """The ``datasets`` library with the Hub offline (any network call fails), for loading a release."""
    for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.setenv(var, "1")
    import datasets
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return datasets


def croissant_fields(release: Path, name: str) -> dict[str, dict]:
    """The fields of ``name``'s test record set in a release's croissant.json (mlcroissant must load it)."""
    import mlcroissant as mlc

    mlc.Dataset(jsonld=str(release / "croissant.json"))  # raises on any validation error
    doc = json.loads((release / "croissant.json").read_text())
    return {f["name"]: f for r in doc["recordSet"] if r["@id"] == f"{name}/test" for f in r["field"]}


def duckdb_rows(release: Path, sql: str) -> list[tuple]:
    """``sql`` over a release's DuckDB file (version 0.1.0), read only."""
    import duckdb

    con = duckdb.connect(str(release / "prefkit-0.1.0.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
