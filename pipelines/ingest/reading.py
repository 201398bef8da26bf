"""The reading layer, as the importers in ``pipelines/`` know it: see :mod:`schemas.reading`.

It lives in ``schemas/`` so ``curation/`` (label, pair and gold files) reads files through the same rules
without importing ``pipelines/``; this module re-exports it for the importers.
"""

from schemas.reading import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    InputError,
    check_size,
    check_unique,
    iter_jsonl,
    iter_rows,
    loads,
    no_records,
    parse_timestamp,
    read_json,
    read_jsonl,
    read_text,
    sha256_file,
    validate_row,
    validation_message,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "InputError",
    "check_size",
    "check_unique",
    "iter_jsonl",
    "iter_rows",
    "loads",
    "no_records",
    "parse_timestamp",
    "read_json",
    "read_jsonl",
    "read_text",
    "sha256_file",
    "validate_row",
    "validation_message",
]
