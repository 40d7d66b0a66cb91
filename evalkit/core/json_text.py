"""JSON text for the large files evalkit writes (run reports, recordings, saved baselines), fast.

`json.dumps` with `indent` runs its pure-Python encoder: for a report of 40,000 tests that is over a second. Its C
encoder writes compact text five times faster, and `msgspec.json.format` indents that text, copying every number
and string token as it is, so the result is the same text byte for byte (tests/core/test_json_text.py compares them).
Where msgspec cannot re-read the compact text (a lone surrogate written as an escape) json's own indenting
encoder writes it, as before.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

__all__ = ["compact_json", "indented_json", "json_value"]


def compact_json(data: Any, *, ensure_ascii: bool = False) -> str:
    """`data` as JSON text without whitespace (json's C encoder); a non-finite number is refused (ValueError)."""
    return json.dumps(data, ensure_ascii=ensure_ascii, allow_nan=False, separators=(",", ":"))


def indented_json(data: Any, indent: int = 1, *, ensure_ascii: bool = False, compact: str | None = None) -> str:
    """`json.dumps(data, indent=indent, ensure_ascii=ensure_ascii, allow_nan=False)`, the same text, sooner.
    `compact` is compact_json(data) with the same `ensure_ascii`, where the caller has it already."""
    text = compact_json(data, ensure_ascii=ensure_ascii) if compact is None else compact
    try:
        formatted = msgspec.json.format(text.encode("utf-8", "surrogatepass"), indent=indent)
        return formatted.decode("utf-8", "surrogatepass")
    except (msgspec.DecodeError, UnicodeError):
        return json.dumps(data, indent=indent, ensure_ascii=ensure_ascii, allow_nan=False)


def json_value(text: str) -> Any:
    """The value that JSON text written by compact_json or json.dumps holds, as json.loads reads it (msgspec reads
    it sooner; json where msgspec refuses what json wrote: a lone surrogate)."""
    try:
        return msgspec.json.decode(text.encode("utf-8", "surrogatepass"))
    except (msgspec.DecodeError, UnicodeError):
        return json.loads(text)
