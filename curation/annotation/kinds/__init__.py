"""The built-in task kinds: a declaration (``<kind>.toml``) with its hooks (``<kind>.py``), or a Python
kind (one module), each with its default guidelines beside it (``<kind>.md``). Importing a module
registers nothing: pyproject.toml's ``prefkit.task_kinds`` entry points name them, and the registry
(:mod:`prefkit.curation.annotation.task_kinds`) loads them from there on first use."""
