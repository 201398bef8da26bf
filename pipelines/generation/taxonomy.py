"""The taxonomy the generation pipeline draws from: context-factor types, preference types grouped
in families, and task types.

The default (``taxonomy.json`` beside this module) is CUPID's: 8 factor types, 16 preference types
in the Style / Content / Harmless families, 12 task types, so generated distributions compare with
the published ones. A project replaces it with ``[generation] taxonomy = "my-taxonomy.json"`` (a
path relative to the project) in the same JSON shape. Matching is case-insensitive; what is stored
is the taxonomy's own spelling. This module reads files and never writes anything.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from prefkit.schemas.common import Contract, PrefkitError, validation_line
from pydantic import Field, ValidationError, model_validator

DEFAULT_PATH = Path(__file__).with_name("taxonomy.json")


class TaxonomyError(PrefkitError):
    """A taxonomy file is missing or not in the expected shape."""


class Taxonomy(Contract):
    """Factor, preference and task types a generation run may use."""

    name: str = Field(description="What the taxonomy is, e.g. 'CUPID (Kim et al., COLM 2025)'.")
    source: str = Field(default="", description="Where it comes from.")
    factor_types: list[str] = Field(min_length=1, description="Context-factor types.")
    preference_types: dict[str, list[str]] = Field(
        min_length=1, description="Preference types per family (family name -> its types)."
    )
    task_types: list[str] = Field(min_length=1, description="Assistant task types a factor comes up in.")

    @model_validator(mode="after")
    def _distinct(self) -> Taxonomy:
        every = [t.casefold() for types in self.preference_types.values() for t in types]
        if len(set(every)) != len(every):
            raise ValueError("a preference type appears in two families (or twice in one)")
        for name, values in (("factor_types", self.factor_types), ("task_types", self.task_types)):
            if len({v.casefold() for v in values}) != len(values):
                raise ValueError(f"{name} has duplicates")
        return self

    def factor_type(self, value: str) -> str | None:
        """The taxonomy's spelling of factor type ``value``, or ``None`` when it is not one."""
        return _find(value, self.factor_types)

    def task_type(self, value: str) -> str | None:
        return _find(value, self.task_types)

    def family(self, value: str) -> str | None:
        return _find(value, list(self.preference_types))

    def preference_type(self, family: str, value: str) -> str | None:
        """The spelling of ``value`` within ``family``, or ``None`` when the family has no such type."""
        fam = self.family(family)
        return None if fam is None else _find(value, self.preference_types[fam])

    @property
    def counts(self) -> dict[str, int]:
        return {
            "factor_types": len(self.factor_types),
            "preference_types": sum(len(v) for v in self.preference_types.values()),
            "families": len(self.preference_types),
            "task_types": len(self.task_types),
        }


def _find(value: str, options: list[str]) -> str | None:
    key = value.strip().casefold()
    return next((o for o in options if o.casefold() == key), None)


@cache
def _load(path: str, stamp: tuple[int, int]) -> Taxonomy:  # stamp: an edited file is read again
    p = Path(path)
    try:
        return Taxonomy.model_validate(json.loads(p.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise TaxonomyError(f"{p}: taxonomy file not found") from None
    except json.JSONDecodeError as exc:
        raise TaxonomyError(f"{p}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except ValidationError as exc:
        raise TaxonomyError(f"{p}: {validation_line(exc, root='<file>')}") from None


def load_taxonomy(path: Path | str | None = None) -> Taxonomy:
    """The taxonomy at ``path``; CUPID's when ``path`` is ``None``."""
    p = Path(path).resolve() if path else DEFAULT_PATH
    try:
        st = p.stat()
    except FileNotFoundError:
        raise TaxonomyError(f"{p}: taxonomy file not found") from None
    return _load(str(p), (st.st_mtime_ns, st.st_size))
