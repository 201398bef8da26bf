"""The built-in task kinds, one module each; importing this package registers them in the order of
:data:`BUILT_IN` (the order of the CLI's choices and the app's menus). Each module holds everything
about its kind: payload and label schemas, agreement fields and units, consensus assembly, known
answers, and its default guidelines (the ``.md`` file of the same name beside it)."""

from importlib import import_module

BUILT_IN = ("preference_expressed", "preference_match", "memory_verify", "task_qc")

for _name in BUILT_IN:
    import_module(f"{__name__}.{_name}")
