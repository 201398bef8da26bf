"""Croissant 1.0 metadata (``croissant.json``) for a release: one FileObject per JSONL data file (with
its sha256) and one RecordSet per config whose fields are read from those files.

Fields follow the config's Arrow schema: strings, integers, floats and booleans map to schema.org
types, lists to repeated fields, structs to sub-fields. The document validates offline with
``mlcroissant`` (see tests/test_release_formats.py).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any
from urllib.parse import quote

import pyarrow as pa
from prefkit.schemas.curation import canary_sentence
from prefkit.schemas.safe_text import plain_text

#: The JSON-LD ``@context`` of Croissant 1.0 (croissant_context.json beside this module).
CONTEXT = json.loads(
    resources.files(__package__).joinpath("croissant_context.json").read_text(encoding="utf-8")
)

_TYPES = {
    pa.string(): "sc:Text",
    pa.int64(): "sc:Integer",
    pa.float64(): "sc:Float",
    pa.bool_(): "sc:Boolean",
}


def _field(fid: str, name: str, dtype: pa.DataType, sources: list[str], path: str) -> dict[str, Any]:
    out: dict[str, Any] = {"@type": "cr:Field", "@id": fid, "name": name}
    # Lists and nested records (CUPID's checklist and prior interactions) are described, not split
    # into repeated sub-fields: mlcroissant 1.1 cannot read those from JSON Lines, so readers get the
    # column's JSON value as written.
    out["dataType"] = _TYPES.get(dtype, "sc:Text")
    if pa.types.is_list(dtype):
        inner = dtype.value_type
        keys = f" with keys {', '.join(f.name for f in inner)}" if pa.types.is_struct(inner) else ""
        out["description"] = f"JSON array of {'objects' if keys else str(inner)}{keys}."
    elif pa.types.is_struct(dtype):  # a declared kind's answers: one key per question
        out["description"] = f"JSON object with keys {', '.join(f.name for f in dtype)}."
    src = sources[0]
    out["source"] = {
        "fileObject" if "/" in src and src.endswith(".jsonl") else "fileSet": {"@id": src},
        "extract": {"column": path},
    }
    return out


def croissant(
    name: str,
    description: str,
    version: str,
    licence_url: str,
    configs,
    files: dict[str, dict],
    canary: str = "",
) -> dict:
    """The Croissant document. ``files`` maps each data path to ``{sha256, size}``; the ``canary`` GUID
    ends the description, in its sentence."""
    distribution, record_sets = [], []
    for cfg in configs:
        paths = [f"data/{cfg.name}/{split}.jsonl" for split in cfg.splits]
        for p in paths:
            distribution.append(
                {
                    "@type": "cr:FileObject",
                    "@id": p,
                    "name": p,
                    "contentUrl": p,
                    "encodingFormat": "application/jsonlines",
                    "sha256": files[p]["sha256"],
                    "contentSize": f"{files[p]['size']} B",
                }
            )
        # One record set per config and split: a field's source names a single file.
        for split, p in zip(cfg.splits, paths, strict=True):
            rs_id = f"{cfg.name}/{split}"
            record_sets.append(
                {
                    "@type": "cr:RecordSet",
                    "@id": rs_id,
                    "name": rs_id,
                    "description": plain_text(f"{cfg.description} Split: {split}."),
                    "field": [_field(f"{rs_id}/{f.name}", f.name, f.type, [p], f.name) for f in cfg.schema],
                }
            )
    # Operator text (project name, description, licence) is neutralised for pages that render it.
    licence = licence_url if re.fullmatch(r"https?://[^\s<>\"']+", licence_url) else plain_text(licence_url)
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": plain_text(name),
        "description": plain_text(description) + (f" {canary_sentence(canary)}" if canary else ""),
        "version": plain_text(version),
        "license": licence,
        "url": f"https://huggingface.co/datasets/{quote(name, safe='-._~')}",
        "citeAs": plain_text(f"{name} {version}, built with prefkit."),
        "distribution": distribution,
        "recordSet": record_sets,
    }
