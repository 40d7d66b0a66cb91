"""An authored gate rule from outside evalkit (for tests): block when more than `max_failed` tests fail on the
candidate, whatever the baseline did. It imports only evalkit's public plugin face."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict

from evalkit.plugins import Compared, Effect, Finding, Rule, RuleSet


class MaxFailed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_failed: int = 0


def max_failed(c: Compared) -> Iterator[Finding]:
    """Block when more of the candidate's tests fail than the policy's `rules.toy_max_failed.max_failed`."""
    limit = MaxFailed.model_validate(c.policy.rules["toy_max_failed"]).max_failed
    failed = sorted(name for name, outcome in c.candidate.outcomes.items() if outcome == "failed")
    if len(failed) > limit:
        yield Finding("toy_max_failed", Effect.BLOCK, f"{len(failed)} failed test(s); the toy rule allows {limit}",
                      tests=tuple(failed))


RULES = RuleSet("toy", (Rule("toy_max_failed", (), max_failed, options=MaxFailed),))
