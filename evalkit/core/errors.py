"""One error hierarchy: everything evalkit refuses is an EvalkitError, printed as one line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit.core.untrusted import terminal

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

__all__ = ["EvalkitError", "ConfigError", "InputError", "RecordingError", "ProviderError", "OutageError",
           "describe_validation", "one_line"]


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
            got = repr(item.get("input"))
            problems.append(f"'{loc}': {item['msg']} (got {got if len(got) <= 80 else got[:77] + '...'})")
    return f"{where}: " + "; ".join(problems)


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
