"""Strict JSON and YAML for evalkit's inputs: what the parsers would silently accept is refused in one line.

Python's json keeps the last of two equal keys, reads `NaN` and `Infinity` (which JSON does not have), and
raises ValueError on an integer over 4,300 digits or RecursionError on deep nesting; PyYAML keeps the last
duplicate key too. `parse_json` and `parse_yaml` refuse all of these with an InputError naming the file, and
refuse values nested deeper than MAX_DEPTH, so nothing downstream can recurse out of its stack.
"""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn

import yaml

from evalkit.core.errors import InputError

__all__ = ["MAX_DEPTH", "UniqueKeyLoader", "parse_json", "parse_yaml", "unique_object"]

MAX_DEPTH = 100
"""How deeply objects and lists may nest in an input file (evalkit's own files nest fewer than ten levels)."""


class _Refusal(ValueError):
    """Raised from inside a parser's hook; turned into an InputError naming the file."""


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: an object, refusing a key given twice (json alone keeps the last)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        twice = next(name for name, _ in pairs if name in seen or seen.add(name))  # type: ignore[func-returns-value]
        raise _Refusal(f"key {_short(twice)} appears twice in one JSON object; each key may appear once")
    return data


def _constant(name: str) -> NoReturn:
    raise _Refusal(f"{name} is not a JSON number; write a finite number, or null for a value that is missing")


def parse_json(text: str | bytes, where: str, what: str = "file") -> Any:
    """Parse JSON strictly; every refusal names `where` (the file) and says what to fix."""
    try:
        data = json.loads(text, object_pairs_hook=unique_object, parse_constant=_constant)
    except _Refusal as refusal:
        raise InputError(f"{where}: {refusal}") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{where}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
                         "is the file truncated?") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{where}: the {what} is not UTF-8 text ({error.reason}); save it as UTF-8") from None
    except RecursionError:
        raise InputError(_too_deep(where, what)) from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise InputError(f"{where}: the {what} holds a number too long to read ({_short(str(error), 60, quote=False)});"
                         " no value evalkit reads is that long") from None
    check_values(data, where, what)
    return data


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that gives a key twice (PyYAML keeps the last silently)."""


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    data: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            if key in data:
                raise _Refusal(f"key {_short(key)} appears twice in one mapping (line {key_node.start_mark.line + 1});"
                               " each key may appear once")
        except TypeError:  # an unhashable key (a list as a key): let the safe loader word it
            raise yaml.constructor.ConstructorError(None, None, "found an unhashable key",
                                                    key_node.start_mark) from None
        data[key] = loader.construct_object(value_node, deep=True)
    return data


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(text: str, where: str, what: str = "file") -> Any:
    """Parse YAML strictly (the safe loader, unique keys, finite numbers, bounded nesting)."""
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a subclass of SafeLoader
    except _Refusal as refusal:
        raise InputError(f"{where}: {refusal}") from None
    except yaml.YAMLError as error:
        first = " ".join(str(error).split())
        if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
            first = f"{error.problem or error.context} (line {error.problem_mark.line + 1})"
        raise InputError(f"{where}: not valid YAML: {_short(first, quote=False)}") from None
    except RecursionError:
        raise InputError(_too_deep(where, what)) from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise InputError(f"{where}: the {what} holds a number too long to read ({_short(str(error), 60, quote=False)});"
                         " no value evalkit reads is that long") from None
    check_values(data, where, what)
    return data


def check_values(data: Any, where: str, what: str = "file") -> None:
    """Refuse nesting deeper than MAX_DEPTH and non-finite numbers (YAML's `.nan`, `.inf`), without recursion."""
    level: list[Any] = [data]
    depth = 0
    seen: set[int] = set()  # YAML aliases share containers: a "billion laughs" file is visited once per object
    while level:  # breadth first, a level at a time: no recursion and no per-value bookkeeping
        if depth > MAX_DEPTH:
            raise InputError(_too_deep(where, what))
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is dict:
                below.extend(value.values())
            elif kind is list:
                below.extend(value)
            elif kind is float and not math.isfinite(value):
                raise InputError(f"{where}: {value} is not a finite number; "
                                 "write a finite number, or null for a value that is missing")
        level = [value for value in below if type(value) in _WALKED
                 and (type(value) is float or not (id(value) in seen or seen.add(id(value))))]  # type: ignore[func-returns-value]
        depth += 1


_WALKED = frozenset({dict, list, float})


def _too_deep(where: str, what: str) -> str:
    return (f"{where}: the {what} nests objects or lists more than {MAX_DEPTH} levels deep; "
            "evalkit's files never do: check that it is the right file")


def _short(value: Any, limit: int = 80, *, quote: bool = True) -> str:
    text = repr(value) if quote else str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
