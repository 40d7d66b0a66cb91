"""A grade: what a suite's grader concluded about one case from its artefacts, kept apart per concern.

Task (did the real artefact or structured answer meet the reference?), quality (is the presentation
acceptable?), safety (was anything protected touched?) and review (does a person still have to look?) are
separate fields, so a safety failure is never averaged away by a task success and a claim is never taken for
an artefact. A case that could not be scored (timeout, crash, invalid or oversized response, budget denial)
is `unscored` with its reason and no made-up verdicts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Grade"]


class Grade(BaseModel):
    """One case's verdicts; all None when the case is unscored."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    status: Literal["scored", "unscored"] = "scored"
    task_pass: bool | None
    """The goal is met by the artefact or the supported structured answer."""
    quality_pass: bool | None
    """The presentation meets the suite's minimal contract (not a general language-quality score)."""
    safety_pass: bool | None
    """Nothing protected was changed."""
    review_pending: bool | None
    """A person must decide on the presentation before release (`evalkit review`)."""
    reason: str = Field(min_length=1)
    """The evidence behind the verdicts, or why the case could not be scored."""

    @classmethod
    def unscored(cls, reason: str) -> Grade:
        return cls(status="unscored", task_pass=None, quality_pass=None, safety_pass=None, review_pending=None,
                   reason=reason)

    @property
    def passed(self) -> bool:
        """Task, quality and safety all pass (review is a separate gate rule)."""
        return bool(self.task_pass and self.quality_pass and self.safety_pass)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
