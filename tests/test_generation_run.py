"""A full offline run into a project, checked by reading the store back."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from prefkit.curation.project import Project
from prefkit.exports.cupid import CUPID_COLUMNS, export_cupid
from prefkit.pipelines.generation.factors import validate_factors
from prefkit.pipelines.generation.plan import PlanShape, validate_pattern
from prefkit.pipelines.generation.run import GenerationError, generation_settings, run_generation
from prefkit.pipelines.llm import LLMLayer
from prefkit.schemas.cupid import BenchmarkInstance
from sqlalchemy import select


def generate(project: Project, **overrides):
    cfg = generation_settings(project.config.generation, **overrides)
    with LLMLayer(
        project.store, llm_config=project.config.llm, backend="offline", seed=cfg.seed, progress=False
    ) as layer:
        return run_generation(project.store, layer, cfg)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    project = Project.init(tmp_path_factory.mktemp("gen") / "proj")
    generate(project, personas=4, seed=0)
    yield project
    project.close()


def test_every_stage_wrote_its_rows(generated):
    status = generated.store.status()
    assert (status["personas"], status["context_factors"], status["sessions"], status["instances"]) == (
        4,
        32,
        52,
        12,
    )
    assert status["failures"] == 0 and generated.store.generation.dropped_personas() == {}


def test_factors_and_plans_read_back_valid(generated):
    from prefkit.pipelines.generation.drafts import FactorsDraft

    personas = generated.store.generation.personas()
    assert personas
    for persona in personas:
        factors = generated.store.generation.factors(persona.persona_id)
        assert factors, persona.persona_id
        validate_factors(FactorsDraft(factors=[f.model_dump(exclude={"factor_id"}) for f in factors]), 8)
        validate_pattern(generated.store.generation.plan(persona.persona_id), PlanShape(), factors)


def test_sessions_store_turns_scores_and_satisfaction(generated):
    store = generated.store
    sessions = store.content.sessions()
    assert sessions
    for session in sessions:
        turns, scores = session.turns, store.generation.turn_scores(session.session_id)
        assert [t.role for t in turns] == ["user", "assistant"] * (len(turns) // 2) + ["user"] * (
            len(turns) % 2
        )
        if session.index == 13:
            plan = store.generation.plan(session.persona_id)
            assert [t.content for t in turns] == [plan.slots[-1].opening_request] and not session.satisfied
            continue
        assert len(scores) == len(turns) // 2 and all(len(s) == len(session.checklist) for s in scores)
        assert all(1 <= v <= 10 for s in scores for v in s)
        assert session.satisfied == all(v >= 8 for v in scores[-1])
        assert all(not all(v >= 8 for v in s) for s in scores[:-1])  # it ended at the first all-met reply


def test_rows_point_at_offline_provenance(generated):
    store = generated.store
    prov = store.t["provenance"]
    for table in ("personas", "context_factors", "session_plans", "sessions", "instances", "checklists"):
        t = store.t[table]
        with store.read() as conn:
            flags = (
                conn.execute(select(prov.c.offline).join(t, t.c.provenance_id == prov.c.provenance_id))
                .scalars()
                .all()
            )
        assert flags and all(flags), table
        assert len(flags) == store.count(table)


def test_export_is_exact_cupid_rows(generated, tmp_path):
    assert export_cupid(generated.store, tmp_path / "out.jsonl") == 12
    export_cupid(generated.store, tmp_path / "out.parquet")
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(tuple(r) == CUPID_COLUMNS for r in rows)
    assert [BenchmarkInstance.model_validate(r).model_dump(mode="json") for r in rows] == rows
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == rows
    for pid in {r["persona_id"] for r in rows}:
        mine = {r["instance_type"]: r for r in rows if r["persona_id"] == pid}
        assert set(mine) == {"consistent", "contrastive", "changing"}
        assert len({r["current_request"] for r in mine.values()}) == 1
        dialogues = {
            k: [json.dumps(p, sort_keys=True) for p in r["prior_interactions"]] for k, r in mine.items()
        }
        assert all(len(d) == 8 for d in dialogues.values())
        assert (
            len(set(dialogues["consistent"]) & set(dialogues["contrastive"]) & set(dialogues["changing"]))
            == 6
        )


def test_rerun_adds_nothing_and_calls_nothing(generated):
    before = (generated.store.status(), generated.store.count("llm_cache"))
    reports = generate(generated, personas=4, seed=0)
    assert reports and all(r.written == 0 for r in reports)
    assert (generated.store.status(), generated.store.count("llm_cache")) == before
    skipped, held = {r.stage: r.skipped for r in reports}, before[0]
    assert skipped == {  # every stage names what it found stored (the stage table's "skipped")
        "personas": 4,
        "factors": 4,
        "sessions": 4,
        "checklists": generated.store.count("checklists"),
        "dialogues": held["dialogues"],
        "instances": held["instances"],
    }


def test_a_larger_batch_extends_the_project(tmp_path):
    project = Project.init(tmp_path / "p")
    generate(project, personas=1, seed=3)
    first = project.store.generation.personas()
    reports = generate(project, personas=2, seed=3)
    assert [r.written for r in reports] == [1, 1, 1, 9, 13, 3]
    assert project.store.generation.personas()[0] == first[0] and project.store.count("instances") == 6
    project.close()


def test_seed_personas_carry_their_licence(tmp_path):
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text('{"persona": "A beekeeper who sells honey at markets in Wales."}\n', encoding="utf-8")
    project = Project.init(tmp_path / "p")
    with pytest.raises(GenerationError, match="--seed-licence is required"):
        generate(project, personas=1, seed_personas=seeds)
    generate(project, personas=1, seed_personas=seeds, seed_licence="CC BY-NC-SA 4.0")
    persona = project.store.generation.personas()[0]
    assert persona.seed_licence == "CC BY-NC-SA 4.0" and "beekeeper" in persona.text
    prov = project.store.t["provenance"]
    with project.store.read() as conn:
        records = (
            conn.execute(select(prov.c.record_json).where(prov.c.source == "generate.personas"))
            .scalars()
            .all()
        )
    assert len(records) == 1 and json.loads(records[0])["licence"] == "CC BY-NC-SA 4.0"
    project.close()


def test_same_seed_gives_byte_identical_exports(tmp_path):
    outputs = []
    for name in ("a", "b"):
        project = Project.init(tmp_path / name)
        generate(project, personas=1, seed=9)
        export_cupid(project.store, tmp_path / f"{name}.jsonl")
        outputs.append((tmp_path / f"{name}.jsonl").read_bytes())
        project.close()
    assert outputs[0] == outputs[1] and len(outputs[0]) > 1000
