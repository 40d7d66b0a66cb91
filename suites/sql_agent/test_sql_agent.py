"""Checks of the SQL agent: the answer it gave, and that it looked before it answered.

A case whose program crashed, timed out or wrote no valid response is unscored (the `program_run` fixture skips it),
never a pass or a fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalkit import Case


def test_answer(case: Case, program_run: dict[str, Any], reference: dict[str, Any],
                record_metric: Callable[[str, float | None], None]) -> None:
    """The answer states the reference value."""
    answer = str(program_run["response"].get("answer") or "")
    correct = reference["answer"].lower() in answer.lower()
    record_metric("answer_correct", float(correct))
    assert correct, f"answered {answer[:200]!r}; expected {reference['answer']!r}"


def test_queried_the_database(program_run: dict[str, Any]) -> None:
    """The agent ran at least one SQL query: an answer from the model's memory is not an answer from the data."""
    tools = [call.get("tool") for call in program_run["response"].get("tools", [])]
    assert "run_sql" in tools, f"tools called: {tools}"
