"""What a policy change lets through: stored baseline/candidate pairs decided again under an old and a new policy.

`decide()` is pure, so this needs no model and no run; `evalkit policy-diff` finds the pairs
(evalkit.run.stored_pairs) and shows the result (evalkit.render.policy_diff). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalkit.core.policy import Policy
from evalkit.gate.calibration import Calibration
from evalkit.gate.decide import decide
from evalkit.gate.decision import Decision, exit_code
from evalkit.gate.findings import Effect
from evalkit.records.report_reader import RunReport

__all__ = ["Pair", "PairChange", "PolicyChange", "decide_again"]


@dataclass(frozen=True)
class Pair:
    """A stored baseline/candidate pair to decide again."""

    baseline: str
    """How the baseline is named (a path shown relative to the project, or `git:REF:PATH`)."""
    candidate: str
    baseline_report: RunReport
    candidate_report: RunReport
    calibration: Calibration | None = None
    """The judge calibration beside the baseline, for a policy's `min_judge_kappa` (evalkit.gate.calibration)."""

    @property
    def suite(self) -> str:
        return str(self.candidate_report.eval.get("suite") or self.candidate_report.provenance.get("suite") or "-")

    @property
    def policy(self) -> str | None:
        named = self.candidate_report.provenance.get("policy")
        return named if isinstance(named, str) else None


@dataclass(frozen=True)
class PairChange:
    """One pair whose decision, exit code or deciding reasons differ between the two policies."""

    pair: Pair
    before: Decision
    after: Decision
    codes: tuple[int, int]
    """The exit codes under the old and the new policy."""
    gone: list[str]
    """The deciding findings only the old policy gives (review ones marked `review:`)."""
    came: list[str]
    """The deciding findings only the new policy gives."""


@dataclass(frozen=True)
class PolicyChange:
    """The pairs decided again: those that change (changed decisions first), and how many did not."""

    changed_keys: dict[str, tuple[Any, Any]]
    changed: list[PairChange]
    same: int
    pairs: int

    @property
    def flips(self) -> int:
        return sum(1 for row in self.changed if row.before.decision != row.after.decision)


def decide_again(old: Policy, new: Policy, pairs: list[Pair]) -> PolicyChange:
    """Each pair decided under both policies, keeping the pairs whose decision, exit code or reasons change."""
    changed, same = [], 0
    for pair in pairs:
        before, after = decide(old, pair.baseline_report, pair.candidate_report, pair.calibration), \
            decide(new, pair.baseline_report, pair.candidate_report, pair.calibration)
        gone, came = _findings_only_in(before, after), _findings_only_in(after, before)
        codes = int(exit_code(before.decision, old.review_fails)), int(exit_code(after.decision, new.review_fails))
        if before.decision == after.decision and not gone and not came and codes[0] == codes[1]:
            same += 1
            continue
        changed.append(PairChange(pair, before, after, codes, gone, came))
    changed.sort(key=lambda row: row.before.decision == row.after.decision)  # changed decisions first, else as found
    return PolicyChange(_changed_keys(old, new), changed, same, len(pairs))


def _findings_only_in(decision: Decision, other: Decision) -> list[str]:
    """The findings that decide (block or review) under one policy and not the other, told apart by rule, effect,
    subject and tests, never by wording: a finding whose figures differ (the same regressions against another
    limit) is the same finding. Shown sorted, review findings marked `review:`."""
    theirs = {f.identity for f in other.findings}
    return sorted(f"review: {f.message}" if f.effect is Effect.REVIEW else f.message for f in decision.findings
                  if f.effect is not Effect.WARN and f.identity not in theirs)


def _changed_keys(old: Policy, new: Policy) -> dict[str, tuple[Any, Any]]:
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    return {key: (a.get(key), b.get(key)) for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)}
