"""JSON documents taken apart for the fuzz harnesses (tests/fuzz): every place a value sits, and a copy with the
value at one place replaced, so a structured input is a real file of its kind with one value changed."""

from __future__ import annotations

from typing import Any


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document a value sits (the document itself included; the first 5 items of a list)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:5]):
            found += paths(item, (*prefix, index))
    return found


def replace(document: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of the document with `new` at `path` (the rest shared, never changed)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(document, dict):
        return {**document, head: replace(document[head], rest, new)}
    copy = list(document)
    copy[head] = replace(copy[head], rest, new)
    return copy
