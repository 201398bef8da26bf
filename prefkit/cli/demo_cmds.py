"""``prefkit demo``: build the demo project and serve the annotation app on it; ``prefkit examples``."""

from __future__ import annotations

from pathlib import Path

import click

from prefkit.cli.annotate_cmds import annotate_serve
from prefkit.cli.types import ANY_INT, PORT, POSITIVE_INT, SafePath
from prefkit.demo import build_demo
from prefkit.examples import copy_examples


@click.command()
@click.option(
    "--project",
    "-p",
    "path",
    default="demo-project",
    show_default=True,
    type=SafePath(file_okay=False),
    help="Where to create (or reuse) the demo project.",
)
@click.option(
    "--personas", type=POSITIVE_INT, default=3, show_default=True, help="Personas to generate offline."
)
@click.option("--seed", type=ANY_INT, default=0, show_default=True, help="Seed of the offline generation.")
@click.option("--port", type=PORT, default=8501, show_default=True, help="Port of the annotation app.")
@click.option("--no-serve", is_flag=True, help="Build the project only; do not start the app.")
def demo(path: str, personas: int, seed: int, port: int, no_serve: bool) -> None:
    """Build a demo project offline (no API key) and serve the annotation app on it.

    Example: prefkit demo --project demo-project --port 8501
    """
    project = build_demo(path, personas=personas, seed=seed, log=lambda m: click.echo(m, err=True))
    root = project.root
    project.close()
    if no_serve:
        return

    click.get_current_context().invoke(annotate_serve, project_path=str(root), port=port, host="127.0.0.1")


#: What each example input is, by its top-level name in ``pipelines/examples/``.
EXAMPLES = {
    "alpsbench": "{n} AlpsBench packets (prefkit's own content)",
    "wildchat": "{n} WildChat-format file (synthetic)",
    "labels.jsonl": "the labels of the README's tour",
    "agreement": "{n} files of docs/agreement.md (pairs, human and judge labels)",
    "release": "{n} files of docs/release.md (CUPID rows, pairs, labels)",
}


@click.command()
@click.argument("dest", type=SafePath(file_okay=False), default="examples")
def examples(dest: str) -> None:
    """Copy the example inputs into DEST (default: examples): AlpsBench packets (alpsbench/), a small
    synthetic WildChat-format file (wildchat/sample.jsonl), the labels of the README's tour
    (labels.jsonl) and the inputs of docs/agreement.md (agreement/) and docs/release.md (release/).
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
