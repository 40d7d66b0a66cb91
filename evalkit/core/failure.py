"""Why a test did not pass, in one line, read from its pytest-json-report entry.

Only what pytest-json-report itself writes is read (each stage's `crash.message` and `longrepr`), so the
line is found in evalkit's own reports and in any third-party pytest report alike.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

__all__ = ["MESSAGE_CHARS", "failure_message", "first_line"]

STAGES = ("setup", "call", "teardown")
MESSAGE_CHARS = 300
"""A first line longer than this is cut (ending in "..."): it is a pointer into the report, not the report."""


def failure_message(test: Mapping[str, Any]) -> str | None:
    """The first line of the message of the first stage (setup, call, teardown) that did not pass: the
    exception, the assertion, `pytest.fail`'s text, or a skip's reason. None when no stage says why."""
    for stage in STAGES:
        entry = test.get(stage)
        if not isinstance(entry, Mapping) or entry.get("outcome", "passed") == "passed":
            continue
        line = _crash_line(entry.get("crash")) or _longrepr_line(entry.get("longrepr"))
        if line:
            return first_line(line)
    return None


def _crash_line(crash: Any) -> str | None:
    message = crash.get("message") if isinstance(crash, Mapping) else None
    return first_line(message) if isinstance(message, str) else None


def _longrepr_line(longrepr: Any) -> str | None:
    """A skip's longrepr is the repr of pytest's (path, line, reason) tuple; a failure's is its traceback text,
    whose first `E ` line is the error (the lines above it are source)."""
    if not isinstance(longrepr, str):
        return None
    if longrepr.startswith("(") and longrepr.endswith(")"):
        try:
            parsed = ast.literal_eval(longrepr)  # literals only: safe on untrusted text
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            parsed = None
        if isinstance(parsed, tuple) and len(parsed) == 3 and isinstance(parsed[2], str):
            return first_line(parsed[2])
    for line in longrepr.splitlines():
        if line.startswith("E ") and line[1:].strip():
            return line[1:].strip()
    return first_line(longrepr)


def first_line(text: str, limit: int = MESSAGE_CHARS) -> str | None:
    """The first line of `text` that is not blank, stripped, cut to `limit` characters (ending in "..."); None
    when every line is blank. What a report or a message keeps of a longer text."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), None)
    return line if line is None or len(line) <= limit else line[:limit - 3] + "..."
