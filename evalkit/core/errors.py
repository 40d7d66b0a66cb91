"""One error hierarchy: everything evalkit refuses is an EvalkitError, printed as one line."""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from evalkit.core.untrusted import terminal

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

__all__ = ["EvalkitError", "ConfigError", "InputError", "RecordingError", "ProviderError", "OutageError",
           "brief", "describe_validation", "one_line", "unknown_keys"]


class EvalkitError(Exception):
    """A refusal the user can act on. The message is one line: what is wrong, where, what to do."""


class ConfigError(EvalkitError):
    """The composed configuration (or a policy file) is invalid."""


class InputError(EvalkitError):
    """A file given to evalkit (report, dataset, prompt, baseline) cannot be used."""


class RecordingError(InputError):
    """A recording file is missing, malformed or belongs to another eval key."""


class ProviderError(EvalkitError):
    """A live call could not be set up (missing extra, missing credential)."""


class OutageError(EvalkitError):
    """A live run could not be completed because its model server failed (refused or reset connections, name
    resolution, TLS, timeouts, 5xx after retries, authentication): an outage, never a verdict. Its own exit code."""


MAX_MESSAGE_CHARS = 1000
"""The longest error line evalkit prints; longer values are cut with a marker."""


def one_line(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`message` as one line, cut at `limit` characters: line breaks and other control characters from data are
    shown as escapes (`\\n`, `\\x1b`), so no file name or value can forge a line or drive the terminal."""
    return terminal(message.replace("\r\n", "\n"), limit)


def describe_validation(error: ValidationError, model: type[BaseModel], where: str) -> str:
    """Turn a pydantic ValidationError into one line naming the file, the key and the fix.

    Every problem is listed (pydantic collects them all), separated by '; '.
    """
    problems = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"]) or "(top level)"
        if item["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(fields_at(model, item["loc"][:-1])))
            problems.append(f"unknown key '{loc}' (allowed: {allowed})")
        elif item["type"] == "missing":
            problems.append(f"missing key '{loc}'")
        else:
            problems.append(f"'{loc}': {item['msg']} (got {brief(item.get('input'))})")
    return f"{where}: " + "; ".join(problems)


def unknown_keys(prefix: str, unknown: Iterable[str], allowed: Iterable[str]) -> str:
    """The refusal of keys a mapping does not take, worded as describe_validation words a config typo, with the
    closest allowed key of each (a typo is the usual cause): `unknown key 'options.temprature' (did you mean
    'temperature'?; allowed: ...)`, several joined by '; '."""
    names = sorted(set(allowed))
    problems = []
    for name in sorted(unknown):
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean '{close[0]}'?; " if close else ""
        problems.append(f"unknown key '{prefix}{name}' ({hint}allowed: {', '.join(names)})")
    return "; ".join(problems)


def brief(value: Any, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters ending in "...", built in time and memory of the order of `limit`.

    A refused value may be anything a file could hold: a YAML alias bomb is a list whose full repr runs to
    gigabytes, a JSON integer of 5,000 digits has no repr at all. So containers are walked only until the line is
    full, text is cut before it is quoted, and a value of any other kind is named by its type."""
    pieces: list[str] = []
    _brief(value, pieces, [limit + 1], 0)
    text = "".join(pieces)
    return text if len(text) <= limit else text[:max(0, limit - 3)] + "..."


_BRIEF_DEPTH = 20  # a recursive list (`&a [*a]`) is cut here if the line is not full before
_PLAIN = (bool, float, type(None), datetime.date, datetime.datetime, datetime.time)


def _brief(value: Any, pieces: list[str], room: list[int], depth: int) -> None:
    """Append `value`'s repr to `pieces` until `room[0]` characters are spent."""
    if room[0] <= 0:
        return
    if isinstance(value, (str, bytes)):
        piece = repr(value[:room[0]])
    elif isinstance(value, int) and not isinstance(value, bool):
        piece = repr(value) if value.bit_length() < 3 * room[0] else f"<an integer of about " \
            f"{int(value.bit_length() * 0.30103):,} digits>"
    elif isinstance(value, _PLAIN):
        piece = repr(value)
    elif isinstance(value, (dict, list, tuple, set, frozenset)) and depth < _BRIEF_DEPTH:
        _brief_container(value, pieces, room, depth)
        return
    else:
        piece = "..." if depth >= _BRIEF_DEPTH else f"<{type(value).__name__}>"
    pieces.append(piece)
    room[0] -= len(piece)


def _brief_container(value: Any, pieces: list[str], room: list[int], depth: int) -> None:
    opening, closing = ("{", "}") if isinstance(value, (dict, set, frozenset)) else ("(", ")") \
        if isinstance(value, tuple) else ("[", "]")
    pieces.append(opening)
    room[0] -= 1
    for index, item in enumerate(value.items() if isinstance(value, dict) else value):
        if room[0] <= 0:
            return
        if index:
            pieces.append(", ")
            room[0] -= 2
        if isinstance(value, dict):
            _brief(item[0], pieces, room, depth + 1)
            pieces.append(": ")
            room[0] -= 2
            item = item[1]
        _brief(item, pieces, room, depth + 1)
    pieces.append(closing)
    room[0] -= 1


def fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names of the (nested) model found at `loc`, for 'allowed: ...' hints."""
    from pydantic import BaseModel

    current: Any = model
    for part in loc:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(str(part))
        if field is None:
            return []
        current = _model_in(field.annotation)
    current = _model_in(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _model_in(annotation: Any) -> Any:
    """The model inside an optional annotation (`ModelConfig | None` -> ModelConfig); anything else as it is."""
    from pydantic import BaseModel

    for arg in getattr(annotation, "__args__", ()):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return annotation
