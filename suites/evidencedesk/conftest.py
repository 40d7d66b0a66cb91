"""Fixtures of the EvidenceDesk checks.

`case`, `task_reply`, `components` and `record_metric` come from evalkit's plugin.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import ValidationError
from retriever import Retrieval
from task import CITATIONS, Answer, retrieval_for

from evalkit import Case


@dataclass(frozen=True)
class Outcome:
    """What the desk does with a rag reply. A reply it cannot read (not JSON, or not the Answer schema, e.g. the
    citations under another name) is shown to the customer as an abstention, as the desk's parser does:
    `detail` is then `invalid_schema` and `cited_ids` None (the citations cannot be read)."""

    status: str
    cited_ids: tuple[str, ...] | None
    detail: str | None = None


def read_reply(text: str) -> Outcome:
    try:
        answer = Answer.model_validate(json.loads(text))
    except (ValueError, ValidationError) as error:
        first = str(error).splitlines()[0] if isinstance(error, json.JSONDecodeError) else _fields(text)
        return Outcome("abstained", None, f"invalid_schema: {first}")
    return Outcome(answer.status, tuple(answer.cited_ids))


def _fields(text: str) -> str:
    try:
        data: Any = json.loads(text)
    except ValueError:
        return "not JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    return f"fields {sorted(data)}; the desk reads status, answer and {CITATIONS}"


@pytest.fixture
def retrieval(case: Case, components: dict[str, Any]) -> Retrieval:
    """The retrieval the case's request was built from (deterministic: recomputed from the run's settings)."""
    return retrieval_for(case, components)


@pytest.fixture
def outcome(task_reply: str) -> Outcome:
    return read_reply(task_reply)
