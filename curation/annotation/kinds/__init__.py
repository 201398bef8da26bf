"""The built-in task kinds, one module each. Each module holds everything about its kind: payload and
label schemas, agreement fields and units, consensus assembly, known answers, its default guidelines
(the ``.md`` file of the same name beside it) and the references to its app form and Label Studio
config. Importing a module registers nothing: pyproject.toml declares each kind, one line in the
``prefkit.task_kinds`` entry point group as any distribution declares its kinds, and the registry
(:mod:`prefkit.curation.annotation.task_kinds`) loads them from there on first use, in that order."""
