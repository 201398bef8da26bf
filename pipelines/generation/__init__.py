"""CUPID-style benchmark generation: personas, context factors, session plans, checklists, simulated
dialogues and CUPID instances, written into a project store through the LLM layer.

    from pipelines.generation import GenerationConfig, run_generation
    cfg = GenerationConfig.from_config(project.config["generation"], personas=4, seed=0)
    with LLMLayer(project.store, llm_config=project.config["llm"], backend="offline", seed=0) as layer:
        reports = run_generation(project.store, layer, cfg)

See docs/generation.md. Stages never write SQL (they go through ``curation.store.generation``).
"""

from pipelines.generation.run import (
    STAGES,
    GenerationConfig,
    GenerationError,
    StageReport,
    estimate_run,
    run_generation,
)

__all__ = ["STAGES", "GenerationConfig", "GenerationError", "StageReport", "estimate_run", "run_generation"]
