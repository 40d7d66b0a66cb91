"""Issue triage: each case is one GitHub issue; the model returns label, priority and summary as JSON.

evalkit calls `build_task` for every case and `build_judge` for the judged ones; the checks in
test_triage.py then read the replies.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from evalkit import Case, Message, ModelConfig, Request


class Triage(BaseModel):
    """The reply the prompt asks for."""

    label: Literal["bug", "feature", "docs", "question"]
    priority: Literal["p0", "p1", "p2"]
    summary: str = Field(min_length=1)


class Faithfulness(BaseModel):
    """The judge's verdict on one summary."""

    faithful: bool
    reason: str


JUDGE_PROMPT = (
    "You check the summary of a GitHub issue against the issue itself. "
    "Answer faithful=true only if every statement in the summary is stated in the issue; "
    "name the unsupported statement in reason otherwise."
)


def build_task(case: Case, prompt: str, model: ModelConfig) -> Request:
    return Request(
        model=model.name,
        messages=(Message(role="system", content=prompt), Message(role="user", content=case.issue)),
        response_schema=Triage.model_json_schema(),
        options=model.options,
    )


def build_judge(case: Case, output: str, judge: ModelConfig) -> dict[str, Request]:
    """Judge only the cases marked `judged`; the judge sees the issue and the model's summary."""
    if not case.get("judged", False):
        return {}
    try:
        summary = Triage.model_validate_json(output).summary
    except ValueError:
        summary = output  # the schema check fails this case anyway; the judge sees the raw reply
    return {
        "faithfulness": Request(
            model=judge.name,
            messages=(Message(role="system", content=JUDGE_PROMPT),
                      Message(role="user", content=f"Issue:\n{case.issue}\n\nSummary:\n{summary}")),
            response_schema=Faithfulness.model_json_schema(),
            options=judge.options,
        )
    }
