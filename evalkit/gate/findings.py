"""What the gate found: one value per rule that fired, read by every renderer and by `policy-diff`.

A finding names the rule that produced it, what it does to the decision (block, review, or only warn), the tests
it concerns and the figures it was decided on; its message is rendered from those figures once, by the rule, so
no reader has to re-derive what a sentence meant.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.records.decision import FindingEntry

__all__ = ["Effect", "Finding"]


class Effect(enum.StrEnum):
    """What a finding does to the decision: any block blocks; otherwise any review calls for review; a warning
    never decides."""

    BLOCK = "block"
    REVIEW = "review"
    WARN = "warn"


@dataclass(frozen=True)
class Finding:
    """One rule's finding about a candidate."""

    rule: str
    """The id of the rule that produced it (evalkit.gate.rules), also its `type` in JUnit output."""
    effect: Effect
    message: str
    """One line for people, rendered from `figures`."""
    tests: tuple[str, ...] = ()
    """The test ids the finding is about (a regressed test, a critical test that fails), when it is about tests."""
    figures: Mapping[str, Any] = field(default_factory=dict)
    """The numbers and names the rule decided on (a count and the policy's limit, a metric's value and floor)."""
    subject: str = ""
    """What within the rule the finding is about when a rule can find several things (a metric's name, a case
    id); empty otherwise."""

    @property
    def identity(self) -> tuple[str, Effect, str, tuple[str, ...]]:
        """What tells two findings apart whatever their wording and figures: rule, effect, subject and tests."""
        return self.rule, self.effect, self.subject, self.tests

    def record(self) -> FindingEntry:
        """The finding as `decision.json` holds it (evalkit.records.decision)."""
        return FindingEntry(rule=self.rule, effect=self.effect.value, message=self.message, tests=list(self.tests),
                            figures=dict(self.figures), subject=self.subject or None)
