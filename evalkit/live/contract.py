"""The reply contract: what must hold for any reply, recorded or live, whatever its wording.

Providers pass their server's stop reason through as a lower-case string; each provider's spec maps the
ones it reports onto a small vocabulary. A stop reason not in any spec is a problem, so a provider (or a
hand-edited recording) that says something new is noticed and its spec is extended on purpose.
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Mapping
from types import MappingProxyType

from evalkit.core.provider_specs import provider_specs
from evalkit.records.call import Reply

__all__ = ["BLOCKED_PREFIX", "StopKind", "contract_problems", "known_stop_reasons", "stop_kind", "tool_stop_reasons"]


class StopKind(enum.StrEnum):
    """Why a model stopped, in words that mean the same for every provider."""

    FINISHED = "finished"
    """The model ended its answer itself."""
    TRUNCATED = "truncated"
    """The output hit a token limit; the text may be cut off."""
    FILTERED = "filtered"
    """A safety, recitation or content filter stopped or blocked the output."""
    OTHER = "other"
    """Stopped for a known reason that is none of the above (a tool call, a malformed function call ...)."""


@functools.cache
def known_stop_reasons() -> Mapping[str, StopKind]:
    """Every stop reason an installed provider reports, and its kind, from the providers' specs
    (evalkit.core.provider_specs). Gemini's `finish_reason_unspecified` is deliberately absent."""
    return MappingProxyType({reason: StopKind(kind) for spec in provider_specs().values()
                             for reason, kind in spec.stop_reasons.items()})


@functools.cache
def tool_stop_reasons() -> frozenset[str]:
    """Every stop reason that says the model stopped to call tools (the specs' `tool_stop_reasons`)."""
    return frozenset(reason for spec in provider_specs().values() for reason in spec.tool_stop_reasons)


BLOCKED_PREFIX = "blocked: "
"""Gemini reports a prompt it refused to answer as `blocked: <reason>` (always FILTERED, whatever the reason)."""


def stop_kind(stop_reason: str | None) -> StopKind | None:
    """The kind of a provider's stop reason; None when it is missing or unknown."""
    if stop_reason is None:
        return None
    if stop_reason.startswith(BLOCKED_PREFIX) and stop_reason != BLOCKED_PREFIX:
        return StopKind.FILTERED
    return known_stop_reasons().get(stop_reason)


def contract_problems(reply: Reply) -> list[str]:
    """What is wrong with `reply` as a reply at all (empty when nothing is). Wording is never checked."""
    problems = []
    kind = stop_kind(reply.stop_reason)
    known = known_stop_reasons()
    if reply.stop_reason is None:
        problems.append("no stop_reason: a finished reply cannot be told from a cut-off one")
    elif kind is None:
        problems.append(f"unknown stop_reason {reply.stop_reason!r} "
                        f"(known: {', '.join(sorted(known))}, {BLOCKED_PREFIX}<reason>)")
    if kind is StopKind.FINISHED and not (reply.text or "").strip() and not reply.tool_calls:
        problems.append("a finished reply needs text")  # or tool calls: Gemini and Ollama stop so after calling
    if reply.stop_reason in tool_stop_reasons() and not reply.tool_calls and not _forced_schema_answer(reply.text):
        problems.append(f"stopped for tool use ({reply.stop_reason}) but called no tool")
    return problems


def _forced_schema_answer(text: str | None) -> bool:
    """Whether `text` is a JSON object: the answer of Anthropic's and Bedrock's structured output, which is a tool
    the model is forced to call, so that it stops with `tool_use` and its call's input becomes the text (recordings
    hold such replies). Any other reply that stopped for tool use must carry the calls."""
    if text is None:
        return False
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False
