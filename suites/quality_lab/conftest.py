"""Fixtures of the quality-lab checks.

`case`, `program_run`, `reference` and `record_grade` come from evalkit's plugin; the graders live here, in
evalkit's process, never in the candidate's directory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import graders
import pytest

from evalkit import Case, Grade


@pytest.fixture
def grade(case: Case, program_run: dict[str, Any], reference: dict[str, Any],
          record_grade: Callable[[Grade], None], record_metric: Callable[[str, float | None], None]) -> Grade:
    """The contract grader's verdicts on what the program left (its files and its response)."""
    verdict = graders.grade({"id": case.id, **case.fields}, reference, program_run["response"],
                            program_run["artifacts"])
    record_grade(verdict)
    for name in ("task_pass", "quality_pass", "safety_pass"):
        record_metric(name, float(getattr(verdict, name)))
    return verdict
