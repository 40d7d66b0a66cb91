"""What the endpoint's wire formats share: the refusal a request body earns, and the stop words they speak.

A candidate program is untrusted input: anything its SDK sends that evalkit cannot read as a call is a `WireError`,
answered with HTTP 400 in the format the program spoke, never a crash of the run.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from evalkit.records.call import Reply

__all__ = ["WireError", "described", "finish_kind", "field", "object_at"]


class WireError(ValueError):
    """A request body the endpoint cannot read as a call; the message names the field."""


def described(error: ValidationError) -> str:
    """A pydantic error as one line: the first problem's place and message."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "the request"
    return f"{where}: {first.get('msg', 'invalid')}"


def object_at(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireError(f"{where}: expected a JSON object")
    return value


def field(data: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str, default: Any = None) -> Any:
    """`data[name]` when it is of `kind` (absent: `default`); anything else is a WireError naming the field."""
    if name not in data or data[name] is None:
        return default
    value = data[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # True is an int
        raise WireError(f"{where}.{name}: expected {' or '.join(k.__name__ for k in kinds)}")
    return value


_TRUNCATED = frozenset({"length", "max_tokens", "MAX_TOKENS", "max_output_tokens"})


def finish_kind(reply: Reply) -> str:
    """How the reply ended, in the words both wire formats map from: `tool_calls`, `length` or `stop`. A recorded
    stop reason is the provider's own word (OpenAI's `length`, Anthropic's `max_tokens`, Gemini's `MAX_TOKENS`)."""
    if reply.tool_calls:
        return "tool_calls"
    return "length" if reply.stop_reason in _TRUNCATED else "stop"
