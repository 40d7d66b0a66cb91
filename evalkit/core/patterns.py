"""Regular expressions a user wrote, run on text evalkit did not write: `run.secret_patterns` over every message
(evalkit.live.redact) and a declared check's `regex:` over a model's reply (evalkit.judging.checks).

Both are compiled by the `regex` module and every search runs under a time budget, because a pattern that
backtracks without end on some text (`^(\\w|\\w\\w)*$` on 41 characters) would otherwise hang the run: past its
budget a search raises TimeoutError, and each caller says what that means for its text.
"""

from __future__ import annotations

from typing import Any, Final

import regex  # type: ignore[import-untyped]  # (no stubs shipped)

__all__ = ["PATTERN_BUDGET_S", "PatternError", "budget_s", "compile_pattern"]

PATTERN_BUDGET_S: Final = 0.5
"""How long one search of one user pattern over one text may take, plus a second per million characters of it."""

PatternError = regex.error
"""What compile_pattern raises for a pattern that is not a regular expression."""


def compile_pattern(pattern: str) -> Any:
    """A user's pattern compiled as it will run (the `regex` module, whose searches take a timeout)."""
    return regex.compile(pattern)


def budget_s(text: str) -> float:
    """The time budget of one search over `text`: PATTERN_BUDGET_S, and a second more per million characters."""
    return PATTERN_BUDGET_S + len(text) / 1e6
