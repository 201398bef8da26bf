"""``prefkit examples``: copy the example inputs out of the package."""

from __future__ import annotations

from pathlib import Path

import click
from prefkit.cli.types import SafePath
from prefkit.examples import copy_examples

EXAMPLES = {
    "alpsbench": "{n} AlpsBench packets (prefkit's own content)",
    "wildchat": "{n} WildChat-format file (synthetic)",
    "labels.jsonl": "the labels of the README's tour",
    "agreement": "{n} files of docs/agreement.md (pairs, human and judge labels)",
    "release": "{n} files of docs/release.md (CUPID rows, pairs, labels)",
    "memory_qa": "{n} files of docs/eval.md (a declared kind, its items, labels, predictions)",
}


@click.command()
@click.argument("dest", type=SafePath(file_okay=False), default="examples")
def examples(dest: str) -> None:
    """Copy the example inputs into DEST (default: examples): AlpsBench packets (alpsbench/), a small
    synthetic WildChat-format file (wildchat/sample.jsonl), the labels of the README's tour
    (labels.jsonl), the inputs of docs/agreement.md (agreement/), docs/release.md (release/) and
    docs/eval.md's own benchmark (memory_qa/).
    Never overwrites a file that differs.

    Example: prefkit examples examples && prefkit import alpsbench examples/alpsbench
    """
    files = copy_examples(dest)
    root = Path(dest)
    top: dict[str, int] = {}
    for f in files:
        name = f.relative_to(root).parts[0]
        top[name] = top.get(name, 0) + 1
    click.echo(f"copied {len(files)} example files to {dest}")
    for name, n in sorted(top.items()):
        what = EXAMPLES.get(name, "")
        shown = f"{name}/" if (root / name).is_dir() else name
        click.echo(f"  {shown:<14}{what.format(n=n)}".rstrip())
