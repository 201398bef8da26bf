"""Suggestions for annotators (``prefkit suggest``): per task kind, made through the LLM layer (and,
for memories, the programmatic evidence check), stored as suggestion records, never as labels.
The app and Label Studio show them on the assisted arm only (``prefkit.curation.annotation.suggestions``).
See docs/assist.md."""

from prefkit.pipelines.suggestions.kinds import Suggester
from prefkit.pipelines.suggestions.run import SuggestError, SuggestReport, estimate, make_run, suggest

__all__ = [
    "SuggestError",
    "SuggestReport",
    "Suggester",
    "estimate",
    "make_run",
    "suggest",
]
