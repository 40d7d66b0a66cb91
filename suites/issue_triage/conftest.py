"""Fixtures of the issue-triage checks. `case`, `task_reply` and `judge_reply` come from evalkit's plugin."""

import pytest
from task import Triage


@pytest.fixture
def output(task_reply: str) -> Triage:
    """The reply parsed against the schema; a malformed reply errors every check that needs it."""
    return Triage.model_validate_json(task_reply)
