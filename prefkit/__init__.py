"""prefkit: human-verified personalization benchmarks for LLMs."""

__version__ = "0.1.0"
