"""Memory extraction from real dialogues (two LLM stages) and its selection rules."""
