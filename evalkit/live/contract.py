"""The reply contract: what must hold for any reply, recorded or live, whatever its wording.

Providers pass their server's stop reason through as a lower-case string; STOP_REASONS maps the
ones we know onto a small vocabulary. A stop reason not in it is a problem, so a provider (or a
hand-edited recording) that says something new is noticed and the table is extended on purpose.
"""

from __future__ import annotations

import enum

from evalkit.live.providers.base import Reply

__all__ = ["BLOCKED_PREFIX", "STOP_REASONS", "StopKind", "contract_problems", "stop_kind"]


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


STOP_REASONS: dict[str, StopKind] = {
    # ollama: done_reason; openai: finish_reason; gemini: FinishReason, lower-cased by evalkit's provider
    "stop": StopKind.FINISHED,                     # all three
    "length": StopKind.TRUNCATED,                  # ollama, openai
    "max_tokens": StopKind.TRUNCATED,              # gemini
    "content_filter": StopKind.FILTERED,           # openai
    "safety": StopKind.FILTERED,                   # gemini, from here on
    "recitation": StopKind.FILTERED,
    "blocklist": StopKind.FILTERED,
    "prohibited_content": StopKind.FILTERED,
    "spii": StopKind.FILTERED,
    "image_safety": StopKind.FILTERED,
    "image_prohibited_content": StopKind.FILTERED,
    "image_recitation": StopKind.FILTERED,
    "model_armor": StopKind.FILTERED,
    "tool_calls": StopKind.OTHER,                  # openai
    "function_call": StopKind.OTHER,               # openai (deprecated form of tool_calls)
    "other": StopKind.OTHER,                       # gemini, from here on
    "language": StopKind.OTHER,
    "malformed_function_call": StopKind.OTHER,
    "unexpected_tool_call": StopKind.OTHER,
    "too_many_tool_calls": StopKind.OTHER,
}
"""Every stop reason evalkit knows, and its kind. Gemini's `finish_reason_unspecified` is deliberately absent."""

BLOCKED_PREFIX = "blocked: "
"""Gemini reports a prompt it refused to answer as `blocked: <reason>` (always FILTERED, whatever the reason)."""


def stop_kind(stop_reason: str | None) -> StopKind | None:
    """The kind of a provider's stop reason; None when it is missing or unknown."""
    if stop_reason is None:
        return None
    if stop_reason.startswith(BLOCKED_PREFIX) and stop_reason != BLOCKED_PREFIX:
        return StopKind.FILTERED
    return STOP_REASONS.get(stop_reason)


def contract_problems(reply: Reply) -> list[str]:
    """What is wrong with `reply` as a reply at all (empty when nothing is). Wording is never checked."""
    problems = []
    kind = stop_kind(reply.stop_reason)
    if reply.stop_reason is None:
        problems.append("no stop_reason: a finished reply cannot be told from a cut-off one")
    elif kind is None:
        problems.append(f"unknown stop_reason {reply.stop_reason!r} "
                        f"(known: {', '.join(sorted(STOP_REASONS))}, {BLOCKED_PREFIX}<reason>)")
    if kind is StopKind.FINISHED and not (reply.text or "").strip():
        problems.append("a finished reply needs text")
    return problems
