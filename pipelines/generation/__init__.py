"""CUPID-style benchmark generation: personas, context factors, session plans, checklists, simulated
dialogues and CUPID instances, written into a project store through the LLM layer.

    from prefkit.pipelines.generation.run import generate
    reports = generate(project, backend="offline", personas=4, seed=0)   # [generation] + overrides

The runner (``run``) pulls in the LLM layer; this package itself holds only the stage names, so the
CLI reads them without importing the runner. See docs/generation.md. Stages never write SQL (they go
through ``prefkit.curation.store.generation``).
"""

#: The stages in the order they run; the CLI's stage choices come from here.
STAGES = ("personas", "factors", "sessions", "checklists", "dialogues", "instances")
