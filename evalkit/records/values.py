"""The value types the records share: JSON that a record keeps without modelling it field by field.

A record types what it reads (evalkit.records); where a part of a file is data another module defines (the gate's
figures, a provider's description of itself, a setting's value), the record holds it as JSON, never as `Any`: a
reader knows it is plain data, and a writer cannot put an object there that the file could not hold.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, JsonValue

__all__ = ["Json"]


def _plain(value: object) -> object:
    """`value` with its tuples as lists: the code keeps pairs and sequences as tuples; JSON has only arrays."""
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


Json = Annotated[JsonValue, BeforeValidator(_plain)]
"""A JSON value; tuples are taken as arrays."""
