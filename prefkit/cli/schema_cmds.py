"""``prefkit schema``: JSON Schemas of prefkit's record types."""

from __future__ import annotations

from pathlib import Path

import click
from prefkit.cli.types import SafePath
from prefkit.exports.writers import write_json
from prefkit.schemas import ALL_SCHEMAS


@click.group()
def schema() -> None:
    """JSON Schemas of prefkit's record types."""


@schema.command("export")
@click.argument("directory", type=SafePath(file_okay=False))
def schema_export(directory: str) -> None:
    """Write the JSON Schema of every record type to DIRECTORY/<Name>.schema.json.

    Example: prefkit schema export schemas-out/
    """
    out = Path(directory)
    for name, model in ALL_SCHEMAS.items():
        schema_doc = model.model_json_schema()
        schema_doc["$id"] = f"https://prefkit.dev/schemas/{name}-{model.SCHEMA_VERSION}.json"
        write_json(out / f"{name}.schema.json", schema_doc)
    click.echo(f"wrote {len(ALL_SCHEMAS)} schemas to {out}")
