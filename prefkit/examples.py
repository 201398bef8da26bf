"""``prefkit examples``: the bundled example inputs (AlpsBench packets, a WildChat-format file, the
tour's labels, the inputs of docs/agreement.md and docs/release.md), copied where a user can run the
docs' commands on them. Kept apart from :mod:`prefkit.demo` so copying files imports no pipeline."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from prefkit.schemas.common import PrefkitError


def copy_examples(dest: str | Path) -> list[Path]:
    """Copy the bundled example inputs (AlpsBench packets, the tour's labels file) into ``dest``.

    Refuses to overwrite a file that differs, so a user's edits are never lost; returns the files written
    or already identical."""
    src = Path(str(resources.files("prefkit.pipelines").joinpath("examples")))
    dest = Path(dest)
    files = sorted(
        p for p in src.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".toml", ".md")
    )
    for f in files:
        target = dest / f.relative_to(src)
        if target.exists() and target.read_bytes() != f.read_bytes():
            raise PrefkitError(
                f"{target} exists and differs from the example; remove it or pick another DEST"
            )
    out = []
    for f in files:
        target = dest / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.read_bytes())
        out.append(target)
    return out
