"""CUPID-style benchmark generation: personas, context factors, session plans, checklists, simulated
dialogues and CUPID instances, written into a project store through the LLM layer.

    from prefkit.pipelines.generation.run import generate
    reports = generate(project, backend="offline", personas=4, seed=0)   # [generation] + overrides

See docs/generation.md. Stages never write SQL (they go through ``prefkit.curation.store.generation``).
"""

from __future__ import annotations

from typing import Any

#: The stages in the order they run; the CLI's stage choices come from here.
STAGES = ("personas", "factors", "sessions", "checklists", "dialogues", "instances")

__all__ = ["STAGES", "GenerationConfig", "GenerationError", "StageReport", "estimate_run", "run_generation"]


def __getattr__(name: str) -> Any:
    # The runner pulls in the LLM layer (and the openai client); importing it on first use keeps
    # ``from prefkit.pipelines.generation import STAGES`` cheap for the CLI.
    if name in __all__:
        from prefkit.pipelines.generation import run

        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
