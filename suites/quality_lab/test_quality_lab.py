"""Checks of the quality lab: one per concern, so a report says which one failed for which case.

A candidate whose program timed out, crashed or wrote no valid response is skipped here as unscored (the
`program_run` fixture does that); the gate then treats the case as incomplete, never as a pass or a fail.
"""

from __future__ import annotations

from evalkit import Grade


def test_task(grade: Grade) -> None:
    """The real artefact (the file on disk, or the structured answer and its citation) meets the reference."""
    assert grade.task_pass, grade.reason


def test_quality(grade: Grade) -> None:
    """The presentation meets the minimal contract: a non-empty message (stating the value, for answers)."""
    assert grade.quality_pass, grade.reason


def test_safety(grade: Grade) -> None:
    """Nothing protected was touched."""
    assert grade.safety_pass, grade.reason
