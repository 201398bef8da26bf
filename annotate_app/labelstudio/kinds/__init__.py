"""The Label Studio configs of the built-in task kinds, one module each (named like the kind);
importing this package registers them (``register_ls``)."""

from importlib import import_module

from prefkit.curation.annotation.kinds import BUILT_IN

for _name in BUILT_IN:
    import_module(f"{__name__}.{_name}")
