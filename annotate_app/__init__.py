"""annotate_app."""

from importlib import resources


def asset(name: str) -> str:
    """A script or stylesheet the app puts into its pages: a file beside the module that uses it."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
