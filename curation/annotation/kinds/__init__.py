"""The built-in task kinds, one module each; importing this package registers them. :data:`BUILT_IN` is
their order (the order of the CLI's choices and the app's menus). Each module holds everything about
its kind: payload and label schemas, agreement fields and units, consensus assembly, known answers,
and its default guidelines (the ``.md`` file of the same name beside it). The registry
(:mod:`prefkit.curation.annotation.task_kinds`) loads this package on first use."""

from prefkit.curation.annotation.kinds import (  # noqa: F401 - they register
    memory_verify,
    preference_expressed,
    preference_match,
    task_qc,
)

BUILT_IN = ("preference_expressed", "preference_match", "memory_verify", "task_qc")
